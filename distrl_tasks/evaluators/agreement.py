"""How often two evaluators agree on the same trajectories (e.g. Gemini vs the sim oracle).

Pairs where either side is unlabeled are counted separately and left out of accuracy and
Cohen's kappa, which are computed on the 2x2 success/failure table of the remaining pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from distrl_tasks.evaluators.evaluator import STATUSES, Verdict

Label = Verdict | str | bool | None


def to_status(label: Label) -> str:
    """Normalise a verdict, a status string, a bool (oracle ``success``) or ``None``.

    Raises:
        ValueError: an unknown status string.
    """
    if isinstance(label, Verdict):
        return label.status
    if label is None:
        return "unlabeled"
    if isinstance(label, bool):
        return "success" if label else "failure"
    if isinstance(label, str) and label in STATUSES:
        return label
    raise ValueError(f"not a verdict label: {label!r} (expected one of {STATUSES}, bool or None)")


@dataclass(frozen=True)
class AgreementReport:
    """Cross-tabulation of two evaluators' labels.

    Attributes:
        name_a: rows; name_b: columns.
        counts: ``counts[(status_a, status_b)]`` for every status pair, zeros included.
    """

    name_a: str
    name_b: str
    counts: dict[tuple[str, str], int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def compared(self) -> int:
        """Pairs where both evaluators gave a label."""
        return sum(
            self.counts[(a, b)] for a in ("success", "failure") for b in ("success", "failure")
        )

    @property
    def unlabeled_a(self) -> int:
        return sum(self.counts[("unlabeled", b)] for b in STATUSES)

    @property
    def unlabeled_b(self) -> int:
        return sum(self.counts[(a, "unlabeled")] for a in STATUSES)

    @property
    def accuracy(self) -> float | None:
        """Share of compared pairs with the same label; ``None`` when nothing was compared."""
        if not self.compared:
            return None
        agree = self.counts[("success", "success")] + self.counts[("failure", "failure")]
        return agree / self.compared

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa on the 2x2 table; ``None`` when undefined (no pairs, or both sides
        gave one and the same label throughout, so chance agreement is 1)."""
        n = self.compared
        if not n:
            return None
        c = self.counts
        ss, sf = c[("success", "success")], c[("success", "failure")]
        fs, ff = c[("failure", "success")], c[("failure", "failure")]
        observed = (ss + ff) / n
        chance = ((ss + sf) * (ss + fs) + (fs + ff) * (sf + ff)) / (n * n)
        if chance >= 1.0:
            return None
        return (observed - chance) / (1.0 - chance)

    def success_rate(self, side: str) -> float | None:
        """Success share among ``side``'s (``"a"`` or ``"b"``) labeled verdicts."""
        if side not in ("a", "b"):
            raise ValueError(f"side must be 'a' or 'b', got {side!r}")
        pick = 0 if side == "a" else 1
        labeled = {k: v for k, v in self.counts.items() if k[pick] != "unlabeled"}
        n = sum(labeled.values())
        return sum(v for k, v in labeled.items() if k[pick] == "success") / n if n else None

    def to_markdown(self) -> str:
        """A small report: the 3x3 table, then accuracy and kappa."""

        def fmt(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        head = "| " + self.name_a + " \\ " + self.name_b + " | " + " | ".join(STATUSES) + " |"
        lines = [f"### Agreement: {self.name_a} vs {self.name_b}", "", head, "|---" * 4 + "|"]
        for a in STATUSES:
            lines.append(
                f"| {a} | " + " | ".join(str(self.counts[(a, b)]) for b in STATUSES) + " |"
            )
        lines += [
            "",
            f"- trajectories: {self.total}; compared (both labeled): {self.compared}",
            f"- unlabeled: {self.name_a} {self.unlabeled_a}, {self.name_b} {self.unlabeled_b}",
            f"- accuracy: {fmt(self.accuracy)}; Cohen's kappa: {fmt(self.kappa)}",
            f"- success rate: {self.name_a} {fmt(self.success_rate('a'))}, "
            f"{self.name_b} {fmt(self.success_rate('b'))}",
        ]
        return "\n".join(lines) + "\n"


def agreement(
    a: Sequence[Label], b: Sequence[Label], *, name_a: str = "a", name_b: str = "b"
) -> AgreementReport:
    """Compare two evaluators' labels on the same trajectories, in the same order.

    Raises:
        ValueError: the sequences differ in length, or hold an unknown label.
    """
    if len(a) != len(b):
        raise ValueError(f"label lists differ in length: {name_a} {len(a)} vs {name_b} {len(b)}")
    counts = {(x, y): 0 for x in STATUSES for y in STATUSES}
    for i, (la, lb) in enumerate(zip(a, b, strict=True)):
        try:
            counts[(to_status(la), to_status(lb))] += 1
        except ValueError as exc:
            raise ValueError(f"trajectory {i}: {exc}") from exc
    return AgreementReport(name_a, name_b, counts)
