"""The simulator's programmatic judge: ``simctl task check`` on the device, at episode end.

Unlike Gemini, the oracle reads the device's true state (app, page, fields), so it must run while
the episode's final state is still on the device, i.e. inside the collector before the next
reset. A check that fails (device offline, timeout, no JSON) is ``unlabeled``, never a silent 0.
"""

from __future__ import annotations

import time

from distrl_tasks.envs.device import Device, DeviceError
from distrl_tasks.evaluators.evaluator import Verdict, unlabeled

NAME = "oracle"


class OracleEvaluator:
    """Labels an episode from the simulated device's own success predicate.

    Args:
        labels: whether its verdicts become the trajectories' labels. False makes it a
            reference: the verdict of every episode is kept beside another evaluator's labels
            (Gemini's) to measure their agreement, and the rows stay for that evaluator.
    """

    name = NAME

    def __init__(self, *, labels: bool = True) -> None:
        self.labels = labels

    def judge_device(self, device: Device) -> Verdict:
        """Verdict for the task currently set on ``device`` (reward 1 success / 0 failure)."""
        start = time.monotonic()
        try:
            verdict = device.check_task()
        except DeviceError as exc:
            return unlabeled(f"task check failed: {exc}", evaluator=NAME)
        elapsed = time.monotonic() - start
        if verdict.get("error"):
            return unlabeled(f"task check error: {verdict['error']}", evaluator=NAME)
        success = verdict.get("success")
        if not isinstance(success, bool):
            return unlabeled(f"task check gave no boolean 'success': {verdict!r}", evaluator=NAME)
        page = f"{verdict.get('app', '?')}/{verdict.get('page', '?')}"
        return Verdict(
            status="success" if success else "failure",
            reason=f"simctl task check on {device.serial}: final screen {page}",
            evaluator=NAME,
            latency_s=elapsed,
        )
