"""Exploration over the screen's actionable elements, with the behaviour log-prob of the mixture.

Sampling the policy alone rarely reaches a reward on the families it has not learnt: its taps
are written digit by digit, so a temperature high enough to try another target scatters the tap
instead. Element exploration acts, with probability ``epsilon`` per step, on a target the screen
offers: a tap on the centre of an element drawn from the uiautomator dump the collector already
captures (:func:`~distrl_tasks.protocol.ui_dump.actionable_elements`), uniformly or, goal-aware,
with weight ``1 + beta * m(e, goal)`` where ``m`` counts the goal's words in the element's label
(:func:`~distrl_tasks.protocol.ui_dump.goal_match`): "Open the clock" draws the drawer's Clock
icon more often than any other, and a uniform draw over a dozen icons rarely does.

The behaviour policy is then the mixture, and the stored behaviour log-prob is that of the
action that acted under it::

    mu(a | s) = (1 - eps) * pi(a | s) + eps * q(a | s),
    q(a | s) = sum_{e in E(s): tap(e) = a} w_e / sum_{e in E(s)} w_e,   w_e = 1 + beta * m(e, goal)

where ``pi`` is the policy's (tempered, constrained) distribution over action strings and
``E(s)`` the screen's elements (their taps are AutoUI strings with the short plan; beta = 0 gives
the uniform ``[a in taps] / |taps|`` over the distinct taps). A
screen without elements explores nothing, so there ``mu = pi``. When exploration chose, ``pi(a)``
is scored teacher-forced by the same policy version; when the policy chose, the sampled
log-prob is used and ``q(a)`` is non-zero only if it wrote exactly an element's tap. The
learners' importance weights ``pi_new / mu`` therefore stay right.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence
from typing import Protocol

from distrl_tasks.protocol.ui_dump import actionable_elements, goal_match
from distrl_tasks.runners.policies import CollectPolicy
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GoalParseError


class ScoringPolicy(CollectPolicy, Protocol):
    """A collect policy that can also score given actions (what exploration needs)."""

    def log_prob(self, observations: Sequence[object], actions: Sequence[str]) -> list[float]:
        """Behaviour log-probs of ``actions`` under the policy's sampling distribution."""
        ...


def mixture_log_prob(log_pi: float, epsilon: float, q: float) -> float:
    """``log((1 - eps) * exp(log_pi) + eps * q)``, computed stably (``q`` in [0, 1])."""
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    policy_part = math.log1p(-epsilon) + log_pi
    if q <= 0.0 or epsilon == 0.0:
        return policy_part
    explore_part = math.log(epsilon * q)
    top = max(policy_part, explore_part)
    return top + math.log(math.exp(policy_part - top) + math.exp(explore_part - top))


class ElementExploration:
    """Epsilon-exploration over element taps, shared by every policy version of a collection.

    ``wrap(policy)`` gives the collect policy that explores; the draws come from one seeded
    generator, and the record of which episodes explored (``explored_episodes``) and how many
    steps did (``explored_steps`` of ``steps``) spans every version.

    Args:
        epsilon: per-step probability of acting on a random element (0 = never).
        seed: seeds the draws.
        max_elements: elements considered per screen (the first ones in document order).
        goal_weight: ``beta`` of the goal-aware draw (0 = uniform over the distinct taps).
    """

    def __init__(
        self, epsilon: float, seed: int = 0, max_elements: int = 64, goal_weight: float = 0.0
    ) -> None:
        if not 0.0 <= epsilon < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
        if goal_weight < 0:
            raise ValueError(f"goal_weight must be >= 0, got {goal_weight}")
        self.epsilon = float(epsilon)
        self.goal_weight = float(goal_weight)
        self.max_elements = max_elements
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.steps = 0
        self.explored_steps = 0
        self.explored_episodes: set[str] = set()

    def wrap(self, policy: CollectPolicy) -> CollectPolicy:
        """``policy`` acting through this exploration (unchanged when epsilon is 0).

        Raises:
            TypeError: the policy cannot score actions (exploration needs ``log_prob``).
        """
        if self.epsilon == 0.0:
            return policy
        if not callable(getattr(policy, "log_prob", None)):
            raise TypeError(
                f"element exploration needs a policy that scores actions; "
                f"{type(policy).__name__} has no log_prob(observations, actions)"
            )
        return _Exploring(self, policy)  # type: ignore[arg-type]

    def summary(self) -> dict[str, float]:
        """Counts for a manifest: steps, explored steps, explored episodes."""
        with self._lock:
            return {
                "epsilon": self.epsilon,
                "steps": self.steps,
                "explored_steps": self.explored_steps,
                "explored_episodes": len(self.explored_episodes),
            }

    def _draw(self, weights: Sequence[float]) -> int | None:
        """With probability epsilon an index drawn in proportion to ``weights``, else None."""
        with self._lock:
            self.steps += 1
            explore = self._rng.random() < self.epsilon
            if len(set(weights)) == 1:
                pick = self._rng.randrange(len(weights))
            else:
                pick = self._rng.choices(range(len(weights)), weights=weights)[0]
            if explore:
                self.explored_steps += 1
            return pick if explore else None

    def tap_weights(self, xml: str, goal: str) -> dict[str, float]:
        """The screen's distinct element taps with their draw probabilities ``q`` (document
        order; empty when the screen has no actionable element)."""
        elements = actionable_elements(xml, self.max_elements) if xml else []
        weights: dict[str, float] = {}
        for e in elements:
            w = 1.0 + self.goal_weight * goal_match(e, goal) if self.goal_weight else 1.0
            tap = e.tap_action()
            if self.goal_weight:
                weights[tap] = weights.get(tap, 0.0) + w
            else:
                weights.setdefault(tap, w)  # uniform over the distinct taps
        total = sum(weights.values())
        return {tap: w / total for tap, w in weights.items()}

    def _mark(self, episode_id: str) -> None:
        with self._lock:
            self.explored_episodes.add(episode_id)


class _Exploring:
    """One policy version behind :class:`ElementExploration` (see the module docstring)."""

    def __init__(self, exploration: ElementExploration, policy: ScoringPolicy) -> None:
        self.exploration = exploration
        self.policy = policy

    def act(self, observations: Sequence[object]) -> tuple[list[str], list[float]]:
        texts, log_probs = self.policy.act(observations)  # type: ignore[arg-type]
        texts, log_pi = list(texts), [float(v) for v in log_probs]
        eps = self.exploration.epsilon
        targets: list[dict[str, float]] = []
        chosen: list[int] = []
        for i, obs in enumerate(observations):
            xml = str(getattr(obs, "ui_xml", "") or "")
            taps = self.exploration.tap_weights(xml, str(getattr(obs, "goal", "") or ""))
            targets.append(taps)
            if not taps:
                continue
            pick = self.exploration._draw(list(taps.values()))
            if pick is not None:
                texts[i] = list(taps)[pick]
                chosen.append(i)
                self.exploration._mark(str(getattr(obs, "episode_id", "")))
        if chosen:
            scored = self.policy.log_prob([observations[i] for i in chosen],
                                          [texts[i] for i in chosen])  # fmt: skip
            for i, value in zip(chosen, scored, strict=True):
                log_pi[i] = float(value)
        out = []
        for text, lp, taps in zip(texts, log_pi, targets, strict=True):
            if not taps:
                out.append(lp)  # nothing to explore on this screen: mu = pi
                continue
            out.append(mixture_log_prob(lp, eps, taps.get(text, 0.0)))
        return texts, out

    def log_prob(self, observations: Sequence[object], actions: Sequence[str]) -> list[float]:
        return self.policy.log_prob(observations, actions)


def exploration_metrics(
    outcomes: Sequence[tuple[str, str, bool | None]], explored: set[str] | Sequence[str]
) -> dict[str, float]:
    """``rollout/`` metrics of exploration from ``(trajectory id, family, success)`` outcomes
    (success None: not labeled, left out) and the ids of the episodes that explored.

    ``rollout/explore_episode_share``: explored episodes / episodes;
    ``rollout/explore_success/<family>``: successes / explored episodes of that family (only
    families with explored episodes); ``rollout/explore_success``: over all families.
    """
    ids = set(explored)
    known = [(tid, fam, bool(ok)) for tid, fam, ok in outcomes if ok is not None]
    if not known:
        return {}
    out = {"rollout/explore_episode_share": sum(t in ids for t, _, _ in known) / len(known)}
    by_family: dict[str, list[bool]] = {}
    for tid, family, ok in known:
        if tid in ids:
            by_family.setdefault(family, []).append(ok)
    for family, oks in sorted(by_family.items()):
        out[f"rollout/explore_success/{family}"] = sum(oks) / len(oks)
    every = [ok for oks in by_family.values() for ok in oks]
    if every:
        out["rollout/explore_success"] = sum(every) / len(every)
    return out


def goal_family(goal: str) -> str:
    """The task family of ``goal`` ("unknown" when no family's parser reads it)."""
    try:
        return parse_goal(goal).family
    except GoalParseError:
        return "unknown"


def episode_outcomes(episodes: Sequence[object]) -> list[tuple[str, str, bool | None]]:
    """``(trajectory id, family, success)`` of collector episodes: the oracle's verdict (its
    label, or its reference verdict when another evaluator labels); None when it has none."""
    out = []
    for ep in episodes:
        verdict = getattr(ep, "oracle_success", None)
        if verdict is None:
            verdict = getattr(ep, "success", None)
        out.append((str(ep.trajectory_id), goal_family(str(ep.goal)), verdict))  # type: ignore[attr-defined]
    return out
