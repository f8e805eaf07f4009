"""Base class of simulated apps: a per-app back stack of pages, text fields and tap actions.

An app turns its current :class:`Page` into a :class:`Screen` (a fixed header plus a scrollable
body of :class:`~distrl_tasks.sim.ui.Node`), and reacts to three things: a tap on a node that
carries an ``action`` token, ENTER in one of its text fields, and BACK. The phone
(:mod:`distrl_tasks.sim.phone`) owns focus, scrolling, the status/navigation bars and which app
is in front.

The module also holds the pure helpers that apps and web pages share: ``open:`` action tokens
and stable variety (a hash of the inputs decides which name, color or number a screen shows, so
the same inputs look the same on every device, in every process and on every run).
"""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Protocol, TypeVar
from urllib.parse import parse_qsl, urlencode

from distrl_tasks.sim.ui import Node

T = TypeVar("T")


class PhoneHost(Protocol):
    """What apps and the live-world dynamics use of the phone that hosts them.

    :class:`~distrl_tasks.sim.phone.Phone` implements it. Apps are written against this
    interface rather than the phone class, so the phone can import its apps and not the other
    way round.
    """

    apps: dict[str, App]
    front: App
    focus: str | None
    installed: set[str]
    alarms: dict[str, bool]
    notifications: dict[str, bool]
    scroll: dict[tuple[str, Page], int]
    version: int  # bumped on every mutation
    nav: int  # bumped on every navigation

    def _touch(self) -> None: ...

    def app_by_label(self, label: str) -> App | None: ...

    def on_navigate(self, app: App) -> None: ...

    def launch(self, package: str) -> bool: ...

    def go_home(self) -> None: ...

    def back(self) -> None: ...


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

    def __init__(self, phone: PhoneHost) -> None:
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
        self.push_page(Page(name, params))

    def push_page(self, page: Page) -> None:
        """:meth:`push` for a ready-made page, whose params may use any key (even ``name``)."""
        if page != self.page:
            self.stack.append(page)
            self.phone.on_navigate(self)

    def replace(self, name: str, /, **params: str) -> None:
        """Swap the top page (e.g. a new search from a results page keeps one BACK step)."""
        self.stack[-1] = Page(name, params)
        self.phone.on_navigate(self)

    def show_results(self, name: str, /, **params: str) -> None:
        """Open a results page; a new search from a ``name`` page replaces it (one BACK step)."""
        if self.page.name == name:
            self.replace(name, **params)
        else:
            self.push(name, **params)

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
    name, _, query = text.partition("?")
    return name, dict(parse_qsl(query, keep_blank_values=True))


def make_action(name: str, /, **params: str) -> str:
    """Inverse of :func:`parse_action`, for building ``open:`` tokens."""
    return f"{name}?{urlencode(params)}" if params else name


# ----- stable variety: blake2b of the inputs, never Python's per-process salted ``hash()`` -------
def stable_int(*parts: str) -> int:
    """A 64-bit integer that depends only on ``parts`` (same value in every process)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def stable_bytes(text: str) -> bytes:
    """16 bytes that depend only on ``text`` (for picking several small values at once)."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def seeded(*parts: str) -> random.Random:
    """A private random generator seeded from ``parts`` (``random.Random(int)`` is stable)."""
    return random.Random(stable_int(*parts))


def pick(options: Sequence[T], *parts: str) -> T:
    """One element of ``options`` chosen by the stable hash of ``parts``."""
    if not options:
        raise ValueError("pick() needs at least one option")
    return options[stable_int(*parts) % len(options)]


def shuffled(options: Sequence[T], *parts: str) -> list[T]:
    """A deterministic permutation of ``options`` keyed by ``parts``."""
    return sorted(options, key=lambda o: stable_int(*parts, str(o)))
