"""Layout and widgets of simulated web pages: a flowing column, wrapped text, the Google logo,
search boxes.

Text is wrapped with the renderer's own font, so a wrapped line is never ellipsized on screen.
"""

from __future__ import annotations

from functools import lru_cache

from PIL import ImageFont

from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import Ctx
from distrl_tasks.sim.widgets import PAD, view

GREY = "#5f6368"
DARK = "#202124"
GOOGLE_LETTERS = (
    ("G", "#4285f4"),
    ("o", "#ea4335"),
    ("o", "#fbbc05"),
    ("g", "#4285f4"),
    ("l", "#34a853"),
    ("e", "#ea4335"),
)


@lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=4096)
def wrap(text: str, width: int, size: int) -> tuple[str, ...]:
    """Split ``text`` into lines no wider than ``width`` logical px at font ``size``.

    Measured with the same font the renderer uses, so wrapped lines never get ellipsized.
    """
    font = _font(size)
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= width - 32 or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return tuple(lines)


def text_width(text: str, size: int) -> int:
    """Width in logical px of ``text`` drawn at font ``size``."""
    return round(_font(size).getlength(text))


class Column:
    """Lays nodes out top to bottom, the way a web page flows.

    Args:
        y: top of the first node, in page coordinates.
        x1: left edge of the column.
        x2: right edge of the column.
    """

    def __init__(self, y: int, x1: int = PAD, x2: int = SCREEN_W - PAD) -> None:
        self.y = y
        self.x1 = x1
        self.x2 = x2
        self.nodes: list[Node] = []

    def gap(self, height: int) -> Column:
        self.y += height
        return self

    def add(self, node: Node) -> Node:
        """Append ``node`` (already positioned) and move below it."""
        self.nodes.append(node)
        self.y = max(self.y, node.bounds[3])
        return node

    def text(
        self,
        text: str,
        *,
        size: int = 38,
        fg: str = DARK,
        bold: bool = False,
        height: int | None = None,
        action: str | None = None,
        rid: str = "",
        desc: str = "",
        bg: str | None = None,
        icon: str | None = None,
        icon_bg: str = "#1a73e8",
        align: str = "left",
        indent: int = 0,
    ) -> Node:
        """One line of text (clickable when ``action`` is given)."""
        h = height or int(size * 1.55)
        return self.add(
            Node(
                cls="android.widget.TextView",
                bounds=(self.x1 + indent, self.y, self.x2, self.y + h),
                text=text,
                resource_id=rid,
                content_desc=desc,
                clickable=action is not None,
                action=action,
                style=Style(
                    bg=bg, fg=fg, size=size, bold=bold, icon=icon, icon_bg=icon_bg, align=align
                ),
            )
        )

    def paragraph(self, text: str, *, size: int = 36, fg: str = "#4d5156", lines: int = 3) -> None:
        """Wrapped text (measured with the renderer's font), at most ``lines`` lines."""
        # wrap narrower than the box: small screenshot scales draw text slightly wider
        rows = list(wrap(text, self.x2 - self.x1 - 60, size))
        if len(rows) > lines:
            rows = rows[:lines]
            rows[-1] = rows[-1].rstrip(".,;:") + " ..."
        for row in rows:
            self.text(row, size=size, fg=fg, height=round(size * 1.45))

    def box(self, y1: int, *, bg: str = "#ffffff", border: str = "#dadce0", radius: int = 28):
        """A card background from ``y1`` to the current y (inserted under what it frames)."""
        node = Node(
            cls="android.view.View",
            bounds=(self.x1 - 20, y1, self.x2 + 20, self.y + 20),
            style=Style(bg=bg, border=border, radius=radius),
        )
        # insert before the first node at or below y1 so it is drawn underneath
        idx = next((i for i, n in enumerate(self.nodes) if n.bounds[1] >= y1), len(self.nodes))
        self.nodes.insert(idx, node)
        self.y += 20
        return node


def google_logo(cx: int, y: int, size: int = 110) -> list[Node]:
    """The six-letter Google wordmark in its colors, centered at ``cx``.

    Letters are spaced by their measured widths, each centered in a padded cell so the renderer
    never shortens a letter to an ellipsis.
    """
    widths = [text_width(ch, size) for ch, _ in GOOGLE_LETTERS]
    h = int(size * 1.3)
    x = cx - sum(widths) // 2
    logo = Node(
        cls="android.view.View", bounds=(x, y, x + sum(widths), y + h), content_desc="Google"
    )
    for (ch, color), w in zip(GOOGLE_LETTERS, widths, strict=True):
        cell = (x - 40, y, x + w + 40, y + h)  # padded: the renderer insets text from the edges
        logo.add(view(cell, ch, size=size, fg=color, bold=True, align="center"))
        x += w
    return [logo]


def input_box(
    value: str,
    focused: bool,
    rid: str,
    hint: str,
    bounds: tuple[int, int, int, int],
    *,
    bg: str = "#ffffff",
    border: str | None = "#dfe1e5",
    fg: str = DARK,
) -> list[Node]:
    """A web search box: an editable field plus a "Clear" button once it holds text."""
    x1, y1, x2, y2 = bounds
    field_x2 = x2 - 110 if value else x2
    nodes = [
        Node(
            cls="android.view.View",
            bounds=bounds,
            style=Style(bg=bg, border=border, radius=(y2 - y1) // 2),
        ),
        Node(
            cls="android.widget.EditText",
            bounds=(x1 + 10, y1, field_x2, y2),
            text=value,
            resource_id=rid,
            hint=hint,
            editable=True,
            focused=focused,
            style=Style(fg=fg, size=42, icon="@search", icon_bg=GREY),
        ),
    ]
    if value:
        nodes.append(
            Node(
                cls="android.widget.ImageButton",
                bounds=(x2 - 110, y1, x2 - 10, y2),
                text="X",
                content_desc="Clear",
                clickable=True,
                action=f"clear:{rid}",
                style=Style(fg=GREY, size=44, align="center"),
            )
        )
    return nodes


def google_search(
    col: Column,
    ctx: Ctx,
    rid: str,
    hint: str,
    *,
    logo: int,
    gap: int,
    margin: int,
    height: int,
    bg: str = "#ffffff",
    border: str | None = "#dfe1e5",
) -> None:
    """The Google logo with a search box under it (bound to the field ``rid``), added to ``col``."""
    for node in google_logo(SCREEN_W // 2, col.y, logo):
        col.add(node)
    col.gap(gap)
    bounds = (margin, col.y, SCREEN_W - margin, col.y + height)
    for node in input_box(
        ctx.value(rid), ctx.focused(rid), rid, hint, bounds, bg=bg, border=border
    ):
        col.add(node)


def text_at(
    x: int, y: int, text: str, size: int, fg: str, bold: bool = False, *, x2: int, spacing: float
) -> Node:
    """One line of text from ``(x, y)`` to ``x2``, ``spacing`` times the font size tall."""
    return view((x, y, x2, y + int(size * spacing)), text, fg=fg, size=size, bold=bold)
