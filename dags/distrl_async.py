"""Asynchronous (DistRL) mode: the ``distrl_actor`` and ``distrl_learner`` DAGs.

``distrl_actor`` collects one round per run with whatever policy carries the registry's
"behavior" alias at that moment, labels and versions it, and emits the ``distrl_trajectories``
Asset (event extra: round, data_version, the run's Params). It runs back to back: ``schedule=None``
and its last task re-triggers it with ``round + 1`` while ``round < rounds``
(``max_active_runs=1`` queues the next run until this one, farm teardown included, is done).

``distrl_learner`` is scheduled on that Asset. Each run takes the newest event it was triggered by
(events that piled up while it was busy are covered too: training reads the replay window of the
newest rounds, and data from older policies is corrected by importance weights), trains, evaluates
and registers the checkpoint, which moves "behavior" for the actor's next round. Actor and learner
overlap: collection of round r+1 runs while round r trains.

Same rules as ``distrl_round``: thin tasks (one stage call each), imports inside tasks, only small
manifests through XCom, config = ``params.yaml`` + the run's Params.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import Asset, Param, dag, get_current_context, setup, task, teardown

from distrl_tasks.airflow_params import (
    PARAM_SPECS,
    gemini_api_key,
    load_run_config,
    newest_trajectories,
    next_round_conf,
    next_run_id,
    workdir,
)

ACTOR_ID = "distrl_actor"
LEARNER_ID = "distrl_learner"
TRAJECTORIES = Asset("distrl_trajectories")  # one event per labeled, versioned round of data
REPO_ROOT = Path(__file__).resolve().parents[1]
DEVICES = "devices"  # queue of the machines attached to devices, and the device-capacity pool
GPU = "gpu"  # queue of the training machines
DEFAULT_ARGS: dict[str, Any] = {
    "retries": 2,  # device hiccups and preempted workers are transient; stages are idempotent
    "retry_delay": timedelta(seconds=10),
    "queue": "default",
}


def _config(params: dict[str, Any] | None = None) -> tuple[Any, Path, dict[str, Any]]:
    """The config, project root and Params (the run's, unless ``params`` is given)."""
    if params is None:
        params = dict(get_current_context()["params"])
    root = workdir(REPO_ROOT)
    return load_run_config(params, root), root, params


@dag(
    dag_id=ACTOR_ID,
    schedule=None,
    max_active_runs=1,
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={name: Param(**spec) for name, spec in PARAM_SPECS.items()},
    tags=["distrl"],
    doc_md=__doc__,
)
def distrl_actor() -> None:
    @setup
    @task(queue=DEVICES)
    def start_farm() -> dict[str, Any]:
        from distrl_tasks.stages import farm

        cfg, root, _ = _config()
        return farm.start(cfg, workdir=root)

    @task(queue=DEVICES)
    def bootstrap() -> dict[str, Any]:
        from distrl_tasks.stages import bootstrap as stage

        cfg, root, _ = _config()
        return stage.run(cfg, workdir=root)

    @task
    def plan_shards() -> list[int]:
        cfg, _, _ = _config()
        return list(range(cfg.orchestration.workers))

    @task(queue=DEVICES, pool=DEVICES, map_index_template="{{ shard }}")
    def collect(worker: int, farm: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import collect as stage

        cfg, root, params = _config()
        get_current_context()["shard"] = f"worker {worker}"  # type: ignore[typeddict-unknown-key]
        return stage.run(
            cfg,
            round=params["round"],
            worker=worker,
            workers=cfg.orchestration.workers,
            workdir=root,
            adb_host=farm.get("host"),
            adb_port=farm.get("port"),
        )

    @task  # on the simulator the oracle labeled at collection; Gemini needs no device
    def label(collected: list[dict[str, Any]]) -> dict[str, Any]:
        from distrl_tasks.stages import label as stage

        cfg, root, params = _config()
        return stage.run(cfg, round=params["round"], workdir=root, api_key=gemini_api_key(cfg))

    @task(outlets=[TRAJECTORIES])
    def version(labeled: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import version as stage

        cfg, root, params = _config()
        manifest = stage.run(cfg, round=params["round"], workdir=root)
        # what the learner needs to train on this round, carried by the Asset event
        get_current_context()["outlet_events"][TRAJECTORIES].extra = {
            "round": params["round"],
            "data_version": manifest["data_version"],
            "params": params,
        }
        return manifest

    @teardown
    @task(queue=DEVICES)
    def stop_farm(farm: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import farm as stage

        cfg, root, _ = _config()
        return stage.stop(cfg, workdir=root)

    @task.short_circuit
    def plan_next_round() -> dict[str, Any] | None:
        """The next run's conf (and run id, as XCom ``run_id``); None skips the trigger."""
        cfg, _, params = _config()
        conf = next_round_conf(params, cfg.orchestration.rounds)
        if conf is not None:
            ctx = get_current_context()
            run_id = next_run_id(ACTOR_ID, ctx["run_id"], conf["round"])
            ctx["ti"].xcom_push(key="run_id", value=run_id)
        return conf

    farm = start_farm()
    booted = bootstrap()
    collected = collect.partial(farm=farm).expand(worker=plan_shards())
    farm >> booted >> collected
    labeled = label(collected)
    labeled >> stop_farm(farm)
    conf = plan_next_round()
    version(labeled) >> conf
    TriggerDagRunOperator(
        task_id="trigger_next_round",
        trigger_dag_id=ACTOR_ID,
        trigger_run_id="{{ ti.xcom_pull(task_ids='plan_next_round', key='run_id') }}",
        skip_when_already_exists=True,  # a retry finds the run it already created
        conf=conf,
    )


@dag(
    dag_id=LEARNER_ID,
    schedule=[TRAJECTORIES],
    max_active_runs=1,
    catchup=False,
    default_args=DEFAULT_ARGS,
    tags=["distrl"],
    doc_md=__doc__,
)
def distrl_learner() -> None:
    @task
    def select_data() -> dict[str, Any]:
        """Round, data version and actor Params of the newest trajectories event."""
        events = get_current_context()["triggering_asset_events"].get(TRAJECTORIES, [])
        return newest_trajectories([e.extra for e in events])

    @task(queue=GPU)
    def train(data: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import train as stage

        cfg, root, _ = _config(data["params"])
        return stage.run(cfg, round=data["round"], data_version=data["data_version"], workdir=root)

    @task(queue=DEVICES)
    def evaluate(data: dict[str, Any], trained: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import evaluate as stage

        cfg, root, _ = _config(data["params"])
        return stage.run(
            cfg, round=data["round"], checkpoint_dir=trained["checkpoint_dir"], workdir=root
        )

    @task
    def register(
        data: dict[str, Any], trained: dict[str, Any], evaluation: dict[str, Any]
    ) -> dict[str, Any]:
        from distrl_tasks.stages import register as stage

        cfg, root, _ = _config(data["params"])
        return stage.run(
            cfg,
            round=data["round"],
            checkpoint_dir=trained["checkpoint_dir"],
            data_version=data["data_version"],
            evaluation=evaluation,
            workdir=root,
        )

    data = select_data()
    trained = train(data)
    register(data, trained, evaluate(data, trained))


distrl_actor()
distrl_learner()
