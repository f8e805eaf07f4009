"""A batched policy server for asynchronous collection (DistRL's central actor-side inference).

Device threads call :meth:`InferenceServer.act` with one observation each; one worker thread
gathers requests into batches (up to ``max_batch``, waiting at most ``max_wait_ms`` after the
first request of a batch) and runs the policy once per batch.

Policy versions: :meth:`swap` installs a newer policy between batches. The shard schema holds one
``policy_version`` per trajectory, so an episode is pinned to the version it starts with
(:meth:`lease` at reset, :meth:`release` at the end): a batch only mixes requests of one version,
and an old policy is dropped once no episode holds it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from distrl_tasks.envs.android_env import EnvObservation
from distrl_tasks.runners.policies import CollectPolicy, as_collect_policy


@dataclass(frozen=True)
class Decision:
    """One served action."""

    text: str
    log_prob: float  # behaviour log-prob (<= 0)
    policy_version: int
    batch_size: int  # size of the batch it was decided in


@dataclass
class _Request:
    obs: EnvObservation
    version: int
    future: Future = field(default_factory=Future)


class InferenceServer:
    """Batches ``act`` calls from many threads onto one policy.

    Args:
        policy: an :class:`AutoUIPolicy` or any :class:`CollectPolicy`.
        version: its policy version.
        max_batch: most observations per policy call.
        max_wait_ms: how long a batch waits for more requests after its first one.
        wrap: applied to every version's collect policy (e.g.
            :meth:`~distrl_tasks.runners.exploration.ElementExploration.wrap`).
    """

    def __init__(
        self,
        policy: object,
        version: int = 0,
        *,
        max_batch: int = 32,
        max_wait_ms: float = 5.0,
        wrap: Callable[[CollectPolicy], CollectPolicy] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self._wrap = wrap or (lambda p: p)
        self._policies: dict[int, CollectPolicy] = {version: self._wrap(as_collect_policy(policy))}
        self._leases: dict[int, int] = {}
        self.version = version
        self._queue: deque[_Request] = deque()
        self._cond = threading.Condition()
        self._stopped = False
        self.batch_sizes: list[int] = []  # one entry per policy call, for metrics and tests
        self.batch_versions: list[int] = []
        self._thread = threading.Thread(target=self._serve, name="inference", daemon=True)
        self._thread.start()

    # ----- versions --------------------------------------------------------------------------
    def swap(self, policy: object, version: int) -> None:
        """Serve ``policy`` as ``version`` to episodes that start from now on."""
        if version <= self.version:
            raise ValueError(f"new version {version} must be > current version {self.version}")
        wrapped = self._wrap(as_collect_policy(policy))
        with self._cond:
            self._policies[version] = wrapped
            self.version = version
            self._prune()

    def lease(self) -> int:
        """Pin a new episode to the current version; return it."""
        with self._cond:
            self._leases[self.version] = self._leases.get(self.version, 0) + 1
            return self.version

    def release(self, version: int) -> None:
        """End an episode's hold on ``version``."""
        with self._cond:
            left = self._leases.get(version, 0) - 1
            if left < 0:
                raise ValueError(f"release of version {version} without a lease")
            self._leases[version] = left
            self._prune()

    def _prune(self) -> None:
        for v in [v for v in self._policies if v != self.version]:
            if self._leases.get(v, 0) == 0 and not any(r.version == v for r in self._queue):
                del self._policies[v]

    @property
    def versions(self) -> list[int]:
        """Versions still loaded (the current one and those held by running episodes)."""
        with self._cond:
            return sorted(self._policies)

    # ----- serving ---------------------------------------------------------------------------
    def submit(self, obs: EnvObservation, version: int | None = None) -> Future:
        """Queue one observation; the future resolves to a :class:`Decision`."""
        with self._cond:
            if self._stopped:
                raise RuntimeError("inference server is closed")
            v = self.version if version is None else version
            if v not in self._policies:
                raise ValueError(
                    f"policy version {v} is not loaded (have {sorted(self._policies)})"
                )
            req = _Request(obs, v)
            self._queue.append(req)
            self._cond.notify_all()
        return req.future

    def act(self, obs: EnvObservation, version: int | None = None) -> Decision:
        """Blocking :meth:`submit`."""
        return self.submit(obs, version).result()

    def _next_batch(self) -> list[_Request] | None:
        with self._cond:
            while not self._queue and not self._stopped:
                self._cond.wait()
            if not self._queue:
                return None
            deadline = time.monotonic() + self.max_wait_s
            while len(self._queue) < self.max_batch and not self._stopped:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            version = self._queue[0].version  # oldest request first: no version starves
            batch, rest = [], deque()
            while self._queue:
                req = self._queue.popleft()
                (batch if req.version == version and len(batch) < self.max_batch else rest).append(
                    req
                )
            self._queue = rest
            return batch

    def _serve(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            version = batch[0].version
            with self._cond:
                policy = self._policies[version]
            try:
                texts, logps = policy.act([r.obs for r in batch])
                if len(texts) != len(batch) or len(logps) != len(batch):
                    raise RuntimeError(
                        f"policy returned {len(texts)} actions for {len(batch)} observations"
                    )
            except BaseException as exc:  # hand the error to every waiter, keep serving
                for r in batch:
                    r.future.set_exception(exc)
                continue
            with self._cond:
                self.batch_sizes.append(len(batch))
                self.batch_versions.append(version)
            for r, text, lp in zip(batch, texts, logps, strict=True):
                r.future.set_result(Decision(text, min(float(lp), 0.0), version, len(batch)))

    def close(self) -> None:
        """Stop after the queued requests are served."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(30)

    def __enter__(self) -> InferenceServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
