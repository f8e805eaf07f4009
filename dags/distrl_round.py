"""``distrl_round``: one synchronous (DigiRL-style) training round per DAG run.

    start_farm (setup) -> bootstrap -> plan_shards -> collect[worker] (mapped, pool "devices")
      -> label -> version -> train -> evaluate -> register -> plan_next_round
      -> trigger_next_round;  evaluate -> stop_farm (teardown)

Rounds: a static DAG cannot loop, and mapping rounds as sequential task groups would fix their
number at parse time. So each run processes the round in its ``round`` Param (from 1, as the
CLI and dvc.yaml number them; round 0 is the SFT bootstrap) and, while ``round < rounds``, its
last task triggers a new ``distrl_round`` run with ``round + 1`` (same Params).
``max_active_runs=1`` queues that run until this one (teardown included) has finished, so two
rounds never share the farm. Re-running a round is safe: every stage is idempotent.

The file is thin on purpose: each task is one call into ``distrl_tasks.stages.<name>``, stage
modules are imported inside the tasks, nothing runs at parse time, and XCom carries only the
stages' small manifests (paths, versions, metrics). The config is ``params.yaml`` of the project
root (``$DISTRL_WORKDIR`` or this file's repository) with the run's Params applied.

Queues (for a CeleryExecutor spread over machines): ``devices`` for the farm and the tasks that
drive devices (bootstrap's expert demos, collect, evaluate), ``gpu`` for training, ``default``
otherwise. Collect also takes a slot of the ``devices`` pool per worker shard, so the pool size
caps how many shards collect at once.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import Param, dag, get_current_context, setup, task, teardown

from distrl_tasks.airflow_params import (
    PARAM_SPECS,
    gemini_api_key,
    load_run_config,
    next_round_conf,
    next_run_id,
    workdir,
)

DAG_ID = "distrl_round"
REPO_ROOT = Path(__file__).resolve().parents[1]
DEVICES = "devices"  # queue of the machines attached to devices, and the device-capacity pool
GPU = "gpu"  # queue of the training machines
DEFAULT_ARGS: dict[str, Any] = {
    "retries": 2,  # device hiccups and preempted workers are transient; stages are idempotent
    "retry_delay": timedelta(seconds=10),
    "queue": "default",
}


def _config() -> tuple[Any, Path, dict[str, Any]]:
    """The run's config, project root and Params (called inside tasks only)."""
    params = dict(get_current_context()["params"])
    root = workdir(REPO_ROOT)
    return load_run_config(params, root), root, params


@dag(
    dag_id=DAG_ID,
    schedule=None,
    max_active_runs=1,
    catchup=False,
    default_args=DEFAULT_ARGS,
    params={name: Param(**spec) for name, spec in PARAM_SPECS.items()},
    tags=["distrl"],
    doc_md=__doc__,
)
def distrl_round() -> None:
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

    @task
    def version(labeled: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import version as stage

        cfg, root, params = _config()
        return stage.run(cfg, round=params["round"], workdir=root)

    @task(queue=GPU)
    def train(versioned: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import train as stage

        cfg, root, params = _config()
        return stage.run(
            cfg, round=params["round"], data_version=versioned["data_version"], workdir=root
        )

    @task(queue=DEVICES)
    def evaluate(trained: dict[str, Any], farm: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import evaluate as stage

        cfg, root, params = _config()
        return stage.run(
            cfg,
            round=params["round"],
            checkpoint_dir=trained["checkpoint_dir"],
            workdir=root,
            adb_address=(farm["host"], farm["port"]),  # the round's farm, still up
        )

    @task
    def register(
        trained: dict[str, Any], versioned: dict[str, Any], evaluation: dict[str, Any]
    ) -> dict[str, Any]:
        from distrl_tasks.stages import register as stage

        cfg, root, params = _config()
        return stage.run(
            cfg,
            round=params["round"],
            checkpoint_dir=trained["checkpoint_dir"],
            data_version=versioned["data_version"],
            evaluation=evaluation,
            workdir=root,
        )

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
            run_id = next_run_id(DAG_ID, ctx["run_id"], conf["round"])
            ctx["ti"].xcom_push(key="run_id", value=run_id)
        return conf

    farm = start_farm()
    booted = bootstrap()
    collected = collect.partial(farm=farm).expand(worker=plan_shards())
    farm >> booted >> collected
    versioned = version(label(collected))
    trained = train(versioned)
    evaluation = evaluate(trained, farm)
    evaluation >> stop_farm(farm)
    conf = plan_next_round()
    register(trained, versioned, evaluation) >> conf
    TriggerDagRunOperator(
        task_id="trigger_next_round",
        trigger_dag_id=DAG_ID,
        trigger_run_id="{{ ti.xcom_pull(task_ids='plan_next_round', key='run_id') }}",
        skip_when_already_exists=True,  # a retry finds the run it already created
        conf=conf,
    )


distrl_round()
