"""Base class of simulated apps: a per-app back stack of pages, text fields and tap actions.

An app turns its current :class:`Page` into a :class:`Screen` (a fixed header plus a scrollable
body of :class:`~distrl_tasks.sim.ui.Node`), and reacts to three things: a tap on a node that
carries an ``action`` token, ENTER in one of its text fields, and BACK. The phone
(:mod:`distrl_tasks.sim.phone`) owns focus, scrolling, the status/navigation bars and which app
is in front.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone


@dataclass(frozen=True)
class Page:
    """One screen of an app: a name and string parameters (query, site, item, ...)."""

    name: str
    params: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def get(self, key: str, default: str = "") -> str:
        return self.params.get(key, default)

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items()))))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Page)
            and self.name == other.name
            and dict(self.params) == dict(other.params)
        )


@dataclass
class Screen:
    """What an app shows: ``header`` stays put, ``body`` scrolls (page coordinates)."""

    header: list[Node] = field(default_factory=list)
    body: list[Node] = field(default_factory=list)
    # a white frame may be shown before this screen paints (page loads, app starts)
    loads: bool = False
    background: str | None = None  # color behind the whole content area (e.g. a wallpaper)


class App(ABC):
    """A simulated app. Subclasses set the class attributes and implement :meth:`build`."""

    package: ClassVar[str] = ""
    label: ClassVar[str] = ""  # name under the launcher icon
    color: ClassVar[str] = "#1a73e8"  # icon and accent color
    home_page: ClassVar[str] = "home"
    system: ClassVar[bool] = True  # preinstalled (cannot be uninstalled)

    def __init__(self, phone: Phone) -> None:
        self.phone = phone
        self.stack: list[Page] = []
        self.fields: dict[str, str] = {}
        self.reset()

    # ----- state -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything: the state of a freshly booted snapshot."""
        self.stack = [Page(self.home_page)]
        self.fields = {}

    @property
    def display_label(self) -> str:
        """The label a person sees for the app now in front (the generic app overrides it)."""
        return self.label

    @property
    def page(self) -> Page:
        return self.stack[-1]

    def push(self, name: str, /, **params: str) -> None:
        """Open a page on top of the back stack (a no-op if it is already the top page)."""
        page = Page(name, params)
        if page != self.page:
            self.stack.append(page)
            self.phone.on_navigate(self)

    def replace(self, name: str, /, **params: str) -> None:
        """Swap the top page (e.g. a new search from a results page keeps one BACK step)."""
        self.stack[-1] = Page(name, params)
        self.phone.on_navigate(self)

    def back(self) -> bool:
        """Handle BACK. Returns False when the app has nothing to go back to (it closes)."""
        if len(self.stack) > 1:
            self.stack.pop()
            self.phone.on_navigate(self)
            return True
        return False

    def field_text(self, rid: str) -> str:
        return self.fields.get(rid, "")

    def set_field(self, rid: str, text: str) -> None:
        self.fields[rid] = text

    # ----- events (override) -------------------------------------------------------------
    @abstractmethod
    def build(self, page: Page) -> Screen:
        """The screen for ``page`` (called whenever the phone needs pixels or a hierarchy)."""

    def on_tap(self, action: str) -> None:
        """A node with ``action`` was tapped. Default: ``open:<page>[?k=v&...]`` pushes a page."""
        if action.startswith("open:"):
            name, params = parse_action(action[len("open:") :])
            self.push(name, **params)

    def on_submit(self, rid: str, text: str) -> None:
        """ENTER was pressed in the text field ``rid`` holding ``text``."""

    def on_open(self) -> None:
        """Brought to the front from the launcher. Default: resume where it was, as Android does."""

    def state_params(self) -> dict[str, str]:
        """Extra app state exposed to task predicates (merged over the page params)."""
        return {}


def parse_action(text: str) -> tuple[str, dict[str, str]]:
    """``"product?site=ebay.com&i=0"`` -> ``("product", {"site": "ebay.com", "i": "0"})``."""
    from urllib.parse import parse_qsl

    name, _, query = text.partition("?")
    return name, dict(parse_qsl(query, keep_blank_values=True))


def make_action(name: str, /, **params: str) -> str:
    """Inverse of :func:`parse_action`, for building ``open:`` tokens."""
    from urllib.parse import urlencode

    return f"{name}?{urlencode(params)}" if params else name


# ----- small widget helpers shared by apps ----------------------------------------------------
ROW_H = 150
PAD = 40


def title_bar(title: str, color: str = "#ffffff", fg: str = "#202124", rid: str = "") -> Node:
    """An app bar at the top of the content area with a back arrow and a title."""
    bar = Node(
        cls="android.view.ViewGroup",
        bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 160),
        resource_id=rid,
        style=Style(bg=color),
    )
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(PAD, CONTENT_TOP, SCREEN_W - PAD, CONTENT_TOP + 160),
            text=title,
            style=Style(fg=fg, size=56, bold=True),
        )
    )
    return bar


def text_row(
    y: int,
    text: str,
    *,
    action: str | None = None,
    rid: str = "",
    desc: str = "",
    height: int = ROW_H,
    size: int = 44,
    icon: str | None = None,
    icon_bg: str = "#1a73e8",
    fg: str = "#202124",
    bg: str | None = None,
    bold: bool = False,
    x1: int = 0,
    x2: int = SCREEN_W,
) -> Node:
    """A full-width list row; clickable when it has an action."""
    return Node(
        cls="android.widget.TextView",
        bounds=(x1, y, x2, y + height),
        text=text,
        resource_id=rid,
        content_desc=desc,
        clickable=action is not None,
        action=action,
        style=Style(bg=bg, fg=fg, size=size, icon=icon, icon_bg=icon_bg, bold=bold),
    )


def button(
    bounds: tuple[int, int, int, int],
    text: str,
    action: str,
    *,
    rid: str = "",
    desc: str = "",
    bg: str = "#1a73e8",
    fg: str = "#ffffff",
    size: int = 42,
) -> Node:
    return Node(
        cls="android.widget.Button",
        bounds=bounds,
        text=text,
        resource_id=rid,
        content_desc=desc or text,
        clickable=True,
        action=action,
        style=Style(bg=bg, fg=fg, size=size, align="center", radius=40, bold=True),
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


def body_bottom(nodes: list[Node]) -> int:
    """Lowest y of a list of nodes (for scroll extents)."""
    return max((n.bounds[3] for n in nodes), default=CONTENT_TOP)


VIEWPORT_H = CONTENT_BOTTOM - CONTENT_TOP
