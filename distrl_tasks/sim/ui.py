"""The view tree of a simulated screen: one structure for pixels, hit-tests and uiautomator XML.

Apps describe each screen as a tree of :class:`Node` in logical pixels (1080x2400); the device's
display is that layout times the render scale (270x600 at 0.25), and everything a client sees
over ADB (screencap, ``wm size``, uiautomator bounds, ``input`` coordinates) is in display
pixels (see :meth:`distrl_tasks.sim.phone.Phone.display_size`). The same tree
is drawn into the screenshot (:mod:`distrl_tasks.sim.render`), searched by taps, and serialized
as ``uiautomator dump`` XML, so what an agent sees, what it can touch and what the hierarchy says
always agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

SCREEN_W = 1080
SCREEN_H = 2400
STATUS_BAR_H = 84
NAV_BAR_H = 126
CONTENT_TOP = STATUS_BAR_H
CONTENT_BOTTOM = SCREEN_H - NAV_BAR_H

Bounds = tuple[int, int, int, int]  # x1, y1, x2, y2 in logical pixels, x2/y2 exclusive


@dataclass(frozen=True)
class Style:
    """How a node is drawn. Colors are ``#rrggbb`` strings; ``None`` draws nothing."""

    bg: str | None = None  # fill color of the node's box
    fg: str = "#202124"  # text color
    size: int = 40  # font size in logical pixels
    bold: bool = False  # heavier text (drawn twice, offset by one pixel)
    align: str = "left"  # left | center | right
    radius: int = 0  # corner radius of the box
    border: str | None = None  # outline color
    icon: str | None = None  # a glyph drawn as a round badge (first letter of it) left of text
    icon_bg: str = "#1a73e8"  # badge color


@dataclass
class Node:
    """One view. ``action`` is what a tap on it does, as a token the owning app interprets."""

    cls: str = "android.widget.FrameLayout"
    bounds: Bounds = (0, 0, SCREEN_W, SCREEN_H)
    text: str = ""
    resource_id: str = ""
    content_desc: str = ""
    clickable: bool = False
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    checkable: bool = False
    checked: bool = False
    editable: bool = False  # a text field: a tap focuses it, `input text` types into it
    hint: str = ""  # greyed placeholder drawn when an editable field is empty
    action: str | None = None  # app-specific token dispatched on tap
    style: Style = field(default_factory=Style)
    children: list[Node] = field(default_factory=list)

    def add(self, *nodes: Node) -> Node:
        self.children.extend(nodes)
        return self

    def walk(self):
        """Yield this node and all descendants, depth-first, in drawing order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, *, resource_id: str | None = None, text: str | None = None) -> Node | None:
        """First node with the given resource-id and/or exact text."""
        for node in self.walk():
            if resource_id is not None and node.resource_id != resource_id:
                continue
            if text is not None and node.text != text:
                continue
            return node
        return None


def contains(bounds: Bounds, x: float, y: float) -> bool:
    x1, y1, x2, y2 = bounds
    return x1 <= x < x2 and y1 <= y < y2


def hit_test(root: Node, x: float, y: float) -> Node | None:
    """The topmost clickable or editable node under (x, y), as Android dispatches a tap.

    Later siblings are drawn above earlier ones, so they win; a child wins over its parent.
    """
    found: Node | None = None

    def visit(node: Node) -> None:
        nonlocal found
        if not contains(node.bounds, x, y):
            return
        if node.clickable or node.editable:
            found = node
        for child in node.children:
            visit(child)

    visit(root)
    return found


def signature(root: Node) -> str:
    """A stable digest of everything that affects the pixels and the hierarchy of a tree."""
    h = hashlib.blake2b(digest_size=16)
    for node in root.walk():
        h.update(
            repr(
                (
                    node.cls,
                    node.bounds,
                    node.text,
                    node.resource_id,
                    node.content_desc,
                    node.focused,
                    node.checked,
                    node.hint,
                    node.style,
                    len(node.children),
                )
            ).encode()
        )
    return h.hexdigest()


def _bool(v: bool) -> str:
    return "true" if v else "false"


def to_uiautomator_xml(root: Node, package: str, rotation: int = 0, scale: float = 1.0) -> str:
    """Serialize the tree as ``uiautomator dump`` writes it (same element and attribute names).

    ``scale`` maps logical pixels to display pixels with the renderer's rounding, so the bounds
    a device reports are exactly where the screenshot draws the node.
    """
    out: list[str] = [
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>",
        f'<hierarchy rotation="{rotation}">',
    ]

    def emit(node: Node, index: int, depth: int) -> None:
        x1, y1, x2, y2 = node.bounds if scale == 1.0 else (round(v * scale) for v in node.bounds)
        attrs = (
            f"index={quoteattr(str(index))} text={quoteattr(node.text)} "
            f"resource-id={quoteattr(node.resource_id)} class={quoteattr(node.cls)} "
            f"package={quoteattr(package)} content-desc={quoteattr(node.content_desc)} "
            f'checkable="{_bool(node.checkable)}" checked="{_bool(node.checked)}" '
            f'clickable="{_bool(node.clickable or node.editable)}" enabled="true" '
            f'focusable="{_bool(node.focusable or node.editable)}" '
            f'focused="{_bool(node.focused)}" scrollable="{_bool(node.scrollable)}" '
            f'long-clickable="false" password="false" selected="false" '
            f'bounds="[{x1},{y1}][{x2},{y2}]"'
        )
        pad = "  " * depth
        if not node.children:
            out.append(f"{pad}<node {attrs} />")
            return
        out.append(f"{pad}<node {attrs}>")
        for i, child in enumerate(node.children):
            emit(child, i, depth + 1)
        out.append(f"{pad}</node>")

    emit(root, 0, 1)
    out.append("</hierarchy>")
    return "\n".join(out)
