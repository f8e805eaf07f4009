"""Curriculum by difficulty: collection draws goals the policy sometimes solves more often.

MobileRL and DART-GUI (their papers; docs/agents-and-algorithms.md, "Curriculum by
difficulty") spend rollouts where they teach most: a goal always solved or never solved gives an
all-success or all-failure group with little signal, while one solved some of the time gives
both outcomes. Here every goal's success rate is measured on the newest
``orchestration.curriculum.window_rounds`` labeled rounds, and goals are drawn with::

    w_g = boost  if attempts_g >= min_attempts and 0 < successes_g / attempts_g < 1
          1      otherwise (solved, never solved, or not tried enough)
    P(g) = (1 - floor) * w_g / sum_k w_k + floor / G

so every goal keeps at least ``floor / G`` of the draws (G goals). Off by default, so the
baselines sample goals uniformly. ``goal_mix: balanced`` multiplies in equal shares per task
family (:func:`family_balanced_weights`), for RL collection as for the bootstrap's demonstrations.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow.compute as pc

from distrl_tasks.config import Config, CurriculumConfig
from distrl_tasks.config.algorithm_specs import algorithm_spec
from distrl_tasks.data.shards import read_verified, verify_shards
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GoalParseError


def goal_weights(
    goals: Sequence[str],
    attempts: Mapping[str, int],
    successes: Mapping[str, int],
    rule: CurriculumConfig,
) -> np.ndarray:
    """``[G]`` draw probabilities of ``goals`` (see the module docstring); they sum to 1.

    Raises:
        ValueError: no goals, or more successes than attempts for a goal.
    """
    if not goals:
        raise ValueError("the curriculum needs at least one goal")
    w = np.ones(len(goals), dtype=np.float64)
    for i, goal in enumerate(goals):
        n, s = int(attempts.get(goal, 0)), int(successes.get(goal, 0))
        if s > n:
            raise ValueError(f"goal {goal!r}: {s} successes in {n} attempts")
        if n >= rule.min_attempts and 0 < s < n:
            w[i] = rule.boost
    return (1.0 - rule.floor) * w / w.sum() + rule.floor / len(goals)


def family_balanced_weights(goals: Sequence[str]) -> np.ndarray:
    """``[G]`` draw probabilities that give every task family the same share of the draws.

    ``P(g) = 1 / (F * n_f(g))``: F families among ``goals`` (by :func:`parse_goal`; goals no
    family reads form one family of their own), ``n_f`` goals in ``g``'s family. The AitW
    General train file is two thirds web searches, so drawing its lines uniformly teaches a
    fine-tuned base mostly searches (and, at a high rate, makes it forget the rest:
    benchmarks/results/2026-11-27-bootstrap-keeps-base.md).

    Raises:
        ValueError: no goals.
    """
    if not goals:
        raise ValueError("family-balanced weights need at least one goal")
    families = []
    for goal in goals:
        try:
            families.append(parse_goal(goal).family)
        except GoalParseError:
            families.append("unknown")
    sizes: dict[str, int] = {}
    for f in families:
        sizes[f] = sizes.get(f, 0) + 1
    return np.array([1.0 / (len(sizes) * sizes[f]) for f in families], dtype=np.float64)


def goal_outcomes(
    labeled_dir: str | os.PathLike, window_rounds: int
) -> tuple[dict[str, int], dict[str, int]]:
    """``(attempts, successes)`` per goal over the newest ``window_rounds`` labeled rounds."""
    shards = verify_shards(labeled_dir).shards
    rounds = sorted({r for s in shards for r in s.rounds})[-window_rounds:]
    if not rounds:
        return {}, {}
    table = read_verified(
        shards, rounds=rounds, split="train", columns=["trajectory_id", "task", "reward", "done"]
    )
    table = table.filter(pc.equal(table.column("done"), True))  # one row per trajectory
    attempts: dict[str, int] = {}
    successes: dict[str, int] = {}
    rewards = table.column("reward").to_pylist()
    for task, reward in zip(table.column("task").to_pylist(), rewards, strict=True):
        if reward is None:
            continue  # unlabeled
        attempts[task] = attempts.get(task, 0) + 1
        successes[task] = successes.get(task, 0) + int(reward > 0)
    return attempts, successes


def attempts_per_goal(cfg: Config) -> int:
    """Attempts each drawn goal gets in a training round: ``algorithm.group.size`` for the
    group-relative algorithms (GRPO, GiGPO), 1 otherwise."""
    return cfg.algorithm.group.size if algorithm_spec(cfg.algorithm.name).groups else 1


def plan_goals(
    goals: list[str],
    serials: list[str],
    episodes: int,
    seed: str,
    probabilities: np.ndarray | None = None,
    group_size: int = 1,
) -> dict[str, list[str]]:
    """``episodes`` goals per device drawn with a seeded RNG (same seed -> same plan).

    Uniform over ``goals`` when ``probabilities`` is None, else weighted by them. With
    ``group_size`` K > 1 (GRPO / GiGPO groups) each drawn goal gets K attempts, dealt round
    robin so a goal's attempts run on different devices at about the same time; every device
    still gets exactly ``episodes`` (the last group is cut short when K does not divide the
    round's episodes).
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    rng = random.Random(seed)
    if group_size == 1:
        if probabilities is None:
            return {s: [rng.choice(goals) for _ in range(episodes)] for s in serials}
        weights = [float(p) for p in probabilities]
        return {s: rng.choices(goals, weights=weights, k=episodes) for s in serials}
    total = episodes * len(serials)
    n_groups = -(-total // group_size)
    if probabilities is None:
        drawn = [rng.choice(goals) for _ in range(n_groups)]
    else:
        drawn = rng.choices(goals, weights=[float(p) for p in probabilities], k=n_groups)
    attempts = [g for g in drawn for _ in range(group_size)][:total]
    n = len(serials)
    return {s: attempts[i::n] for i, s in enumerate(serials)}


def collection_probabilities(
    cfg: Config, goals: list[str], labeled_dir: str | os.PathLike, goal_mix: str
) -> tuple[np.ndarray | None, dict[str, float]]:
    """Draw probabilities for collecting on train goals (None: uniform) and the curriculum's
    summary: the difficulty weights when the curriculum is on, times the family weights for
    ``goal_mix="balanced"`` (renormalised), so either applies alone or both together."""
    probs, info = curriculum_probabilities(cfg, goals, labeled_dir)
    if goal_mix == "balanced":
        balanced = family_balanced_weights(goals)
        probs = balanced if probs is None else probs * balanced / float((probs * balanced).sum())
    return probs, info


def curriculum_probabilities(
    cfg: Config, goals: list[str], labeled_dir: str | os.PathLike
) -> tuple[np.ndarray | None, dict[str, float]]:
    """Draw probabilities for collection (None when the curriculum is off) and a summary."""
    rule = cfg.orchestration.curriculum
    if not rule.enabled:
        return None, {}
    attempts, successes = goal_outcomes(labeled_dir, rule.window_rounds)
    probs = goal_weights(goals, attempts, successes, rule)
    uncertain = [
        i
        for i, g in enumerate(goals)
        if attempts.get(g, 0) >= rule.min_attempts and 0 < successes.get(g, 0) < attempts[g]
    ]
    return probs, {
        "curriculum_goals_uncertain": float(len(uncertain)),
        "curriculum_share_uncertain": float(probs[uncertain].sum()) if uncertain else 0.0,
    }
