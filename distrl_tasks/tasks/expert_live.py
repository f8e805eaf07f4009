"""How the expert copes with the live world, from the uiautomator XML alone.

Before its plan acts, the expert clears what the live-world dynamics put in the way: it dismisses
dialogs, sheets, banners and interstitials with their *declining* button ("Don't allow", "No
thanks", "Wait", ...), never with an unlabeled close glyph (which may be a fake that opens an
ad). When a site shows results for a rewritten query ("Showing results for ..."), it takes the
"Search instead for <original>" link. It waits out a loading spinner by reading the screen
again, or, when the driver shows the same frame again (a one-step policy gets one observation
per step), with a tap that does nothing (:func:`wait_for_load`). It swipes a heads-up
notification away only when its next action would touch it (:func:`around_heads_up`). Plans skip
results marked "Sponsored" or "Ad" (see :func:`is_sponsored`).
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


def wait_for_load(screen: Screen) -> Act:
    """A step that changes nothing while a page loads: a tap on the status bar between the clock
    and the battery (a slow page paints before the action lands, so a tap on the spinner's spot
    could hit whatever the page puts there)."""
    bar = screen.first(lambda n: n.rid.endswith("systemui:id/status_bar"))
    x1, y1, x2, y2 = bar.bounds if bar is not None else (0, 0, screen.width, screen.height // 30)
    # the upper quarter: a heads-up notification overlaps the status bar's lower part
    return Act(
        "tap",
        (x1 + x2) / 2,
        y1 + (y2 - y1) / 4,
        (x1 + x2) / 2,
        y1 + (y2 - y1) / 4,
        why="wait for the page to load",
    )


def heads_up(screen: Screen) -> UINode | None:
    """The heads-up notification over the top of the screen, if one is shown."""
    return screen.first(lambda n: n.rid.endswith("systemui:id/heads_up"))


def around_heads_up(screen: Screen, act: Act | None) -> tuple[Act | None, bool]:
    """``act`` past a heads-up notification, and whether it is still the planned action.

    A heads-up is not modal and times out after a few inputs, so it is left alone unless ``act``
    would touch it: then a tap goes to the part of its target the notification leaves visible
    (at least :data:`MIN_VISIBLE` px), else the notification is swiped away first (False: the
    plan's action was not performed).
    """
    note = heads_up(screen)
    if note is None or act is None or act.kind not in ("tap", "swipe"):
        return act, True
    x1, y1, x2, y2 = note.bounds
    if not (x1 <= act.x < x2 and y1 <= act.y < y2):
        return act, True
    if act.kind == "tap":
        target = _target_at(screen, note, act.x, act.y)
        if target is not None and target.bounds[3] - y2 >= MIN_VISIBLE:
            y = (y2 + target.bounds[3]) / 2
            return Act("tap", act.x, y, act.x, y, why=act.why + " (below the notification)"), True
    cy = (y1 + y2) / 2
    return Act("swipe", (x1 + x2) / 2, cy, x2 - 1, cy, why="swipe the notification away"), False


MIN_VISIBLE = 40  # px of a target below a heads-up that a tap can hit reliably


def _target_at(screen: Screen, note: UINode, x: float, y: float) -> UINode | None:
    """The smallest clickable or editable node of the page (not of ``note``) under (x, y)."""
    nx1, ny1, nx2, ny2 = note.bounds

    def hit(n: UINode) -> bool:
        x1, y1, x2, y2 = n.bounds
        inside_note = nx1 <= x1 and x2 <= nx2 and ny1 <= y1 and y2 <= ny2
        touch = n.clickable or n.editable
        return touch and not inside_note and x1 <= x < x2 and y1 <= y < y2

    hits = screen.where(hit)
    return min(
        hits, key=lambda n: (n.bounds[2] - n.bounds[0]) * (n.bounds[3] - n.bounds[1]), default=None
    )


def interruption(screen: Screen) -> Act | None:
    """The action that clears a modal interruption on ``screen`` (a dialog, a sheet, a banner,
    a rewritten query), or None when there is none. A heads-up notification is not one: it is
    swiped away only when it is in the way (:func:`clear_heads_up`)."""
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
