"""InferenceServer: batching limits, the wait window, policy swaps between batches, versions."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from distrl_tasks.envs.android_env import EnvObservation
from distrl_tasks.runners.inference import InferenceServer


def obs(i: int) -> EnvObservation:
    return EnvObservation(
        goal="g",
        prompt=f"p{i}",
        screenshot_png=b"",
        image_features=np.zeros(2, np.float16),
        step=0,
        episode_id=f"e{i}",
    )


class EchoPolicy:
    """Answers '<tag>:<prompt>' with log-prob -0.5; remembers its batch sizes."""

    def __init__(self, tag: str, delay_s: float = 0.0) -> None:
        self.tag = tag
        self.delay_s = delay_s
        self.batches: list[int] = []

    def act(self, observations):
        self.batches.append(len(observations))
        time.sleep(self.delay_s)
        return [f"{self.tag}:{o.prompt}" for o in observations], [-0.5] * len(observations)


def test_concurrent_requests_are_batched_up_to_max_batch() -> None:
    policy = EchoPolicy("a")
    with InferenceServer(policy, 3, max_batch=4, max_wait_ms=200) as server:
        futures = [server.submit(obs(i)) for i in range(10)]
        decisions = [f.result(5) for f in futures]
    assert [d.text for d in decisions] == [f"a:p{i}" for i in range(10)]
    assert all(d.policy_version == 3 and d.log_prob == -0.5 for d in decisions)
    # all 10 were queued inside the first wait window: full batches of 4, 4, then the rest
    assert policy.batches == [4, 4, 2] == server.batch_sizes


def test_a_lone_request_waits_at_most_max_wait() -> None:
    with InferenceServer(EchoPolicy("a"), max_batch=8, max_wait_ms=150) as server:
        t0 = time.monotonic()
        d = server.act(obs(0))
        waited = time.monotonic() - t0
    assert d.batch_size == 1
    assert 0.14 <= waited < 2.0


def test_a_full_batch_does_not_wait() -> None:
    with InferenceServer(EchoPolicy("a"), max_batch=1, max_wait_ms=5000) as server:
        t0 = time.monotonic()
        server.act(obs(0))
        assert time.monotonic() - t0 < 1.0


def test_requests_from_many_threads_all_get_their_own_answer() -> None:
    results: dict[int, str] = {}
    with InferenceServer(EchoPolicy("a", delay_s=0.01), max_batch=8, max_wait_ms=2) as server:

        def worker(i: int) -> None:
            for k in range(5):
                results[i * 100 + k] = server.act(obs(i * 100 + k)).text

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {k: f"a:p{k}" for k in results} and len(results) == 40
    assert max(server.batch_sizes) <= 8 and sum(server.batch_sizes) == 40


def test_swap_applies_to_new_episodes_and_old_versions_are_dropped_when_released() -> None:
    old, new = EchoPolicy("old"), EchoPolicy("new")
    with InferenceServer(old, 0, max_batch=4, max_wait_ms=1) as server:
        running = server.lease()  # an episode that started on version 0
        server.swap(new, 1)
        assert server.versions == [0, 1]
        assert server.act(obs(1), running).text == "old:p1"
        assert server.act(obs(2)).text == "new:p2"
        fresh = server.lease()
        assert fresh == 1 and server.act(obs(3), fresh).policy_version == 1
        server.release(running)
        assert server.versions == [1]
        server.release(fresh)
        with pytest.raises(ValueError, match="not loaded"):
            server.submit(obs(4), 0)
        with pytest.raises(ValueError, match="must be >"):
            server.swap(old, 1)
        with pytest.raises(ValueError, match="without a lease"):
            server.release(0)
    # a batch never mixes versions
    assert server.batch_versions == [0, 1, 1]


def test_policy_errors_reach_the_caller_and_the_server_keeps_serving() -> None:
    class Flaky(EchoPolicy):
        def act(self, observations):
            if observations[0].prompt == "p0":
                raise RuntimeError("model exploded")
            return super().act(observations)

    with InferenceServer(Flaky("f"), max_batch=1, max_wait_ms=0) as server:
        with pytest.raises(RuntimeError, match="exploded"):
            server.act(obs(0))
        assert server.act(obs(1)).text == "f:p1"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        InferenceServer(EchoPolicy("a"), max_batch=0)
    with pytest.raises(TypeError, match="not a policy"):
        InferenceServer(object())
    server = InferenceServer(EchoPolicy("a"))
    server.close()
    with pytest.raises(RuntimeError, match="closed"):
        server.submit(obs(0))
