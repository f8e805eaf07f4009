"""What one round of the pipeline produced, and the per-round table the demo prints.

A :class:`RoundResult` holds the manifests of a round's stages (collect, label, version, train,
evaluate, register), the collections an asynchronous learner round merged into it, and its
timings; :meth:`RoundResult.row` and :func:`format_rounds` turn results into the per-round
figures. It lives apart from :mod:`distrl_tasks.orchestration.pipeline`, which runs the rounds
(synchronously or with an actor thread) and re-exports both names, because reading and reporting a
finished round needs none of that control flow.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RoundResult:
    """The manifests of one round and how long it took."""

    round: int
    collect: dict[str, Any] = field(default_factory=dict)
    label: dict[str, Any] = field(default_factory=dict)
    version: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    evaluate: dict[str, Any] = field(default_factory=dict)
    register: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    collected_s: float = 0.0  # when its collection finished, seconds since the rounds started
    finished_s: float = 0.0  # when it was registered, seconds since the rounds started
    # asynchronous mode: the earlier collections the learner took with this one (labeled and in
    # the replay window, not trained on separately), oldest first
    merged: list[dict[str, Any]] = field(default_factory=list)

    @property
    def collects(self) -> list[dict[str, Any]]:
        """Every collect manifest this round learned from first: merged ones, then its own."""
        return [*self.merged, self.collect]

    def row(self) -> dict[str, Any]:
        """One line of the per-round table (collection figures summed over merged rounds)."""
        trajectories = sum(int(c.get("trajectories", 0)) for c in self.collects)
        successes = sum(
            float(c.get("success_rate", 0.0)) * int(c.get("trajectories", 0)) for c in self.collects
        )
        steps_s = [float(c["steps_per_s"]) for c in self.collects if "steps_per_s" in c]
        return {
            "round": self.round,
            "train_success": successes / trajectories if trajectories else 0.0,
            "test_success": self.evaluate.get("success_rate", 0.0),
            "test_invalid": self.evaluate.get("invalid_rate", 0.0),
            "trajectories": trajectories,
            "steps_per_s": statistics.fmean(steps_s) if steps_s else 0.0,
            "version": self.register.get("version"),
            "champion": self.register.get("champion"),
            "seconds": self.seconds,
        }


def format_rounds(results: list[RoundResult], sft_success: float | None = None) -> str:
    """The per-round table the demo prints."""
    head = (
        f"{'round':>5} {'train succ':>10} {'test succ':>9} {'invalid':>7} {'trajs':>6} "
        f"{'steps/s':>8} {'version':>7} {'champion':>8} {'wall s':>7}"
    )
    lines = [head, "-" * len(head)]
    if sft_success is not None:
        lines.append(f"{'SFT':>5} {'':>10} {sft_success:>9.1%}")
    for res in results:
        row = res.row()
        lines.append(
            f"{row['round']:>5} {row['train_success']:>10.1%} {row['test_success']:>9.1%} "
            f"{row['test_invalid']:>7.1%} {row['trajectories']:>6} {row['steps_per_s']:>8.1f} "
            f"{row['version']!s:>7} {row['champion']!s:>8} {row['seconds']:>7.0f}"
        )
    return "\n".join(lines)
