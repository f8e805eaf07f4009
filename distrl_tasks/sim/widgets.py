"""View helpers shared by the simulated apps: bars, rows, buttons, fields, chips and tiles.

Every helper returns plain :class:`~distrl_tasks.sim.ui.Node` trees in logical pixels, so a
screen built from them draws, hit-tests and dumps to uiautomator XML like any other. Colors that
stand for a name (avatars, badges, photo tiles) come from a stable hash of that name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from distrl_tasks.sim.app import pick, stable_bytes
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Bounds, Node, Style

if TYPE_CHECKING:
    from distrl_tasks.sim.app import App

PAD = 40  # left/right margin of app and web content, in logical px
APP_BAR_H = 160
PLAIN_BAR_H = 170
VIEWPORT_H = CONTENT_BOTTOM - CONTENT_TOP
UP_ACTION = "nav:up"  # every app bar's back arrow; apps route it to ``phone.back()``
PALETTE = ("#ea4335", "#34a853", "#fbbc04", "#4285f4", "#a142f4", "#f06292", "#00897b", "#ff7043")
TILE_COLORS = ("#5c6bc0", "#26a69a", "#ef6c00", "#8d6e63", "#42a5f5", "#ab47bc", "#66bb6a")


def color_for(label: str) -> str:
    """A badge color that is always the same for the same name."""
    return pick(PALETTE, "color", label)


def tile_color(text: str) -> str:
    """A picture-tile color that is always the same for the same text."""
    return TILE_COLORS[stable_bytes(text)[0] % len(TILE_COLORS)]


def view(
    bounds: Bounds,
    text: str = "",
    *,
    cls: str = "android.widget.TextView",
    rid: str = "",
    desc: str = "",
    action: str | None = None,
    **style: Any,
) -> Node:
    """One view; clickable exactly when it has an action. ``style`` are :class:`Style` fields."""
    return Node(
        cls=cls,
        bounds=bounds,
        text=text,
        resource_id=rid,
        content_desc=desc,
        clickable=action is not None,
        action=action,
        style=Style(**style),
    )


def button(
    bounds: Bounds,
    text: str,
    action: str,
    *,
    rid: str = "",
    desc: str = "",
    bg: str | None = "#1a73e8",
    fg: str = "#ffffff",
    size: int = 42,
    radius: int = 40,
    bold: bool = True,
    cls: str = "android.widget.Button",
) -> Node:
    """A clickable button with centered text (its content-desc defaults to the text)."""
    return Node(
        cls=cls,
        bounds=bounds,
        text=text,
        resource_id=rid,
        content_desc=desc or text,
        clickable=True,
        action=action,
        style=Style(bg=bg, fg=fg, size=size, align="center", radius=radius, bold=bold),
    )


def search_field(
    app: App,
    rid: str,
    hint: str,
    y: int = CONTENT_TOP + 24,
    *,
    x1: int = PAD,
    x2: int = SCREEN_W - PAD,
    height: int = 128,
    bg: str = "#f1f3f4",
) -> Node:
    """A rounded single-line text field bound to ``app.fields[rid]``."""
    return Node(
        cls="android.widget.EditText",
        bounds=(x1, y, x2, y + height),
        text=app.field_text(rid),
        resource_id=rid,
        hint=hint,
        editable=True,
        focused=app.phone.focus == rid and app.phone.front is app,
        style=Style(bg=bg, size=44, radius=height // 2),
    )


def up_button(top: int, bottom: int, fg: str = "#202124") -> Node:
    """The toolbar's back arrow ("Navigate up")."""
    return Node(
        cls="android.widget.ImageButton",
        bounds=(16, top + 20, 136, bottom - 20),
        content_desc="Navigate up",
        clickable=True,
        action=UP_ACTION,
        style=Style(icon="@back", icon_bg=fg, size=44),
    )


def app_bar(
    title: str,
    *,
    color: str = "#ffffff",
    fg: str = "#202124",
    up: bool = True,
    actions: Sequence[tuple[str, str, str]] = (),
    rid: str = "",
) -> Node:
    """A toolbar with an optional "Navigate up" arrow, a title and icon buttons on the right.

    ``actions`` are ``(glyph, content_desc, action)`` triples drawn right to left, where a glyph
    is a renderer icon name such as ``"@search"`` or ``"@menu"``.
    """
    top, bottom = CONTENT_TOP, CONTENT_TOP + APP_BAR_H
    bar = Node(cls="android.view.ViewGroup", bounds=(0, top, SCREEN_W, bottom), resource_id=rid)
    bar.style = Style(bg=color)
    x = PAD
    if up:
        bar.add(up_button(top, bottom, fg))
        x = 160
    right = SCREEN_W - 16
    for glyph, desc, action in actions:
        bar.add(
            Node(
                cls="android.widget.ImageButton",
                bounds=(right - 130, top + 20, right, bottom - 20),
                content_desc=desc,
                clickable=True,
                action=action,
                style=Style(icon=glyph, icon_bg=fg, size=50),
            )
        )
        right -= 140
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(x, top, right, bottom),
            text=title,
            style=Style(fg=fg, size=54, bold=True),
        )
    )
    return bar


def list_item(
    y: int,
    title: str,
    subtitle: str = "",
    *,
    action: str | None = None,
    icon: str | None = None,
    icon_bg: str = "#1a73e8",
    height: int = 170,
    rid: str = "",
    trailing: str = "",
    x1: int = 0,
    x2: int = SCREEN_W,
) -> Node:
    """A clickable two-line row (title over grey subtitle) with an optional badge and right text.

    The row itself carries the action and the title as content-desc; its children hold the text.
    """
    row = Node(
        cls="android.widget.LinearLayout",
        bounds=(x1, y, x2, y + height),
        resource_id=rid,
        content_desc=title,
        clickable=action is not None,
        action=action,
    )
    left = x1 + PAD
    if icon:
        row.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(left - 16, y + 20, left + 120, y + height - 20),
                style=Style(icon=icon, icon_bg=icon_bg, size=60),
            )
        )
        left += 140
    right = x2 - PAD - (len(trailing) * 22 + 40 if trailing else 0)
    mid = y + (height // 2 if subtitle else height)
    row.add(
        Node(
            cls="android.widget.TextView",
            bounds=(left, y + (12 if subtitle else 0), right, mid),
            text=title,
            style=Style(size=44, fg="#202124"),
        )
    )
    if subtitle:
        row.add(
            Node(
                cls="android.widget.TextView",
                bounds=(left, mid, right, y + height - 12),
                text=subtitle,
                style=Style(size=36, fg="#5f6368"),
            )
        )
    if trailing:
        row.add(
            Node(
                cls="android.widget.TextView",
                bounds=(right, y, x2 - PAD, y + height),
                text=trailing,
                style=Style(size=36, fg="#5f6368", align="right"),
            )
        )
    return row


def chip(bounds: Bounds, text: str, action: str, *, selected: bool = False) -> Node:
    """A rounded filter chip."""
    return Node(
        cls="android.widget.Button",
        bounds=bounds,
        text=text,
        content_desc=text,
        clickable=True,
        action=action,
        style=Style(
            bg="#e8f0fe" if selected else "#ffffff",
            fg="#1967d2" if selected else "#3c4043",
            border="#dadce0",
            radius=(bounds[3] - bounds[1]) // 2,
            size=38,
            align="center",
        ),
    )


def section_header(y: int, text: str, color: str = "#1a73e8") -> Node:
    """A small colored heading between groups of rows."""
    return Node(
        cls="android.widget.TextView",
        bounds=(PAD, y, SCREEN_W - PAD, y + 100),
        text=text,
        style=Style(size=38, fg=color, bold=True),
    )


def switch_row(
    y: int, label: str, checked: bool, action: str, *, rid: str = "", height: int = 170
) -> list[Node]:
    """A setting with an on/off switch: the labelled row and the switch both flip it on tap."""
    knob_x = SCREEN_W - PAD - 70 if checked else SCREEN_W - PAD - 150
    track = Node(
        cls="android.widget.Switch",
        bounds=(SCREEN_W - PAD - 150, y + height // 2 - 40, SCREEN_W - PAD, y + height // 2 + 40),
        resource_id="android:id/switch_widget",
        content_desc=label,
        clickable=True,
        checkable=True,
        checked=checked,
        action=action,
        style=Style(bg="#1a73e8" if checked else "#bdc1c6", radius=40),
    )
    track.add(
        Node(
            cls="android.view.View",
            bounds=(knob_x + 6, y + height // 2 - 34, knob_x + 74, y + height // 2 + 34),
            style=Style(bg="#ffffff", radius=34),
        )
    )
    row = Node(
        cls="android.widget.Switch",
        bounds=(PAD - 16, y, SCREEN_W - PAD - 170, y + height),
        text=label,
        resource_id=rid,
        clickable=True,
        checkable=True,
        checked=checked,
        action=action,
        style=Style(size=44, fg="#202124"),
    )
    return [row, track]


def plain_app_bar(title: str, bg: str = "#ffffff", fg: str = "#202124") -> Node:
    """A title strip with no buttons (the small system apps' header)."""
    bounds = (0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + PLAIN_BAR_H)
    return view(bounds, title, rid="android:id/title", bg=bg, fg=fg, size=58, bold=True)


def two_line_row(
    y: int, title: str, subtitle: str, action: str, icon: str, color: str, dark: bool = False
) -> Node:
    """A clickable list row with a letter avatar, a bold title and a grey second line."""
    row = view((0, y, SCREEN_W, y + 180), cls="android.view.ViewGroup", desc=title, action=action)
    return row.add(
        view(
            (PAD - 16, y + 30, PAD + 124, y + 150),
            cls="android.widget.ImageView",
            icon=icon,
            icon_bg=color,
            size=72,
        ),
        view(
            (PAD + 150, y + 25, SCREEN_W - PAD, y + 95),
            title,
            size=46,
            bold=True,
            fg="#ffffff" if dark else "#202124",
        ),
        view(
            (PAD + 150, y + 95, SCREEN_W - PAD, y + 160),
            subtitle,
            size=38,
            fg="#aaaaaa" if dark else "#5f6368",
        ),
    )


def photo_tile(bounds: Bounds, caption: str, action: str | None, desc: str) -> Node:
    """A photo-like tile: a colored picture with a darker band, captioned at the bottom."""
    x1, y1, x2, y2 = bounds
    d = stable_bytes(caption)
    tile = view(
        bounds, cls="android.widget.ImageView", desc=desc, action=action, bg=TILE_COLORS[d[0] % 7]
    )
    band = y1 + (y2 - y1) * (50 + d[1] % 30) // 100
    return tile.add(
        view((x1, band, x2, y2), cls="android.view.View", bg=TILE_COLORS[d[2] % 7]),
        view((x1, y2 - 70, x2, y2), caption, fg="#ffffff", size=28 if x2 - x1 < 500 else 44),
    )
