"""A uiautomator XML dump parsed into a flat list of nodes with lookups (what the scripted
expert reads, and where the screen's actionable elements come from)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from distrl_tasks.protocol.actions import ActionType, format_action, parse_action, tap

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


@dataclass(frozen=True)
class UINode:
    """One node of the dump, with the attributes an agent can use."""

    text: str
    desc: str
    rid: str
    cls: str
    bounds: tuple[int, int, int, int]
    clickable: bool
    focused: bool
    checked: bool
    scrollable: bool

    @property
    def editable(self) -> bool:
        return self.cls.endswith("EditText")

    @property
    def center(self) -> tuple[int, int]:
        x1, y1, x2, y2 = self.bounds
        return (x1 + x2) // 2, (y1 + y2) // 2

    @property
    def label(self) -> str:
        """Text, else content-desc: how a person would name the node."""
        return self.text or self.desc

    @property
    def visible(self) -> bool:
        x1, y1, x2, y2 = self.bounds
        return x2 > x1 and y2 > y1


@dataclass(frozen=True)
class Screen:
    """A parsed dump: the foreground package, screen size and nodes in document order."""

    package: str
    width: int
    height: int
    nodes: tuple[UINode, ...]

    @classmethod
    def parse(cls, xml: str) -> Screen:
        """Parse ``uiautomator dump`` XML.

        Raises:
            ValueError: the text is not a hierarchy dump.
        """
        try:
            root = ET.fromstring(xml.encode() if isinstance(xml, str) else xml)
        except ET.ParseError as exc:
            raise ValueError(f"not a uiautomator dump: {exc}") from exc
        nodes: list[UINode] = []
        package = ""
        for el in root.iter("node"):
            m = _BOUNDS.fullmatch(el.get("bounds", ""))
            if m is None:
                continue
            package = package or el.get("package", "")
            nodes.append(
                UINode(
                    text=el.get("text", ""),
                    desc=el.get("content-desc", ""),
                    rid=el.get("resource-id", ""),
                    cls=el.get("class", ""),
                    bounds=tuple(int(v) for v in m.groups()),  # type: ignore[arg-type]
                    clickable=el.get("clickable") == "true",
                    focused=el.get("focused") == "true",
                    checked=el.get("checked") == "true",
                    scrollable=el.get("scrollable") == "true",
                )
            )
        if not nodes:
            raise ValueError("uiautomator dump holds no nodes")
        # the root view spans the display (children may overflow it, e.g. a clipped icon)
        width, height = nodes[0].bounds[2], nodes[0].bounds[3]
        return cls(package, width, height, tuple(nodes))

    # ----- lookups -----------------------------------------------------------------------
    def where(self, pred: Callable[[UINode], bool]) -> list[UINode]:
        return [n for n in self.nodes if n.visible and pred(n)]

    def first(self, pred: Callable[[UINode], bool]) -> UINode | None:
        found = self.where(pred)
        return found[0] if found else None

    def by_rid(self, suffix: str) -> UINode | None:
        """First node whose resource-id ends with ``suffix`` (e.g. ``":id/url_bar"``)."""
        return self.first(lambda n: n.rid.endswith(suffix))

    def by_label(self, label: str, *, exact: bool = True, clickable: bool = True) -> UINode | None:
        """First (clickable) node whose text or content-desc is / contains ``label``."""
        low = label.lower()

        def match(n: UINode) -> bool:
            if clickable and not (n.clickable or n.editable):
                return False
            names = (n.text.lower(), n.desc.lower())
            return low in names if exact else any(low in s for s in names)

        return self.first(match)

    def fields(self) -> list[UINode]:
        return self.where(lambda n: n.editable)

    def focused_field(self) -> UINode | None:
        return self.first(lambda n: n.editable and n.focused)

    def clickables(self) -> list[UINode]:
        return self.where(lambda n: n.clickable)

    def has_text(self, text: str) -> bool:
        low = text.lower()
        return any(low in n.text.lower() or low in n.desc.lower() for n in self.nodes)


# ----- the screen's actionable elements ---------------------------------------------------------

MAX_LABEL_CHARS = 24  # a label longer than this is cut (a search result's whole snippet is noise)


@dataclass(frozen=True)
class Element:
    """Something on the screen an agent can tap: its label and its centre rounded as the action
    format writes a point (normalised ``(y, x)``, 4 decimals), so a tap on it parses back to
    exactly that point."""

    label: str
    point: tuple[float, float]  # (y, x) in [0, 1], rounded as the action format writes it
    editable: bool
    size: tuple[float, float] = (0.0, 0.0)  # (height, width) as fractions of the screen

    def tap_action(self) -> str:
        """The AutoUI string of a tap on the element's centre (short plan)."""
        return format_action(tap(*self.point), plan="")


def actionable_elements(xml: str, limit: int | None = None) -> list[Element]:
    """The tappable elements of a ``uiautomator dump``: clickable or editable visible nodes
    whose centre lies on the display, in document order (top of the view tree first), one per
    centre (the first node wins), at most ``limit``. Labels are the node's text, else its
    content-desc, whitespace collapsed and cut to :data:`MAX_LABEL_CHARS`; a node with neither
    is kept with an empty label (an icon can still be the target).

    Deterministic: the same dump gives the same list. An unreadable dump gives no elements
    (the caller acts without them) rather than an error.
    """
    try:
        screen = Screen.parse(xml)
    except ValueError:
        return []
    w, h = max(screen.width, 1), max(screen.height, 1)
    out: list[Element] = []
    seen: set[tuple[float, float]] = set()
    for node in screen.where(lambda n: n.clickable or n.editable):
        cx, cy = node.center
        if not (0 <= cx < w and 0 <= cy < h):
            continue
        point = (round(cy / h, 4), round(cx / w, 4))
        if point in seen:
            continue
        seen.add(point)
        label = " ".join(node.label.split())[:MAX_LABEL_CHARS]
        x1, y1, x2, y2 = node.bounds
        size = (round(min(y2 - y1, h) / h, 4), round(min(x2 - x1, w) / w, 4))
        out.append(Element(label, point, node.editable, size))
        if limit is not None and len(out) >= limit:
            break
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) >= 3}


def goal_match(element: Element, goal: str) -> float:
    """How much ``goal`` names ``element``: the goal's words (3+ letters) in its label, plus one
    half for a text field (where a query goes)."""
    return len(_words(goal) & _words(element.label)) + 0.5 * element.editable


def goal_elements(xml: str, goal: str, limit: int) -> list[Element]:
    """At most ``limit`` actionable elements for the pointer, the ones the goal names first.

    Each element scores the number of the goal's words (3+ letters) in its label, plus one half
    for a text field (where a query goes); the ``limit`` best (ties: document order) are
    returned in document order. Deterministic, so a stored step's list is rebuilt exactly.
    """
    if limit <= 0:
        return []
    elements = actionable_elements(xml)
    scores = [goal_match(e, goal) for e in elements]
    best = sorted(range(len(elements)), key=lambda i: (-scores[i], i))[:limit]
    return [elements[i] for i in sorted(best)]


def pointed_element(action: str, elements: Sequence[Element]) -> int | None:
    """Index of the element whose centre ``action`` taps (the string a pointer writes when it
    picks that element), or None: the action is no such tap or no element is listed."""
    if not elements:
        return None
    parsed = parse_action(action)
    if parsed.action_type is not ActionType.DUAL_POINT or parsed.touch_point != parsed.lift_point:
        return None
    for k, element in enumerate(elements):
        if parsed.touch_point == element.point:
            return k
    return None


def element_rows(elements: Sequence[Element]) -> list[dict]:
    """The elements as the shards' ``elements`` column stores them (one struct each)."""
    return [
        {"label": e.label, "y": e.point[0], "x": e.point[1], "height": e.size[0],
         "width": e.size[1], "editable": e.editable}
        for e in elements
    ]  # fmt: skip


def elements_from_rows(rows: Sequence[dict] | None) -> tuple[Element, ...]:
    """Elements back from :func:`element_rows`' structs (None, a null cell: no elements).

    Points are re-rounded to the action format's 4 decimals (the column stores float32), so a
    stored element's tap is spelled exactly as it was when the step was taken. The cell may be a
    list (Arrow's ``to_pylist``) or a numpy object array (pandas rows), so it is never truth-tested.
    """
    if rows is None or len(rows) == 0:
        return ()
    return tuple(
        Element(
            str(r["label"]),
            (round(float(r["y"]), 4), round(float(r["x"]), 4)),
            bool(r["editable"]),
            (round(float(r["height"]), 4), round(float(r["width"]), 4)),
        )
        for r in rows
    )
