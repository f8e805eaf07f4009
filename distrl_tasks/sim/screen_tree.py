"""An app's :class:`~distrl_tasks.sim.app.Screen` as the full view tree a phone shows.

The app gives a fixed header and a body; the phone scrolls the body under the header, clips it
to the content area, marks the focused field, and stacks the system bars and any overlays (a
live-world interruption, the notification shade) on top. The body's nodes are copied (moved and
clipped); the header's are used as they are, and only their ``focused`` flag is set, so the
phone caches the tree by its state version, as it did when this lived in ``phone.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from distrl_tasks.sim.app import Screen
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_H, SCREEN_W, Node, Style

SCROLL_SLACK = 40  # logical px a scrollable body may move past its last row


def header_bottom(screen: Screen) -> int:
    """Where the scrolling body starts: below the lowest header node (else the content top)."""
    return max((n.bounds[3] for n in screen.header), default=CONTENT_TOP)


def max_scroll(screen: Screen) -> int:
    """The largest scroll offset of ``screen``'s body: 0 when it fits the viewport."""
    top = header_bottom(screen)
    content_h = max((n.bounds[3] for n in screen.body), default=top) - top
    viewport = CONTENT_BOTTOM - top
    # a little slack past the last row, only when there is something to scroll at all
    return content_h - viewport + SCROLL_SLACK if content_h > viewport else 0


def view_tree(screen: Screen, *, offset: int, focus: str | None, on_top: Sequence[Node]) -> Node:
    """The root of the phone's view tree: ``screen`` scrolled by ``offset`` and clipped, the
    editable node whose resource id is ``focus`` marked focused, then ``on_top`` in order."""
    root = Node(cls="android.widget.FrameLayout", bounds=(0, 0, SCREEN_W, SCREEN_H))
    top = header_bottom(screen)
    content = Node(
        cls="android.widget.FrameLayout",
        bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_BOTTOM),
        resource_id="android:id/content",
        style=Style(bg=screen.background),
    )
    body = Node(
        cls="android.widget.ScrollView",
        bounds=(0, top, SCREEN_W, CONTENT_BOTTOM),
        scrollable=True,
    )
    for node in screen.body:
        clipped = _shift_clip(node, -offset, top, CONTENT_BOTTOM)
        if clipped is not None:
            body.add(clipped)
    content.add(body, *screen.header)
    for node in (*screen.header, *body.children):
        _mark_focus(node, focus)
    root.add(content, *on_top)
    return root


def _shift_clip(node: Node, dy: int, top: int, bottom: int) -> Node | None:
    """Copy of ``node`` moved by ``dy`` and clipped to [top, bottom); None if fully outside."""
    x1, y1, x2, y2 = node.bounds
    y1, y2 = y1 + dy, y2 + dy
    if y2 <= top or y1 >= bottom:
        return None
    kids = [c for c in (_shift_clip(ch, dy, top, bottom) for ch in node.children) if c]
    clone = Node(**{**node.__dict__, "bounds": (x1, max(y1, top), x2, min(y2, bottom))})
    clone.children = kids
    return clone


def _mark_focus(node: Node, focus: str | None) -> None:
    for n in node.walk():
        if n.editable:
            n.focused = focus is not None and n.resource_id == focus
