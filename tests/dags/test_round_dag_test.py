"""``dag.test()`` of ``distrl_round`` against a migrated SQLite database.

The chaining test marks the stage tasks successful (no stage runs) to check, quickly, that the
last task of round 0 triggers a ``distrl_round`` run for round 1 with the same Params. The tiny
round runs every real stage on the simulator farm.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.models.dagrun import DagRun
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState, TaskInstanceState
from fakes.projects import TINY_PARAMS, register_initial_policy

from .conftest import DAGS_FOLDER

STAGE_TASKS = (
    "start_farm|bootstrap|collect|label|version|train|evaluate|register|stop_farm"  # regex
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway project root with a tiny params.yaml; the DAG tasks run against it."""
    (tmp_path / "params.yaml").write_text(TINY_PARAMS)
    monkeypatch.setenv("DISTRL_WORKDIR", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return tmp_path


@pytest.fixture
def registered_policy(project: Path) -> int:
    """A fresh tiny policy registered as "behavior", so bootstrap's SFT (minutes) is skipped."""
    return register_initial_policy(project)


@pytest.fixture
def round_dag(airflow_db: Path):
    # parsed afresh per test: a test run's conf must not leak into the next through the object
    return DagBag(dag_folder=str(DAGS_FOLDER)).dags["distrl_round"]


def _states(dr: DagRun) -> dict[tuple[str, int], str]:
    with create_session() as session:
        return {
            (ti.task_id, ti.map_index): ti.state
            for ti in DagRun.find(run_id=dr.run_id, dag_id=dr.dag_id, session=session)[
                0
            ].get_task_instances(session=session)
        }


def _xcom(dr: DagRun, task_id: str, key: str = "return_value", map_index: int = -1):
    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter_by(
                dag_id=dr.dag_id,
                run_id=dr.run_id,
                task_id=task_id,
                key=key,
                map_index=map_index,
            )
            .one()
        )
        return XComModel.deserialize_value(row)


def test_a_round_triggers_the_next_one_with_the_same_params(round_dag, project: Path) -> None:
    conf = {"round": 1, "rounds": 2, "algorithm": "digirl", "overrides": ["sim.seed=3"]}
    dr = round_dag.test(run_conf=conf, mark_success_pattern=STAGE_TASKS)
    assert dr.state == DagRunState.SUCCESS
    states = _states(dr)
    assert states[("plan_shards", -1)] == TaskInstanceState.SUCCESS
    assert states[("trigger_next_round", -1)] == TaskInstanceState.SUCCESS
    expected_conf = {**conf, "round": 2}
    assert {k: v for k, v in _xcom(dr, "plan_next_round").items() if k in conf} == expected_conf
    next_id = _xcom(dr, "plan_next_round", key="run_id")
    assert next_id.startswith("distrl_round__round2__")
    with create_session() as session:
        (nxt,) = DagRun.find(dag_id="distrl_round", run_id=next_id, session=session)
        assert {k: v for k, v in nxt.conf.items() if k in conf} == expected_conf


def test_the_last_round_triggers_nothing(round_dag, project: Path) -> None:
    dr = round_dag.test(run_conf={"round": 2, "rounds": 2}, mark_success_pattern=STAGE_TASKS)
    assert dr.state == DagRunState.SUCCESS
    states = _states(dr)
    assert states[("plan_next_round", -1)] == TaskInstanceState.SUCCESS
    assert states[("trigger_next_round", -1)] == TaskInstanceState.SKIPPED


def test_an_empty_round_param_starts_off2on_with_the_offline_phase(
    round_dag, project: Path
) -> None:
    conf = {"rounds": 2, "overrides": ["algorithm.mode=off2on"]}
    dr = round_dag.test(run_conf=conf, mark_success_pattern=STAGE_TASKS)
    assert dr.state == DagRunState.SUCCESS
    assert _xcom(dr, "plan_next_round")["round"] == 1  # this run was round 0
    assert _xcom(dr, "plan_next_round", key="run_id").startswith("distrl_round__round1__")


def test_offline_mode_ends_the_chain_after_the_offline_phase(round_dag, project: Path) -> None:
    conf = {"rounds": 3, "overrides": ["algorithm.mode=offline"]}
    dr = round_dag.test(run_conf=conf, mark_success_pattern=STAGE_TASKS)
    assert dr.state == DagRunState.SUCCESS
    assert _states(dr)[("trigger_next_round", -1)] == TaskInstanceState.SKIPPED


@pytest.mark.slow
def test_dag_test_runs_a_tiny_round_on_the_simulator(
    round_dag, project: Path, registered_policy: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="distrl_tasks.progress")
    dr = round_dag.test(run_conf={"round": 1})
    states = _states(dr)
    assert dr.state == DagRunState.SUCCESS, states
    assert all(s in ("success", "skipped") for s in states.values()), states
    assert states[("collect", 0)] == TaskInstanceState.SUCCESS  # one mapped worker shard
    assert ("collect", 1) not in states
    assert _xcom(dr, "bootstrap")["skipped"] is True
    farm = _xcom(dr, "start_farm")
    assert len(farm["serials"]) == 2
    assert _xcom(dr, "stop_farm") == {"stopped": True}
    assert not (project / "runs" / "farm.json").exists()
    collected = _xcom(dr, "collect", map_index=0)
    assert collected["trajectories"] == 2  # 2 devices x 1 episode
    assert all(Path(p).is_file() for p in collected["shards"])
    trained = _xcom(dr, "train")
    assert Path(trained["checkpoint_dir"]).is_dir()
    evaluation = _xcom(dr, "evaluate")
    assert evaluation["episodes"] == 2 and 0.0 <= evaluation["success_rate"] <= 1.0
    # the long tasks wrote their progress to the task log (the CLI draws bars instead)
    progress = [r.getMessage() for r in caplog.records if r.name == "distrl_tasks.progress"]
    for bar in ("collect", "train r1", "evaluate"):
        assert any(line.startswith(bar) for line in progress), (bar, progress[:10])
    # the evaluation's drawn episodes, on disk and as images of its MLflow run
    images = [Path(p) for p in evaluation["episode_images"]]
    assert len(images) == 2 and all(p.suffix == ".png" and p.is_file() for p in images)
    from distrl_tasks.config import load_config
    from distrl_tasks.tracking.runs import STAGE_TAG, Tracker

    cfg = load_config(project / "params.yaml")
    tracker = Tracker.from_config(cfg, root=project)
    experiment = tracker.client.get_experiment_by_name(cfg.tracking.experiment)
    (run,) = tracker.client.search_runs(
        [experiment.experiment_id], f"tags.`{STAGE_TAG}` = 'evaluate'"
    )
    logged = tracker.client.list_artifacts(run.info.run_id, "episodes")
    assert sorted(Path(a.path).name for a in logged) == sorted(p.name for p in images)
    assert run.data.metrics["eval/success_rate"] == evaluation["success_rate"]
    registered = _xcom(dr, "register")
    assert registered["behavior"] == registered["version"] == registered_policy + 1
    assert states[("trigger_next_round", -1)] == TaskInstanceState.SKIPPED  # rounds = 1


@pytest.mark.slow
def test_dag_test_runs_a_round_labeled_by_gemini(
    round_dag, project: Path, registered_policy: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real google-genai client against the fake server: a 429 and a 503 first (retried)
    from fakes.gemini_server import FakeGemini, rate_limited, server_error

    from distrl_tasks.config import load_config
    from distrl_tasks.data.shards import read_shards
    from distrl_tasks.stages import common

    key = "dag-gemini-key"
    monkeypatch.setenv("GEMINI_API_KEY", key)
    with FakeGemini(api_key=key) as fake:  # every verdict a success
        fake.script(rate_limited(0.2), server_error(503))
        overrides = [
            "evaluator.kind=gemini",
            f"evaluator.base_url={fake.base_url}",
            f"evaluator.cache_dir={project / 'gemini_cache'}",
        ]
        dr = round_dag.test(run_conf={"round": 1, "overrides": overrides})
        served = len(fake.requests)
    states = _states(dr)
    assert dr.state == DagRunState.SUCCESS, states
    label = _xcom(dr, "label")
    assert label["labeled"] == 2 and label["successes"] == 2
    assert label["agreement"]["with"] == "oracle"
    assert label["agreement"]["rollout/agreement_compared"] == 2
    assert served >= 2 + 2
    cfg = load_config(project / "params.yaml")
    finals = [r for r in read_shards(common.labeled_dir(cfg, project)).to_pylist() if r["done"]]
    assert len(finals) == 2 and all(r["evaluator"].startswith("gemini") for r in finals)
    registered = _xcom(dr, "register")
    assert registered["version"] == registered_policy + 1


def test_a_missing_gemini_key_fails_start_farm_once(
    round_dag, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    dr = round_dag.test(run_conf={"round": 1, "overrides": ["evaluator.kind=gemini"]})
    assert dr.state == DagRunState.FAILED
    states = _states(dr)
    assert states[("start_farm", -1)] == TaskInstanceState.FAILED
    assert states[("bootstrap", -1)] == TaskInstanceState.UPSTREAM_FAILED
    with create_session() as session:
        (run,) = DagRun.find(dag_id=dr.dag_id, run_id=dr.run_id, session=session)
        ti = run.get_task_instance("start_farm", session=session)
        assert ti.try_number == 1  # not retried: a retry cannot supply a key


def test_a_retired_gemini_model_fails_start_farm_once(
    round_dag, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes.gemini_server import FakeGemini

    monkeypatch.setenv("GEMINI_API_KEY", "dag-gemini-key")
    with FakeGemini(api_key="dag-gemini-key") as fake:
        overrides = [
            "evaluator.kind=gemini",
            f"evaluator.base_url={fake.base_url}",
            "evaluator.model=gemini-1.5-pro",
        ]
        dr = round_dag.test(run_conf={"round": 1, "overrides": overrides})
    assert dr.state == DagRunState.FAILED
    assert _states(dr)[("start_farm", -1)] == TaskInstanceState.FAILED
    with create_session() as session:
        (run,) = DagRun.find(dag_id=dr.dag_id, run_id=dr.run_id, session=session)
        ti = run.get_task_instance("start_farm", session=session)
        assert ti.try_number == 1  # not retried: a retry cannot bring a retired model back
    assert fake.requests == []  # nothing was collected, so nothing was judged
