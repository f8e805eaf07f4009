"""Rounds of the pipeline, in one process: what `distrl round` and `distrl demo` run.

Each round is collect → label → version → train → evaluate → register, every step one call of a
stage (the same functions Airflow tasks and `dvc repro` call), so a round started here lands in
the same MLflow registry and DVC remote as one started anywhere else. With an offline phase
(``algorithm.mode`` off2on or offline, :mod:`distrl_tasks.config.modes`) round 0 runs first,
always synchronously: the bootstrap policy's offline dataset, then critics and actor trained on it.

Synchronous mode (DigiRL) runs the steps in sequence: the devices idle while the learner works.
Asynchronous mode (DistRL) decouples them: an actor thread collects rounds back to back with
whatever ``behavior`` policy is registered when each collection starts, while the learner takes
every collection that finished since its last round, labels them, and trains, evaluates and
registers once on the newest (the replay window holds the others). So the devices never wait
for the learner, and the learner never trains on one round when a fresher one is ready; the
staleness this causes is corrected with importance weights (``behavior_log_prob`` and
``policy_version`` are recorded on every step). The actor stays at most
``data.replay_window_rounds`` collections ahead of the learner, so nothing is collected that
would leave the replay window before it is trained on (``orchestration.actor_max_pending``
lowers that bound; 2 is the classic overlap of one round ahead). ``rounds`` counts learner
rounds.

Continuous mode (DistRL's default: ``orchestration.continuous.replay_ratio > 0`` with
asynchronous collection and the simulator's oracle verdicts,
:mod:`distrl_tasks.orchestration.actor_learner`) runs the online phase as one continuous round:
the learner trains while the actors collect, publishing a policy version every ``K`` updates,
and the actors take the newest version between episodes under the staleness bound. Labeled
after collection (Gemini, emulators), asynchronous runs take learner rounds at the ratio.

A wall-clock budget (``budget_s``) bounds a run instead of, or as well as, a number of rounds:
the clock starts when the farm is up, and a round is learned (and, asynchronously, a collection
started) only while :func:`budget_allows` says it is expected to finish in time (elapsed time
plus the mean duration of the rounds, or collections, so far; the first always runs). A
collection that finishes after the learner stopped is reported through ``on_collect`` but never
trained on.

What a round produced (:class:`RoundResult`) and the per-round table (:func:`format_rounds`) live
in :mod:`distrl_tasks.orchestration.round_results` and are re-exported here.
"""

from __future__ import annotations

import contextlib
import os
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from distrl_tasks.config import Config, modes
from distrl_tasks.evaluators.preflight import check_labeling
from distrl_tasks.orchestration.round_chain import learn
from distrl_tasks.orchestration.round_results import (
    RoundResult,
    format_rounds,  # noqa: F401
)
from distrl_tasks.stages.common import round_dir, torch_threads

CollectCallback = Callable[[int, dict[str, Any], float], None]


def budget_allows(
    elapsed_s: float, budget_s: float | None, round_seconds: Sequence[float] = ()
) -> bool:
    """Whether another round is expected to finish within the wall-clock budget.

    Args:
        elapsed_s: seconds since the rounds started.
        budget_s: the budget (None: no budget, always True).
        round_seconds: durations of the rounds so far (their mean predicts the next one; the
            first round, with no history, always starts).

    Returns:
        ``elapsed_s + mean(round_seconds) <= budget_s``.
    """
    if budget_s is None:
        return True
    expected = statistics.fmean(round_seconds) if round_seconds else 0.0
    return elapsed_s + expected <= budget_s


def _collect(cfg: Config, round_: int, workdir: str | os.PathLike, farm: dict | None) -> dict:
    from distrl_tasks.stages import (
        collect,  # lazy: torch + pyarrow
    )

    address = (farm["host"], farm["port"]) if farm else None
    manifest = collect.run(
        cfg, collect.CollectRequest(round=round_, adb_address=address), workdir=workdir
    )
    _say_reused(round_, {"collect": manifest})
    return manifest


def _say_reused(round_: int, manifests: dict[str, dict | None]) -> None:
    """Tell the user which stages of a resumed round were finished already (never silent)."""
    reused = [name for name, m in manifests.items() if m and m.get("reused")]
    if reused:
        print(
            f"round {round_}: reused from an earlier run: {', '.join(reused)}",
            file=sys.stderr,
            flush=True,
        )


def _timed_collect(
    cfg: Config, round_: int, workdir: str | os.PathLike, farm: dict | None, t0: float
) -> tuple[dict, float]:
    """The collect manifest and when it finished (seconds since ``t0``)."""
    manifest = _collect(cfg, round_, workdir, farm)
    return manifest, time.perf_counter() - t0


def _learn(cfg: Config, result: RoundResult, workdir: str | os.PathLike) -> None:
    """The round's learning chain (:mod:`~distrl_tasks.orchestration.round_chain`) on a round
    whose data is collected, saying which stages an earlier run had finished."""
    learn(cfg, result, workdir)
    _say_reused(
        result.round,
        {
            "label": result.label,
            "version": result.version,
            "train": result.train,
            "evaluate": result.evaluate,
            "register": result.register,
        },
    )


def _label(cfg: Config, round_: int, workdir: str | os.PathLike) -> dict:
    """Label a collection the learner takes together with a newer one (asynchronous mode)."""
    from distrl_tasks.stages import label  # lazy: pyarrow + pandas

    return label.run(cfg, round=round_, workdir=workdir)


# a round count that only a wall-clock budget ends (the benchmark's runs, the demo's RL phase)
UNBOUNDED_ROUNDS = 100_000


def run_rounds(
    cfg: Config,
    *,
    workdir: str | os.PathLike = ".",
    rounds: int | None = None,
    first_round: int | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
    budget_s: float | None = None,
    on_collect: CollectCallback | None = None,
) -> list[RoundResult]:
    """Bootstrap if needed, then the offline phase if the mode has one, then the online rounds.

    ``algorithm.mode`` (:mod:`distrl_tasks.config.modes`): ``off2on`` runs round 0 (the
    offline phase, always synchronous) and then ``rounds`` online rounds; ``online`` only the online
    rounds; ``offline`` only round 0. Rounds already finished (their stage manifests exist) are
    returned without redoing work.

    Args:
        cfg: the configuration (``orchestration.asynchronous`` picks the online mode).
        workdir: project working directory.
        rounds: at most this many online rounds (default ``orchestration.rounds``);
            asynchronously these are learner rounds, numbered by the newest collection each
            one took, so numbers skip the collections merged into a later round.
        first_round: number of the first round (default: 0 with an offline phase, else 1; a
            later start skips the offline phase; asynchronously: of the first collection).
        on_round: called with each finished round.
        budget_s: wall-clock budget in seconds, counted from when the farm is up (the offline
            phase included): no round is learned once :func:`budget_allows` expects it to end
            past the budget (None: none).
        on_collect: called in the calling thread as ``on_collect(round, manifest, finished_s)``
            for every finished collection, ``finished_s`` being when it finished (seconds since
            the rounds started), including a last asynchronous one that is never learned.

    Raises:
        ValueError: ``rounds`` < 1, a budget <= 0, or a first round the mode does not have.
    """
    from distrl_tasks.stages import bootstrap  # lazy: torch + mlflow

    n = rounds if rounds is not None else cfg.orchestration.rounds
    if n < 1:
        raise ValueError(f"rounds must be >= 1, got {n}")
    if budget_s is not None and not budget_s > 0:
        raise ValueError(f"budget_s must be > 0, got {budget_s}")
    first = modes.first_round(cfg) if first_round is None else first_round
    modes.check_round(cfg, first)
    check_labeling(cfg)  # before any work: a Gemini round needs its key and a served model
    bootstrap.run(cfg, workdir=workdir)
    with torch_threads(cfg.orchestration.threads):  # a learner process inherits it
        return _run_online(cfg, workdir, first, n, on_round, budget_s, on_collect)


def _run_online(
    cfg: Config,
    workdir: str | os.PathLike,
    first: int,
    n: int,
    on_round: Callable[[RoundResult], None] | None,
    budget_s: float | None,
    on_collect: CollectCallback | None,
) -> list[RoundResult]:
    """:func:`run_rounds` once the bootstrap is there: the farm, the offline phase, the rounds."""
    from distrl_tasks.orchestration.actor_learner import (
        round as continuous,  # lazy: torch + pyarrow
    )
    from distrl_tasks.stages import farm  # lazy: torch + mlflow

    results: list[RoundResult] = []
    record = farm.start(cfg, workdir=workdir, owner_pid=os.getpid())
    try:
        t0 = time.perf_counter()
        if first == modes.OFFLINE_ROUND:
            results.append(_sync_round(cfg, workdir, record, first, t0, on_collect))
            if on_round:
                on_round(results[-1])
            if cfg.algorithm.mode == "offline":
                return results
            first += 1
        if continuous.enabled(cfg):  # the learner that never waits: one continuous round
            episodes = n * cfg.orchestration.episodes_per_device
            # it closes with the check the offline round ran: that one's time is reserved too
            check_s = float(results[-1].evaluate.get("wall_s", 0.0)) if results else 0.0
            result = continuous.continuous_round(
                cfg, workdir, record, first, episodes, t0, budget_s, check_s
            )
            if on_collect:
                on_collect(first, result.collect, result.collected_s)
            if on_round:
                on_round(result)
            results.append(result)
        elif cfg.orchestration.asynchronous:
            if cfg.orchestration.continuous.replay_ratio > 0:  # never silent: not the default
                print(
                    f"evaluator {cfg.evaluator.kind} on {cfg.env.device_kind} devices labels "
                    "after collection, so the continuous learner would have nothing to train "
                    "on: learner rounds at the replay ratio instead",
                    file=sys.stderr,
                    flush=True,
                )
            results += _async_rounds(
                cfg, workdir, record, first, n, on_round, budget_s, on_collect, t0
            )
        else:
            online: list[RoundResult] = []  # the offline phase does not predict their length
            for r in range(first, first + n):
                start = time.perf_counter()
                if not budget_allows(start - t0, budget_s, [x.seconds for x in online]):
                    break
                online.append(_sync_round(cfg, workdir, record, r, t0, on_collect))
                if on_round:
                    on_round(online[-1])
            results += online
    finally:
        farm.stop(cfg, workdir=workdir)
    return results


def _sync_round(
    cfg: Config,
    workdir: str | os.PathLike,
    record: dict,
    r: int,
    t0: float,
    on_collect: CollectCallback | None,
) -> RoundResult:
    """Collect round ``r``, then learn from it (the devices wait for the learner)."""
    start = time.perf_counter()
    manifest, collected_s = _timed_collect(cfg, r, workdir, record, t0)
    if on_collect:
        on_collect(r, manifest, collected_s)
    result = RoundResult(r, collect=manifest, collected_s=collected_s)
    _learn(cfg, result, workdir)
    now = time.perf_counter()
    result.seconds, result.finished_s = now - start, now - t0
    return result


_END = object()  # the actor's last message: it started no further collection


class _Actor(threading.Thread):
    """Collects rounds ``first, first + 1, ...`` back to back until halted or out of budget.

    Each finished collection is put on :attr:`finished` as ``(round, manifest, finished_s)``;
    an exception is put there instead of raising, then :data:`_END`. At most ``max_ahead``
    collections are finished but not yet released by :meth:`consumed` (or in flight), and at
    most ``limit`` are started (None: no limit).
    """

    def __init__(
        self,
        cfg: Config,
        workdir: str | os.PathLike,
        record: dict,
        first: int,
        t0: float,
        budget_s: float | None,
        max_ahead: int,
        limit: int | None = None,
    ) -> None:
        super().__init__(name="actor", daemon=True)
        self.cfg, self.workdir, self.record = cfg, workdir, record
        self.first, self.t0, self.budget_s, self.limit = first, t0, budget_s, limit
        self.finished: queue.Queue[Any] = queue.Queue()
        self._halted = threading.Event()
        self._slots = threading.Semaphore(max_ahead)
        self.ended = False  # set by take() once the actor's last message was read

    def halt(self) -> None:
        """Start no further collection (the one in flight finishes)."""
        self._halted.set()

    def consumed(self, n: int) -> None:
        """The learner is done with ``n`` collections: as many more may start."""
        for _ in range(n):
            self._slots.release()

    def run(self) -> None:
        durations: list[float] = []
        r = self.first
        try:
            while True:
                while not self._slots.acquire(timeout=0.05):
                    if self._halted.is_set():
                        return
                elapsed = time.perf_counter() - self.t0
                if self._halted.is_set() or not budget_allows(elapsed, self.budget_s, durations):
                    return
                if self.limit is not None and r - self.first >= self.limit:
                    return
                start = time.perf_counter()
                manifest, finished_s = _timed_collect(
                    self.cfg, r, self.workdir, self.record, self.t0
                )
                durations.append(time.perf_counter() - start)
                self.finished.put((r, manifest, finished_s))
                r += 1
        except BaseException as exc:  # handed to the learner, which raises it
            self.finished.put(exc)
        finally:
            self.finished.put(_END)

    def take(self) -> list[tuple[int, dict, float]]:
        """The collections finished so far, waiting for one if there is none and the actor has
        not ended (then ``[]``); re-raises the actor's exception."""
        items = [] if self.ended else [self.finished.get()]
        with contextlib.suppress(queue.Empty):
            while True:
                items.append(self.finished.get_nowait())
        self.ended = self.ended or any(item is _END for item in items)
        for item in items:
            if isinstance(item, BaseException):
                raise item
        return [item for item in items if item is not _END]


def _learned_earlier(workdir: str | os.PathLike, round_: int) -> bool:
    """Whether an earlier run of the command learned round ``round_`` (its version manifest)."""
    return (round_dir(workdir, round_) / "version.json").is_file()


def _merged_earlier(workdir: str | os.PathLike, round_: int) -> bool:
    """Whether an earlier, killed run labeled collection ``round_`` as merged into a newer
    round it then learned (a label manifest but no version manifest)."""
    labeled = (round_dir(workdir, round_) / "label.json").is_file()
    return labeled and not _learned_earlier(workdir, round_)


Collection = tuple[int, dict, float]  # (round, collect manifest, finished_s)


def _next_batch(
    actor: _Actor, pending: list[Collection], workdir: str | os.PathLike, window: int
) -> list[Collection]:
    """The collections the learner takes next: those finished so far (``pending`` first,
    the actor's otherwise), cut and extended to the batches an earlier run of the same command
    learned, so a resumed run learns the same rounds (never one round's data under another's
    number, which would train it twice) and counts them as that run did. ``window``: the
    actor's lead, which no batch exceeds (the actor collects no more until some are learned)."""
    batch = pending[:] if pending else actor.take()
    pending.clear()
    while batch and len(batch) < window and _merged_earlier(workdir, batch[-1][0]):
        if actor.ended:
            break
        batch += actor.take()  # the earlier run's batch ran further
    for i, (r, _, _) in enumerate(batch):
        if _learned_earlier(workdir, r):  # the earlier run's batch ended here
            pending += batch[i + 1 :]
            return batch[: i + 1]
    return batch


def _async_rounds(
    cfg: Config,
    workdir: str | os.PathLike,
    record: dict,
    first: int,
    n: int,
    on_round: Callable[[RoundResult], None] | None,
    budget_s: float | None = None,
    on_collect: CollectCallback | None = None,
    t0: float | None = None,
) -> list[RoundResult]:
    """Learner rounds on an actor thread's collections; ``t0`` starts the budget's clock."""
    results: list[RoundResult] = []
    start = time.perf_counter()
    t0 = start if t0 is None else t0
    window = cfg.orchestration.actor_max_pending or cfg.data.replay_window_rounds
    # a single learner round would never train on a second collection
    actor = _Actor(cfg, workdir, record, first, t0, budget_s, window, limit=1 if n == 1 else None)
    actor.start()
    pending: list[Collection] = []  # taken from the actor, left for the next learner round
    clean = False
    try:
        while len(results) < n and (pending or not actor.ended):
            batch = _next_batch(actor, pending, workdir, window)
            for r, manifest, collected_s in batch:
                if on_collect:
                    on_collect(r, manifest, collected_s)
            if not batch:
                break
            if results and not budget_allows(
                time.perf_counter() - t0, budget_s, [x.seconds for x in results]
            ):
                break  # collected in time, never learned
            if len(results) == n - 1:
                actor.halt()  # the last learner round: no collection would be trained on
            *earlier, (r, manifest, collected_s) = batch
            for r_earlier, _, _ in earlier:
                _label(cfg, r_earlier, workdir)
            result = RoundResult(
                r, collect=manifest, collected_s=collected_s, merged=[m for _, m, _ in earlier]
            )
            _learn(cfg, result, workdir)
            actor.consumed(len(batch))
            now = time.perf_counter()
            result.seconds, result.finished_s, start = now - start, now - t0, now
            results.append(result)
            if on_round:
                on_round(result)
        clean = True
    finally:
        actor.halt()  # an actor waiting for a slot sees it within its poll interval
        for r, manifest, collected_s in pending:  # taken, never learned
            if on_collect and clean:
                on_collect(r, manifest, collected_s)
        while not actor.ended:  # let the collection in flight finish before the farm stops
            try:
                batch = actor.take()
            except BaseException:
                if clean:
                    raise
                break  # already unwinding from another error
            for r, manifest, collected_s in batch:
                if on_collect and clean:
                    on_collect(r, manifest, collected_s)
        actor.join()
    return results
