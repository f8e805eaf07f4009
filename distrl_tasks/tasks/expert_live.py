"""How the expert copes with the live world, from the uiautomator XML alone.

Before its plan acts, the expert clears what the live-world dynamics put in the way: it waits
out a loading spinner, swipes a heads-up notification away, and dismisses dialogs, sheets,
banners and interstitials with their *declining* button ("Don't allow", "No thanks", "Wait",
...), never with an unlabeled close glyph (which may be a fake that opens an ad). When a site
shows results for a rewritten query ("Showing results for ..."), it takes the "Search instead
for <original>" link. Plans skip results marked "Sponsored" or "Ad" (see :func:`is_sponsored`).
"""

from __future__ import annotations

from distrl_tasks.protocol.ui_dump import Screen, UINode
from distrl_tasks.tasks.expert_skills import Act

# the declining answer of every interruption the simulator (and Android) shows
DISMISS_LABELS = (
    "don't allow",
    "use without an account",
    "no thanks",
    "not now",
    "wait",
    "reject all",
    "continue in browser",
)
AD_LABELS = ("sponsored", "ad")


def is_loading(screen: Screen) -> bool:
    """A page that has not painted yet: a progress spinner and nothing else to act on."""
    return screen.first(lambda n: n.cls.endswith("ProgressBar")) is not None


def interruption(screen: Screen) -> Act | None:
    """The action that clears an interruption on ``screen``, or None when there is none."""
    heads_up = screen.first(lambda n: n.rid.endswith("systemui:id/heads_up"))
    if heads_up is not None:
        x1, y1, x2, y2 = heads_up.bounds
        cy = (y1 + y2) / 2
        return Act("swipe", (x1 + x2) / 2, cy, x2 - 1, cy, why="swipe the notification away")
    for label in DISMISS_LABELS:
        button = screen.first(
            lambda n, lab=label: n.clickable and n.cls.endswith("Button") and n.label.lower() == lab
        )
        if button is not None:
            return Act.tap(button, f"dismiss: {button.label}")
    instead = screen.first(
        lambda n: n.clickable and n.label.lower().startswith("search instead for ")
    )
    if instead is not None:
        return Act.tap(instead, "results are for a rewritten query: search the original")
    return None


def is_sponsored(screen: Screen, node: UINode) -> bool:
    """Whether ``node`` is an ad: its label says so, or an "Ad"/"Sponsored" tag sits on it."""
    if node.label.lower().startswith("sponsored"):
        return True
    x1, y1, x2, y2 = node.bounds
    gap, slack = screen.height // 60, screen.width // 18  # 40 and 60 px on a 1080x2400 layout
    for tag in screen.nodes:
        if tag.text.strip().lower() in AD_LABELS:
            tx1, ty1, tx2, ty2 = tag.bounds
            inside = x1 <= tx1 and tx2 <= x2 + 3 * slack and y1 <= ty1 and ty2 <= y2
            just_above = 0 <= y1 - ty2 <= gap and abs(tx1 - x1) < slack  # a tag line over a link
            if inside or just_above:
                return True
    return False
