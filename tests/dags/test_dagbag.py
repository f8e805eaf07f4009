"""The DAG files parse cleanly and have the intended graph (no database, no stages needed)."""

from __future__ import annotations

import copy
import itertools
import subprocess
import sys
from datetime import timedelta

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import Asset
from airflow.sdk.definitions.param import ParamValidationError

from distrl_tasks.orchestration.airflow_params import PARAM_SPECS

from .conftest import AIRFLOW_ENV, DAGS_FOLDER, REPO_ROOT

DAG_IDS = {"distrl_round", "distrl_actor", "distrl_learner"}


@pytest.fixture(scope="module")
def dagbag() -> DagBag:
    return DagBag(dag_folder=str(DAGS_FOLDER))


def _upstream(dag, task_id: str) -> set[str]:
    return set(dag.get_task(task_id).upstream_task_ids)


def test_all_dags_import_without_errors(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == DAG_IDS


def test_parsing_does_no_work_and_imports_no_stage(tmp_path) -> None:
    # a fresh interpreter: the DAG files may import only the light Params module at parse time
    code = (
        "import sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(DAGS_FOLDER)!r})\n"
        "assert not bag.import_errors, bag.import_errors\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'mlflow', 'dvc', "
        "'adbutils', 'pyarrow') or m.startswith('distrl_tasks.stages')]\n"
        "print(sorted(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**AIRFLOW_ENV, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert not (tmp_path / "runs").exists()  # nothing written relative to the cwd either
    assert not (REPO_ROOT / "dags" / "runs").exists()


def test_round_dag_graph(dagbag: DagBag) -> None:
    dag = dagbag.dags["distrl_round"]
    assert set(dag.task_ids) == {
        "start_farm",
        "bootstrap",
        "plan_shards",
        "collect",
        "label",
        "version",
        "train",
        "evaluate",
        "register",
        "stop_farm",
        "plan_next_round",
        "trigger_next_round",
    }
    expected_upstream = {
        "start_farm": set(),
        "plan_shards": set(),
        "bootstrap": {"start_farm"},
        "collect": {"start_farm", "bootstrap", "plan_shards"},
        "label": {"collect"},
        "version": {"label"},
        "train": {"version"},
        "evaluate": {"version", "train", "start_farm"},  # the round comes with the data
        "stop_farm": {"start_farm", "evaluate"},
        "register": {"train", "version", "evaluate"},
        "plan_next_round": {"register"},
        "trigger_next_round": {"plan_next_round"},
    }
    for task_id, upstream in expected_upstream.items():
        assert _upstream(dag, task_id) == upstream, task_id
    assert dag.schedule is None
    assert dag.max_active_runs == 1


def test_round_dag_setup_teardown_pool_queues_and_mapping(dagbag: DagBag) -> None:
    dag = dagbag.dags["distrl_round"]
    start, stop = dag.get_task("start_farm"), dag.get_task("stop_farm")
    assert start.is_setup and not start.is_teardown
    assert stop.is_teardown and not stop.is_setup
    assert [t.task_id for t in dag.tasks if t.is_setup or t.is_teardown] == [
        "start_farm",
        "stop_farm",
    ]
    collect = dag.get_task("collect")
    assert type(collect).__name__ == "DecoratedMappedOperator"  # .expand() per worker shard
    expanded = collect._get_specified_expand_input().value
    assert set(expanded) == {"worker"}
    assert expanded["worker"].operator.task_id == "plan_shards"
    assert set(collect.partial_kwargs["op_kwargs"]) == {"farm"}
    assert collect.pool == "devices"
    assert {t.task_id for t in dag.tasks if t.pool == "devices"} == {"collect"}
    queues = {t.task_id: t.queue for t in dag.tasks}
    assert {k for k, q in queues.items() if q == "devices"} == {
        "start_farm",
        "bootstrap",
        "collect",
        "evaluate",
        "stop_farm",
    }
    assert {k for k, q in queues.items() if q == "gpu"} == {"train"}
    assert set(queues.values()) == {"devices", "gpu", "default"}


@pytest.mark.parametrize("dag_id", sorted(DAG_IDS))
def test_every_task_retries_quickly(dagbag: DagBag, dag_id: str) -> None:
    for t in dagbag.dags[dag_id].tasks:
        assert t.retries >= 1, t.task_id
        assert timedelta(0) < t.retry_delay <= timedelta(minutes=1), t.task_id


def test_round_dag_params_validate_with_json_schema(dagbag: DagBag) -> None:
    params = dagbag.dags["distrl_round"].params
    assert set(params) == set(PARAM_SPECS)
    # the defaults are valid: `airflow dags test distrl_round` needs no conf
    resolved = params.validate()
    assert resolved["round"] is None  # the mode's first round, resolved inside the tasks
    assert resolved["algorithm"] is None and resolved["overrides"] == []
    for name, bad in [
        ("algorithm", "ppo"),
        ("workers", 0),
        ("devices_per_worker", "four"),
        ("episodes_per_device", -1),
        ("task_set", "shopping"),
        ("device_kind", "phone"),
        ("round", -1),
        ("round", "one"),
        ("overrides", ["no equals sign"]),
    ]:
        trial = copy.deepcopy(params)
        trial.get_param(name).value = bad  # set unchecked, then validate as a trigger does
        with pytest.raises(ParamValidationError, match=name):
            trial.validate()
    trial = copy.deepcopy(params)
    trial.update({"algorithm": "digirl", "workers": 2, "overrides": ["sim.seed=3"]})
    assert trial.validate()["algorithm"] == "digirl"


def test_actor_dag_graph_emits_the_trajectories_asset(dagbag: DagBag) -> None:
    dag = dagbag.dags["distrl_actor"]
    assert dag.schedule is None and dag.max_active_runs == 1
    assert set(dag.task_ids) == {
        "start_farm",
        "bootstrap",
        "plan_shards",
        "collect",
        "label",
        "version",
        "stop_farm",
        "plan_next_round",
        "trigger_next_round",
    }
    assert _upstream(dag, "stop_farm") == {"start_farm", "label"}
    assert _upstream(dag, "plan_next_round") == {"version"}
    assert dag.get_task("start_farm").is_setup and dag.get_task("stop_farm").is_teardown
    assert dag.get_task("collect").pool == "devices"
    assert dag.get_task("trigger_next_round").trigger_dag_id == "distrl_actor"
    outlets = {t.task_id: t.outlets for t in dag.tasks if t.outlets}
    assert outlets == {"version": [Asset("distrl_trajectories")]}


def test_learner_dag_is_scheduled_on_the_trajectories_asset(dagbag: DagBag) -> None:
    dag = dagbag.dags["distrl_learner"]
    assert dag.max_active_runs == 1
    assert dag.timetable.asset_condition.objects == (Asset("distrl_trajectories"),)
    assert _upstream(dag, "train") == {"select_data"}
    assert _upstream(dag, "evaluate") == {"select_data", "train"}
    assert _upstream(dag, "register") == {"select_data", "train", "evaluate"}
    assert dag.get_task("train").queue == "gpu"


def test_the_dags_and_dvc_yaml_follow_the_one_learning_chain(dagbag: DagBag) -> None:
    import yaml

    from distrl_tasks.orchestration.round_chain import LEARN_CHAIN

    pairs = list(itertools.pairwise(LEARN_CHAIN))
    synchronous = dagbag.dags["distrl_round"]
    for before, after in pairs:
        assert before in _upstream(synchronous, after), (before, after)
    # the asynchronous pair splits the chain: the actor versions, the learner trains on it
    actor, learner = dagbag.dags["distrl_actor"], dagbag.dags["distrl_learner"]
    for dag in (actor, learner):
        present = [s for s in LEARN_CHAIN if s in dag.task_ids]
        for before, after in itertools.pairwise(present):
            assert before in _upstream(dag, after), (dag.dag_id, before, after)
    assert [s for s in LEARN_CHAIN if s in actor.task_ids] == ["label", "version"]
    assert [s for s in LEARN_CHAIN if s in learner.task_ids] == ["train", "evaluate", "register"]
    # dvc.yaml: each stage depends on the previous one's output (DVC versions the data itself)
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]

    def outputs(name: str) -> set[str]:
        return {next(iter(o)) if isinstance(o, dict) else o for o in stages[name]["outs"]}

    chain = [s for s in LEARN_CHAIN if s != "version"]
    for before, after in itertools.pairwise(chain):
        assert outputs(before) & set(stages[after]["deps"]), (before, after)
