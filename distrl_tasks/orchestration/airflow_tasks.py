"""The tasks the DAGs share, as factories: collection (``distrl_round``, ``distrl_actor``) and
learning (``distrl_round``, ``distrl_learner``).

A DAG file calls these inside its ``@dag`` function; each factory defines its TaskFlow tasks
there (same task ids in both DAGs) and wires them. Every task is still one call into a stage of
:mod:`distrl_tasks.stages`, imported inside the task, so nothing heavy runs at parse time. The
config of a task is ``params.yaml`` of the project root (``$DISTRL_WORKDIR`` or the DAG file's
repository) with the run's Params applied.

Queues (for a CeleryExecutor spread over machines): :data:`DEVICES` for the farm and the tasks
that drive devices (bootstrap's expert demos, collect, evaluate), :data:`GPU` for training,
``default`` otherwise. Collect also takes a slot of the ``devices`` pool per worker shard, so the
pool size caps how many shards collect at once.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import get_current_context, setup, task, teardown
from airflow.sdk.exceptions import AirflowFailException

from distrl_tasks.config import Config, ConfigError
from distrl_tasks.evaluators.evaluator import MissingApiKeyError
from distrl_tasks.evaluators.preflight import check_labeling
from distrl_tasks.orchestration.airflow_params import (
    gemini_api_key,
    load_run_config,
    next_round_conf,
    next_run_id,
    resolve_round,
    workdir,
)
from distrl_tasks.protocol.progress import progress_to_log

DEVICES = "devices"  # queue of the machines attached to devices, and the device-capacity pool
GPU = "gpu"  # queue of the training machines
DEFAULT_ARGS: dict[str, Any] = {
    "retries": 2,  # device hiccups and preempted workers are transient; stages are idempotent
    "retry_delay": timedelta(seconds=10),
    "queue": "default",
}


def run_config(
    repo_root: Path, params: dict[str, Any] | None = None
) -> tuple[Config, Path, dict[str, Any]]:
    """The config, project root and Params (the running task's, unless ``params`` is given),
    with ``round`` resolved (an empty one is the mode's first round).

    Called inside tasks only: it reads the task's context and ``params.yaml``.

    Raises:
        AirflowFailException: a bad key or value in the run's conf or ``params.yaml``: the task
            fails at once, without retries (a retry cannot fix a configuration).
    """
    if params is None:
        params = dict(get_current_context()["params"])
    root = workdir(repo_root)
    try:
        cfg = load_run_config(params, root)
        return cfg, root, resolve_round(params, cfg)
    except ValueError as exc:  # ConfigError is a ValueError
        raise AirflowFailException(f"bad configuration, not retried: {exc}") from exc


def collection(repo_root: Path) -> tuple[Any, Any]:
    """start_farm (setup) -> bootstrap -> plan_shards -> collect[worker] -> label.

    Returns:
        The ``start_farm`` and ``label`` task outputs (the farm record, the label manifest).
    """

    @setup
    @task(queue=DEVICES)
    def start_farm() -> dict[str, Any]:
        """Checks what a retry cannot fix (the conf, the labeling key), then starts the farm."""
        from distrl_tasks.stages import farm  # inside the task: parsing the DAG imports no stage

        cfg, root, _ = run_config(repo_root)
        try:  # a missing key or a retired model: a retry cannot fix either
            check_labeling(cfg, gemini_api_key(cfg))
        except (MissingApiKeyError, ConfigError) as exc:
            raise AirflowFailException(str(exc)) from exc
        return farm.start(cfg, workdir=root)

    @task(queue=DEVICES)
    def bootstrap() -> dict[str, Any]:
        from distrl_tasks.stages import (
            bootstrap as stage,  # lazy: torch + mlflow
        )

        cfg, root, _ = run_config(repo_root)
        with progress_to_log():
            return stage.run(cfg, workdir=root)

    @task
    def plan_shards() -> list[int]:
        cfg, _, _ = run_config(repo_root)
        return list(range(cfg.orchestration.workers))

    @task(queue=DEVICES, pool=DEVICES, map_index_template="{{ shard }}")
    def collect(worker: int, farm: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import (
            collect as stage,  # lazy: torch + pyarrow
        )

        cfg, root, params = run_config(repo_root)
        get_current_context()["shard"] = f"worker {worker}"  # type: ignore[typeddict-unknown-key]
        request = stage.CollectRequest(
            round=params["round"],
            worker=worker,
            workers=cfg.orchestration.workers,
            adb_address=(farm["host"], farm["port"]) if farm.get("host") else None,
        )
        with progress_to_log():
            return stage.run(cfg, request, workdir=root)

    @task  # on the simulator the oracle labeled at collection; Gemini needs no device
    def label(collected: list[dict[str, Any]]) -> dict[str, Any]:
        from distrl_tasks.stages import label as stage  # lazy: pyarrow + pandas

        cfg, root, params = run_config(repo_root)
        with progress_to_log():
            return stage.run(cfg, round=params["round"], workdir=root, api_key=gemini_api_key(cfg))

    farm = start_farm()
    collected = collect.partial(farm=farm).expand(worker=plan_shards())
    farm >> bootstrap() >> collected
    return farm, label(collected)


def stop_farm(repo_root: Path, farm: Any) -> Any:
    """The teardown of ``farm`` (the ``start_farm`` output)."""

    @teardown
    @task(queue=DEVICES)
    def stop_farm(farm: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import (
            farm as stage,  # inside the task: parsing the DAG imports no stage
        )

        cfg, root, _ = run_config(repo_root)
        return stage.stop(cfg, workdir=root)

    return stop_farm(farm)


def learning(repo_root: Path, data: Any, farm: Any = None) -> tuple[Any, Any, Any]:
    """train -> evaluate -> register on ``data``.

    Args:
        repo_root: the DAG file's repository.
        data: a task output holding ``round`` and ``data_version`` (the version stage's
            manifest) and, when the data came with an Asset event, the actor's ``params``
            (a learner DAG has no Params of its own: the actor's apply).
        farm: the ``start_farm`` output when the round's farm is still up (evaluation runs on
            it); None starts one for the evaluation.

    Returns:
        The ``train``, ``evaluate`` and ``register`` task outputs.
    """

    def config(data: dict[str, Any]) -> tuple[Config, Path]:
        cfg, root, _ = run_config(repo_root, data.get("params"))
        return cfg, root

    @task(queue=GPU)
    def train(data: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import (
            train as stage,  # inside the task: parsing the DAG imports no stage
        )

        cfg, root = config(data)
        with progress_to_log():
            return stage.run(
                cfg, round=data["round"], data_version=data["data_version"], workdir=root
            )

    @task(queue=DEVICES)
    def evaluate(
        data: dict[str, Any], trained: dict[str, Any], farm: dict[str, Any] | None
    ) -> dict[str, Any]:
        from distrl_tasks.stages import (
            evaluate as stage,  # lazy: torch + pyarrow
        )

        cfg, root = config(data)
        with progress_to_log():
            return stage.run(
                cfg,
                round=data["round"],
                checkpoint_dir=trained["checkpoint_dir"],
                workdir=root,
                adb_address=(farm["host"], farm["port"]) if farm else None,
                track=True,
                progress=True,
            )

    @task
    def register(
        data: dict[str, Any], trained: dict[str, Any], evaluation: dict[str, Any]
    ) -> dict[str, Any]:
        from distrl_tasks.stages import (
            register as stage,  # inside the task: parsing the DAG imports no stage
        )

        cfg, root = config(data)
        return stage.run(
            cfg,
            round=data["round"],
            checkpoint_dir=trained["checkpoint_dir"],
            data_version=data["data_version"],
            evaluation=evaluation,
            workdir=root,
        )

    trained = train(data)
    evaluation = evaluate(data, trained, farm)
    return trained, evaluation, register(data, trained, evaluation)


def next_round(repo_root: Path, dag_id: str, after: Any) -> None:
    """plan_next_round -> trigger_next_round, downstream of ``after``: while ``round < rounds``
    (and the mode is not offline), a new run of ``dag_id`` with ``round + 1`` and the same
    Params (a static DAG cannot loop)."""

    @task.short_circuit
    def plan_next_round() -> dict[str, Any] | None:
        """The next run's conf (and run id, as XCom ``run_id``); None skips the trigger."""
        cfg, _, params = run_config(repo_root)
        offline_only = cfg.algorithm.mode == "offline"
        conf = next_round_conf(params, cfg.orchestration.rounds, offline_only=offline_only)
        if conf is not None:
            ctx = get_current_context()
            run_id = next_run_id(dag_id, ctx["run_id"], conf["round"])
            ctx["ti"].xcom_push(key="run_id", value=run_id)
        return conf

    conf = plan_next_round()
    after >> conf
    TriggerDagRunOperator(
        task_id="trigger_next_round",
        trigger_dag_id=dag_id,
        trigger_run_id="{{ ti.xcom_pull(task_ids='plan_next_round', key='run_id') }}",
        skip_when_already_exists=True,  # a retry finds the run it already created
        conf=conf,
    )
