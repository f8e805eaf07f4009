"""Policies behind the collectors' policy API: ``act(observations) -> (texts, log_probs)``.

* :class:`ModelPolicy` wraps an :class:`~distrl_tasks.agents.policy.AutoUIPolicy`.
* :class:`ScriptedPolicy` runs the scripted expert one step at a time on each observation's UI
  dump (behaviour log-prob 0: the expert is deterministic given its seed).
* :class:`RandomPolicy` draws uniformly from a finite action vocabulary; its log-prob is exactly
  ``-log(len(vocabulary))``.

Observations are :class:`~distrl_tasks.envs.android_env.EnvObservation`.
"""

from __future__ import annotations

import math
import random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch

from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.vlm import VLMPolicy
from distrl_tasks.envs.android_env import EnvObservation
from distrl_tasks.protocol.actions import ActionType, format_action, key, swipe, tap, type_text
from distrl_tasks.tasks.expert import Expert
from distrl_tasks.tasks.parse import parse_goal


@runtime_checkable
class CollectPolicy(Protocol):
    """What collectors and the inference server call."""

    def act(self, observations: Sequence[EnvObservation]) -> tuple[list[str], Sequence[float]]:
        """One AutoUI action string and its behaviour log-prob (<= 0) per observation."""
        ...


class ModelPolicy:
    """An :class:`AutoUIPolicy` (or a :class:`VLMPolicy`) behind the collect API (sampling,
    seeded generator)."""

    def __init__(
        self, policy: AutoUIPolicy | VLMPolicy, *, greedy: bool = False, seed: int = 0
    ) -> None:
        self.policy = policy
        self.greedy = greedy
        self.generator = torch.Generator(device=policy.device).manual_seed(seed)

    def act(self, observations: Sequence[EnvObservation]) -> tuple[list[str], list[float]]:
        texts, logps = self.policy.act(
            [o.policy_input() for o in observations], greedy=self.greedy, generator=self.generator
        )
        return texts, [float(v) for v in logps.tolist()]

    def log_prob(
        self, observations: Sequence[EnvObservation], actions: Sequence[str]
    ) -> list[float]:
        """Log-probs of ``actions`` under the distribution :meth:`act` samples from."""
        with torch.no_grad():
            scores = self.policy.score([o.policy_input() for o in observations], list(actions))
        return [float(v) for v in scores.log_prob.tolist()]


def as_collect_policy(policy: object, seed: int = 0) -> CollectPolicy:
    """Wrap an :class:`AutoUIPolicy`; pass anything with the collect API through."""
    if isinstance(policy, AutoUIPolicy | VLMPolicy):
        return ModelPolicy(policy, seed=seed)
    if isinstance(policy, CollectPolicy):
        return policy
    raise TypeError(f"not a policy: {type(policy).__name__} has no act(observations)")


class ScreenOnlyDriver:
    """Driver for a one-step expert: reads the observed UI dump; the env performs the action."""

    def __init__(self) -> None:
        self.xml = ""

    def ui_xml(self) -> str:
        return self.xml

    def tap(self, x: float, y: float) -> None:
        return None

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        return None

    def input_text(self, text: str) -> None:
        return None

    def keyevent(self, code: int | str) -> None:
        return None


class ScriptedPolicy:
    """The scripted expert, one step per call, with an optional mistake rate.

    Keeps one expert (plan memory and mistake RNG) per ``episode_id``; a step-0 observation
    starts a fresh one. Needs observations with ``ui_xml`` (``AndroidEnv(capture_ui_xml=True)``).
    """

    def __init__(self, mistake_rate: float = 0.0, seed: int = 0, max_episodes: int = 4096) -> None:
        if not 0.0 <= mistake_rate <= 1.0:
            raise ValueError(f"mistake_rate must be in [0, 1], got {mistake_rate}")
        self.mistake_rate = mistake_rate
        self.seed = seed
        self.max_episodes = max_episodes
        self._experts: OrderedDict[str, tuple[Expert, ScreenOnlyDriver]] = OrderedDict()
        self._lock = threading.Lock()

    def _expert(self, obs: EnvObservation) -> tuple[Expert, ScreenOnlyDriver]:
        if obs.step == 0 or obs.episode_id not in self._experts:
            driver = ScreenOnlyDriver()
            seed = f"{self.seed}:{obs.episode_id}"
            expert = Expert(driver, parse_goal(obs.goal), mistake_rate=self.mistake_rate, seed=0)
            expert.rng = random.Random(seed)  # per-episode mistakes, reproducible
            self._experts[obs.episode_id] = (expert, driver)
            while len(self._experts) > self.max_episodes:
                self._experts.popitem(last=False)
        self._experts.move_to_end(obs.episode_id)
        return self._experts[obs.episode_id]

    def act(self, observations: Sequence[EnvObservation]) -> tuple[list[str], list[float]]:
        texts = []
        with self._lock:
            for i, obs in enumerate(observations):
                if not obs.ui_xml:
                    raise ValueError(f"observation {i}: ScriptedPolicy needs ui_xml")
                expert, driver = self._expert(obs)
                driver.xml = obs.ui_xml
                expert.max_steps = 1  # run() performs exactly one plan step per call
                texts.append(expert.run().actions[0]["action"])
        return texts, [0.0] * len(texts)


def random_vocabulary(grid: int = 6, words: Sequence[str] = ("hello", "news", "ok")) -> list[str]:
    """A finite AutoUI action vocabulary: taps on a ``grid``x``grid`` lattice, four swipes,
    TYPE of a few words, and every key/status action."""
    if grid < 1:
        raise ValueError(f"grid must be >= 1, got {grid}")
    centers = [(i + 0.5) / grid for i in range(grid)]
    actions = [tap(y, x) for y in centers for x in centers]
    actions += [
        swipe(0.7, 0.5, 0.3, 0.5),
        swipe(0.3, 0.5, 0.7, 0.5),
        swipe(0.5, 0.8, 0.5, 0.2),
        swipe(0.5, 0.2, 0.5, 0.8),
    ]
    actions += [type_text(w) for w in words]
    keys = (ActionType.PRESS_BACK, ActionType.PRESS_HOME, ActionType.PRESS_ENTER)
    actions += [
        key(k) for k in (*keys, ActionType.STATUS_TASK_COMPLETE, ActionType.TASK_IMPOSSIBLE)
    ]
    return [format_action(a) for a in actions]


class RandomPolicy:
    """Uniform over :func:`random_vocabulary`; log-prob ``-log(len(vocabulary))`` exactly."""

    def __init__(self, seed: int = 0, vocabulary: Sequence[str] | None = None) -> None:
        self.vocabulary = list(vocabulary) if vocabulary is not None else random_vocabulary()
        if not self.vocabulary:
            raise ValueError("vocabulary must not be empty")
        self.log_prob = -math.log(len(self.vocabulary))
        self.rng = random.Random(seed)
        self._lock = threading.Lock()

    def act(self, observations: Sequence[EnvObservation]) -> tuple[list[str], list[float]]:
        with self._lock:
            texts = [self.rng.choice(self.vocabulary) for _ in observations]
        return texts, [self.log_prob] * len(texts)
