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
overlap: collection of round r+1 runs while round r trains. A learner run takes
``orchestration.continuous.replay_ratio`` updates (0.1 by default) per transition collected
since its previous run, so events that piled up become more updates, at the ratio of
``distrl round``'s continuous learner, which trains in one process while actors collect (a
task cannot hold a learner between runs); ``replay_ratio: 0`` takes ``algorithm.actor_epochs``.

Same rules as ``distrl_round``: thin tasks (one stage call each), imports inside tasks, only small
manifests through XCom, config = ``params.yaml`` + the run's Params.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from airflow.sdk import Asset, Param, dag, get_current_context, task

from distrl_tasks.orchestration.airflow_params import PARAM_SPECS, newest_trajectories
from distrl_tasks.orchestration.airflow_tasks import (
    DEFAULT_ARGS,
    collection,
    learning,
    next_round,
    run_config,
    stop_farm,
)

ACTOR_ID = "distrl_actor"
LEARNER_ID = "distrl_learner"
TRAJECTORIES = Asset("distrl_trajectories")  # one event per labeled, versioned round of data
REPO_ROOT = Path(__file__).resolve().parents[1]
_config = partial(run_config, REPO_ROOT)


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
    @task(outlets=[TRAJECTORIES])
    def version(labeled: dict[str, Any]) -> dict[str, Any]:
        from distrl_tasks.stages import version as stage  # lazy: DAG parsing imports no stage

        cfg, root, params = _config()
        manifest = stage.run(cfg, round=params["round"], workdir=root)
        # what the learner needs to train on this round, carried by the Asset event
        get_current_context()["outlet_events"][TRAJECTORIES].extra = {
            "round": params["round"],
            "data_version": manifest["data_version"],
            "params": params,
        }
        return manifest

    farm, labeled = collection(REPO_ROOT)
    labeled >> stop_farm(REPO_ROOT, farm)
    next_round(REPO_ROOT, ACTOR_ID, after=version(labeled))


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

    learning(REPO_ROOT, select_data())


distrl_actor()
distrl_learner()
