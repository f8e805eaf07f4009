"""The phone's view tree from an app screen: scrolling, clipping, focus and what sits on top."""

from __future__ import annotations

from distrl_tasks.sim.app import Screen
from distrl_tasks.sim.screen_tree import SCROLL_SLACK, header_bottom, max_scroll, view_tree
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, Node


def field(y1: int, y2: int, rid: str) -> Node:
    return Node(
        cls="android.widget.EditText", bounds=(0, y1, 1080, y2), resource_id=rid, editable=True
    )


def test_header_bottom_and_scroll_limit() -> None:
    header = [Node(bounds=(0, CONTENT_TOP, 1080, 300))]
    assert header_bottom(Screen()) == CONTENT_TOP
    assert header_bottom(Screen(header=header)) == 300
    short = Screen(header=header, body=[Node(bounds=(0, 300, 1080, 900))])
    assert max_scroll(short) == 0  # fits the viewport: nothing to scroll
    tall = Screen(header=header, body=[Node(bounds=(0, 300, 1080, 5000))])
    # content 4700 px below the header, viewport CONTENT_BOTTOM - 300, plus the slack
    assert max_scroll(tall) == 4700 - (CONTENT_BOTTOM - 300) + SCROLL_SLACK


def test_body_scrolls_under_the_header_clipped_with_focus_marked() -> None:
    header = [field(CONTENT_TOP, 300, "search")]
    body = [
        Node(bounds=(0, 300, 1080, 700), text="gone", children=[field(320, 420, "inside")]),
        field(700, 1100, "half"),
        Node(bounds=(0, 4000, 1080, 4400), text="below"),
    ]
    bar = Node(text="bar")
    root = view_tree(
        Screen(header=header, body=body, background="#fff"),
        offset=600,
        focus="half",
        on_top=[bar],
    )
    content, top = root.children
    assert top is bar  # overlays come after the content, in order
    assert content.style.bg == "#fff"
    scroll, search = content.children
    assert search.resource_id == "search" and not search.focused
    # the first row moved above the header and was dropped, children and all; the second was
    # clipped at the header's bottom; the far row is still below the screen
    (half,) = scroll.children
    assert half.resource_id == "half" and half.bounds == (0, 300, 1080, 500)
    assert half.focused
    assert scroll.bounds == (0, 300, 1080, CONTENT_BOTTOM) and scroll.scrollable
    assert body[1].bounds == (0, 700, 1080, 1100) and not body[1].focused  # inputs untouched
