"""Continuous mode: actors and a learner that never waits (DistRL's design).

DistRL's default: enabled for asynchronous runs with ``orchestration.continuous.replay_ratio > 0``
whose verdicts are known as episodes end (the simulator's oracle; :func:`enabled`). With Gemini
or on emulators, and with ``replay_ratio: 0``, asynchronous runs take learner rounds instead;
:func:`~distrl_tasks.orchestration.pipeline.run_rounds` then runs the online phase as one
*continuous round* instead of collect/learn rounds:

* the actors (``collect_async`` on every device, one inference server) run the same episodes
  ``rounds`` rounds would (``rounds * orchestration.episodes_per_device`` per device), or until
  the wall-clock budget ends; each episode is dispatched through a
  :class:`~.board.VersionBoard`, so it starts with the newest published
  policy, and waits at the staleness gate (``max_staleness``) when the learner is behind;
* the learner (:class:`~.learner.ContinuousLearner`) trains on the
  labeled episodes as they arrive at ``replay_ratio`` updates per transition, pre-fits its
  fresh critic on the first data, and publishes a version every ``K`` updates or ``T`` seconds;
  it runs in a process of its own (``learner_process``, the default,
  :mod:`~.process`) or as a thread beside the actors;
* at the end the episodes are written as the round's shards (like ``collect``) and labeled (the
  oracle's verdicts, into ``labeled/`` where later rounds' replay and the curriculum read), the
  learner's state is checkpointed and the policy exported, evaluated and registered like a
  round's (``label``, ``train``, ``evaluate``, ``register`` manifests; no DVC version), and
  the round's metrics hold the staleness distribution, the replay ratio reached and the idle
  shares of learner and actors.

Every finished episode is journaled as it ends (:mod:`distrl_tasks.runners.journal`, as the
collect stage does), so a round killed mid-way loses none: the rerun feeds the journaled
episodes to its fresh learner first, collects only the rest and writes all in the round's shards.

The offline phase (round 0) stays an ordinary synchronous round before it, as everywhere.
Airflow's ``distrl_actor`` / ``distrl_learner`` keep rounds (a task cannot hold a learner
between DAG runs); they follow the same replay ratio, since the train stage takes
``replay_ratio`` steps per transition collected since the learner's last round.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.config import Config
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.orchestration.actor_learner.board import VersionBoard
from distrl_tasks.orchestration.actor_learner.continuous_learner import (
    continuous_learner,
    export_learner,
    fresh_learner,
    frozen_copy,
)
from distrl_tasks.orchestration.actor_learner.process import LearnerProcess
from distrl_tasks.orchestration.round_chain import learn
from distrl_tasks.orchestration.round_results import RoundResult
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.runners.collector import PlannedTrajectories, collect_async
from distrl_tasks.runners.exploration import (
    ElementExploration,
    episode_outcomes,
    exploration_metrics,
)
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.journal import EpisodeJournal, journal_dir
from distrl_tasks.runners.trajectory import Episode
from distrl_tasks.stages import collect, common, curriculum, train
from distrl_tasks.tasks.taskset import load_goals


def verdicts_as_episodes_end(cfg: Config) -> bool:
    """Whether each episode's verdict is known when it ends (the simulator's oracle), which the
    continuous learner needs: it trains on labeled episodes as they arrive. An evaluator that
    labels after collection (Gemini, or any run on emulators) leaves it nothing to train on."""
    return cfg.evaluator.kind == "oracle" and cfg.env.device_kind == "sim"


def enabled(cfg: Config) -> bool:
    """Whether online rounds run as one continuous round (see the module docstring); without
    verdicts as episodes end, asynchronous runs take learner rounds at the same replay ratio."""
    return train.learner_replay_ratio(cfg) > 0 and verdicts_as_episodes_end(cfg)


class RoundProgress:
    """The continuous round's bar: finished episodes, their success, the learner's updates and
    newest version, and the seconds left before the actors halt (under a budget)."""

    def __init__(self, board: VersionBoard, total: int | None, halt_at: float | None) -> None:
        self.board, self.halt_at = board, halt_at
        self.bar = progress_bar(total=total, desc="continuous", unit="traj", enabled=True)
        self.successes = 0
        self.lock = threading.Lock()

    def episode(self, ep: Episode) -> None:
        """Count one finished episode and redraw the bar's figures."""
        with self.lock:
            self.successes += bool(ep.success)
            self.bar.update(1)
            figures: dict[str, object] = {
                "success": f"{self.successes / self.bar.n:.0%}",
                "updates": self.board.updates,
                "version": self.board.version,
            }
            if self.halt_at is not None:
                figures["left_s"] = max(0, round(self.halt_at - time.perf_counter()))
            self.bar.set_postfix(figures, refresh=False)

    def close(self) -> None:
        self.bar.close()


def continuous_round(
    cfg: Config,
    workdir: str | os.PathLike,
    record: dict,
    round_: int,
    episodes_per_device: int,
    t0: float,
    budget_s: float | None = None,
    check_s: float = 0.0,
) -> RoundResult:
    """Run actors and the continuous learner until the episodes are done or the budget ends.

    A round an earlier run trained (its train manifest exists: the command was killed in its
    evaluation or registration) is not collected or trained again: its chain is finished. The
    episodes an earlier, killed attempt journaled are fed to the learner first and not run
    again.

    Args:
        cfg: The configuration.
        workdir: Project working directory.
        record: The farm's record (``host``, ``port``, ``serials``).
        round_: The round this continuous round is recorded as.
        episodes_per_device: Episodes planned per device.
        t0: ``time.perf_counter()`` at the start of the run (for the budget).
        budget_s: Wall-clock budget of the run, from ``t0`` (None: no budget).
        check_s: Seconds the previous round's evaluation took: this round closes with the same
            check, so under a budget the actors halt that much earlier, on top of
            ``finish_reserve_s``.

    Returns:
        The round's result, recorded like a round's stages.
    """
    c, o = cfg.orchestration.continuous, cfg.orchestration
    start = time.perf_counter()
    trained = common.read_manifest(workdir, round_, "train")
    if trained is not None:  # collecting and training it again would train on it twice
        collected = common.read_manifest(workdir, round_, "collect") or {"round": round_}
        res = RoundResult(round_, collect={**collected, "reused": True})
        learn(cfg, res, workdir, trained={**trained, "reused": True})
        res.finished_s = time.perf_counter() - t0
        return res
    horizon = cfg.env.horizon_webshop if cfg.env.task_set == "webshop" else cfg.env.horizon_general
    goals = load_goals(cfg.env.task_set, "train", cfg.env.data_dir)
    serials = list(record.get("serials") or [])[: o.workers * o.devices_per_worker]
    probs, _ = curriculum.collection_probabilities(
        cfg, goals, common.labeled_dir(cfg, workdir), cfg.orchestration.curriculum.goal_mix
    )
    group = curriculum.attempts_per_goal(cfg)
    plan = curriculum.plan_goals(
        goals,
        serials,
        episodes_per_device,
        f"{cfg.sim.seed}/{round_}/0/train",
        probs,
        group_size=group,
    )
    dim = image_feature_dim(cfg.agent)
    raw = common.raw_dir(cfg, workdir)
    # what the actors collect under, as a collect round's: a resume under other settings stops
    asked = collect.CollectRequest(round=round_, episodes_per_device=episodes_per_device)
    settings = collect.recorded_under(cfg, asked.resolved(cfg))
    journal = EpisodeJournal(
        journal_dir(raw, round_, 0, "train"), round_, dim, cfg.algorithm.gamma, settings
    )
    collect.check_journal(journal, settings, round_)
    envs = collect.open_envs(cfg, record["host"], int(record["port"]), serials)
    done = journal.load(PlannedTrajectories(plan, round_))
    if done:  # a resume is never silent
        print(
            f"continuous round {round_}: resuming an interrupted attempt, {len(done)} episodes "
            "kept from its journal",
            file=sys.stderr,
            flush=True,
        )
    oracle = OracleEvaluator() if verdicts_as_episodes_end(cfg) else None

    remote = cl = learner = None
    if c.learner_process:  # no interpreter lock shared with the actors (actor_learner.process)
        remote = LearnerProcess(cfg, workdir, round_)
        policy, version = remote.policy, remote.version
    else:
        learner, fresh = fresh_learner(cfg, workdir, round_)
        policy, version = learner.algorithm.policy, learner.policy_version
    board = VersionBoard(
        frozen_copy(policy),
        version,
        replay_ratio=c.replay_ratio,
        publish_every_updates=c.publish_every_updates,
        max_staleness=c.max_staleness,
        default_length=float(horizon),
    )
    if remote is not None:
        remote.attach(board)
    else:
        cl = continuous_learner(cfg, learner, board, fresh=fresh)

    def feed(ep: Episode) -> None:
        """Hand an episode to the learner (its transitions are counted on the board already)."""
        labeled = bool(ep.rows) and ep.rows[0].get("label_status") == "labeled"
        if remote is not None:  # the learner process counts transitions from these messages
            remote.add(table_from_rows(ep.rows, dim) if labeled else None, board.transitions)
        elif labeled:
            cl.add(table_from_rows(ep.rows, dim))

    halt_at = None  # perf_counter() when the actors halt under a budget
    if budget_s is not None:
        now = time.perf_counter()
        halt_at = now + halt_delay(budget_s, c.finish_reserve_s + check_s, now - t0)
    to_run = sum(len(g) for g in plan.values()) - len(done)
    bar = RoundProgress(board, to_run if halt_at is None else None, halt_at)

    def keep_and_feed(ep: Episode) -> None:
        journal.record(ep)  # on disk first: a kill from here on keeps the episode
        feed(ep)
        bar.episode(ep)

    # the killed attempt's learner died with its updates: this one trains on its episodes first
    for ep in sorted(done.values(), key=lambda e: e.trajectory_id):
        board.add_resumed(ep.steps)
        feed(ep)

    stop, halt, out = threading.Event(), threading.Event(), {}
    eps = cfg.agent.exploration.element_epsilon
    exploration = (
        ElementExploration(
            eps,
            seed=cfg.sim.seed * 7919 + round_ * 101,
            goal_weight=cfg.agent.exploration.element_goal_weight,
        )
        if eps
        else None
    )

    def actors() -> None:
        try:
            with InferenceServer(
                frozen_copy(policy),
                board.version,
                max_batch=o.inference_max_batch,
                max_wait_ms=o.inference_max_wait_ms,
                wrap=exploration.wrap if exploration is not None else None,
            ) as server:
                out["result"] = collect_async(
                    envs,
                    server,
                    plan,
                    round_=round_,
                    oracle=oracle,
                    gamma=cfg.algorithm.gamma,
                    progress=False,
                    on_episode=keep_and_feed,
                    board=board,
                    halt=halt,
                    done=done,
                )
        except BaseException as exc:  # handed to the learner's thread, which raises it
            out["error"] = exc
        finally:
            stop.set()  # no more data: the learner catches up below, then stops

    thread = threading.Thread(target=actors, name="continuous-actors", daemon=True)
    thread.start()
    timer = None
    if halt_at is not None:
        timer = threading.Timer(max(0.0, halt_at - time.perf_counter()), halt.set)
        timer.daemon = True
        timer.start()
    learner_stop = threading.Event()
    watcher = threading.Thread(
        target=lambda: (stop.wait(), _catch_up(board, halt), learner_stop.set()), daemon=True
    )
    watcher.start()
    try:
        if remote is not None:
            report, final = remote.run(learner_stop)
        else:
            report = cl.run(learner_stop)
    finally:
        halt.set()
        board.close()
        thread.join()
        if timer is not None:
            timer.cancel()
        if remote is not None:
            remote.close()
        bar.close()
    if "error" in out:
        raise out["error"]
    result = out["result"]
    if not any(ep is not None for eps in result.episodes.values() for ep in eps):
        raise RuntimeError(
            f"continuous round {round_} collected no episode: the actors halt "
            f"orchestration.continuous.finish_reserve_s ({c.finish_reserve_s:g} s) plus the "
            f"last check ({check_s:.0f} s) before the budget ({budget_s} s), which leaves them "
            "no time; raise the budget or lower finish_reserve_s"
        )
    if remote is None:
        final = export_learner(cfg, workdir, round_, learner)
    wall = time.perf_counter() - start
    report.update(board.staleness_summary())  # the actors' side of the board
    report["async/actor_idle_share"] = board.actor_wait_s / max(1e-9, len(envs) * wall)
    report["async/learner_process"] = float(remote is not None)
    if exploration is not None:
        finished = [ep for eps in result.episodes.values() for ep in eps if ep is not None]
        outcomes = episode_outcomes(finished)
        report.update(exploration_metrics(outcomes, exploration.explored_episodes))
    return _finish(cfg, workdir, round_, final, result, report, start, t0, dim, journal)


def halt_delay(budget_s: float, reserve_s: float, elapsed_s: float) -> float:
    """Seconds from now until the actors halt: ``reserve_s`` before the budget ends, so that the
    episodes still running and the round's closing work end inside it (never negative)."""
    return max(0.0, budget_s - reserve_s - elapsed_s)


def _catch_up(board, halt: threading.Event, timeout_s: float = 60.0) -> None:
    """After the actors end, let the learner make the updates it still owes (not past budget)."""
    end = time.monotonic() + timeout_s
    while board.updates_owed() >= 1 and not halt.is_set() and time.monotonic() < end:
        time.sleep(0.05)


def _finish(
    cfg, workdir, round_, final, result, report, start, t0, dim, journal: EpisodeJournal
) -> RoundResult:
    """Shards, labels, evaluation and registration of the round (``final``: the export)."""
    shards = collect.write_shards(
        result, common.raw_dir(cfg, workdir), round_, 0, dim, cfg.algorithm.gamma
    )
    manifest = {"round": round_, "mode": "continuous", "shards": shards, **result.stats.as_dict()}
    common.write_manifest(workdir, round_, "collect", manifest)  # what a resumed run reports
    journal.clear()  # the shards hold every journaled episode now
    out = final["checkpoint_dir"]
    train = {
        "round": round_,
        "algorithm": cfg.algorithm.name,
        "checkpoint_dir": out,
        "policy_version": final["policy_version"],
        "steps": final["steps"],
        "metrics": {k: float(v) for k, v in report.items()},
        "reused": False,
    }
    with common.stage_run(cfg, workdir, round_, "train") as run_:
        run_.log_metrics(train["metrics"], step=round_)
    common.write_manifest(workdir, round_, "train", train)
    res = RoundResult(round_, collect=manifest, collected_s=time.perf_counter() - t0)
    learn(cfg, res, workdir, trained=train)  # the chain every round runs, its training done
    now = time.perf_counter()
    res.seconds, res.finished_s = now - start, now - t0
    return res
