"""The expert's skills: given the current screen, the next action toward a goal.

Every policy is reactive: it looks only at the parsed UI dump (plus a small memo of what the
expert itself did) and returns the next :class:`Act`, or ``None`` when the goal is reached. So a
wrong tap or a detour is repaired on the next step: a foreign app gets HOME, an unknown page BACK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distrl_tasks.protocol.ui_dump import Screen, UINode
from distrl_tasks.sim.apps import GENERIC, LAUNCHER
from distrl_tasks.tasks.families.text import words

KEY_HOME, KEY_BACK, KEY_ENTER = 3, 4, 66


@dataclass(frozen=True)
class Act:
    """One device action in screen pixels. ``kind``: tap, swipe, type, key or done."""

    kind: str
    x: float = 0.0
    y: float = 0.0
    x2: float = 0.0
    y2: float = 0.0
    text: str = ""
    code: int = 0
    why: str = ""  # a short plan note, kept with the demonstration

    @staticmethod
    def tap(node: UINode, why: str = "") -> Act:
        x, y = node.center
        return Act("tap", x, y, x, y, why=why or f"tap {node.label or node.rid}")

    @staticmethod
    def key(code: int, why: str = "") -> Act:
        return Act("key", code=code, why=why)

    @staticmethod
    def type(text: str, why: str = "") -> Act:
        return Act("type", text=text, why=why or f"type {text!r}")

    @staticmethod
    def scroll(screen: Screen, down: bool = True) -> Act:
        x = screen.width / 2
        lo, hi = screen.height * 0.75, screen.height * 0.35
        y1, y2 = (lo, hi) if down else (hi, lo)
        return Act("swipe", x, y1, x, y2, why="scroll down" if down else "scroll up")


Memo = dict[str, Any]


def same_text(a: str, b: str) -> bool:
    """Equal up to case, spaces and punctuation."""
    return words(a) == words(b)


# ----- launching apps ---------------------------------------------------------------------------
def in_app(screen: Screen, label: str, package: str) -> bool:
    """Whether the app (a simulated package, or a third-party label) is in front."""
    if package:
        return screen.package == package
    if screen.package != GENERIC:
        return False
    title = screen.by_rid(f"{GENERIC}:id/title")
    return title is not None and title.text.strip().lower() == label.lower()


def open_app(screen: Screen, label: str, package: str, memo: Memo) -> Act | None:
    """From anywhere: HOME, then the home-screen icon or the app drawer. None once in front."""
    if in_app(screen, label, package):
        return None
    if screen.package != LAUNCHER:
        return Act.key(KEY_HOME, "go home to launch " + label)
    icon = screen.first(lambda n: n.clickable and n.desc.lower() == label.lower())
    if icon is not None:
        return Act.tap(icon, f"open {label}")
    drawer = screen.by_rid(":id/drawer_search")
    if drawer is None:
        all_apps = screen.by_label("Swipe up to see all apps")
        if all_apps is not None:
            return Act.tap(all_apps, "open the app drawer")
        x = screen.width / 2
        up = (screen.height * 0.79, screen.height * 0.29)
        return Act("swipe", x, up[0], x, up[1], why="swipe up to the app drawer")
    memo["drawer_scrolls"] = memo.get("drawer_scrolls", 0) + 1
    if memo["drawer_scrolls"] <= 3:
        return Act.scroll(screen)
    return Act.key(KEY_HOME, "app not in the drawer: start over")


# ----- text fields -----------------------------------------------------------------------------
def fill(screen: Screen, field: UINode, text: str, memo: Memo, submit: bool = True) -> Act | None:
    """Focus ``field``, type ``text`` into it and press ENTER (once). None when already filled
    and ``submit`` is False."""
    if not field.focused:
        return Act.tap(field, "focus the text field")
    if not same_text(field.text, text):
        if field.text:
            clear = screen.first(lambda n: n.clickable and "clear" in n.desc.lower())
            if clear is not None:
                return Act.tap(clear, "clear the field")
            if not memo.get("typed_into_" + field.rid):
                # a field that kept old text: typing appends, so say the full text anyway
                memo["typed_into_" + field.rid] = True
                return Act.type(text)
        else:
            memo["typed_into_" + field.rid] = True
            return Act.type(text)
    if not submit:
        return None
    return Act.key(KEY_ENTER, "submit")


def field_by_rid(screen: Screen, suffix: str) -> UINode | None:
    return screen.first(lambda n: n.editable and n.rid.endswith(suffix))
