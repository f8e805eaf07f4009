"""``distrl_round``: one synchronous (DigiRL-style) training round per DAG run.

    start_farm (setup) -> bootstrap -> plan_shards -> collect[worker] (mapped, pool "devices")
      -> label -> version -> train -> evaluate -> register -> plan_next_round
      -> trigger_next_round;  evaluate -> stop_farm (teardown)

Rounds: a static DAG cannot loop, and mapping rounds as sequential task groups would fix their
number at parse time. So each run processes the round in its ``round`` Param (numbered as the
CLI and dvc.yaml number them: 0 is the offline phase of ``algorithm.mode`` off2on / offline,
online rounds count from 1; empty = the mode's first round) and, while ``round < rounds`` (and
the mode is not offline), its last task triggers a new ``distrl_round`` run with ``round + 1``
(same Params).
``max_active_runs=1`` queues that run until this one (teardown included) has finished, so two
rounds never share the farm. Re-running a round is safe: every stage is idempotent.

The file is thin on purpose: each task is one call into ``distrl_tasks.stages.<name>``, stage
modules are imported inside the tasks, nothing runs at parse time, and XCom carries only the
stages' small manifests (paths, versions, metrics). The config is ``params.yaml`` of the project
root (``$DISTRL_WORKDIR`` or this file's repository) with the run's Params applied.

Queues and the shared collection tasks: :mod:`distrl_tasks.orchestration.airflow_tasks`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from airflow.sdk import Param, dag, task

from distrl_tasks.orchestration.airflow_params import PARAM_SPECS
from distrl_tasks.orchestration.airflow_tasks import (
    DEFAULT_ARGS,
    collection,
    learning,
    next_round,
    run_config,
    stop_farm,
)

DAG_ID = "distrl_round"
REPO_ROOT = Path(__file__).resolve().parents[1]
_config = partial(run_config, REPO_ROOT)


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
    @task
    def version(labeled: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import version as stage  # lazy: DAG parsing imports no stage

        cfg, root, params = _config()
        return stage.run(cfg, round=params["round"], workdir=root)

    farm, labeled = collection(REPO_ROOT)
    _, evaluation, registered = learning(REPO_ROOT, version(labeled), farm=farm)
    evaluation >> stop_farm(REPO_ROOT, farm)
    next_round(REPO_ROOT, DAG_ID, after=registered)


distrl_round()
