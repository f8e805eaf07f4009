"""The Clock app's time picker in keyboard mode: hour and minute fields, AM/PM, Cancel and OK.

Android's picker takes at most two digits per field; an hour of 1-12 and a minute of 00-59 make a
valid time, an empty minute field means its hint ``00``.
"""

from __future__ import annotations

from distrl_tasks.sim.app import Screen
from distrl_tasks.sim.apps.packages import CLOCK
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Bounds, Node, Style
from distrl_tasks.sim.widgets import button

HOUR_ID = f"{CLOCK}:id/input_hour"
MINUTE_ID = f"{CLOCK}:id/input_minute"
ACCENT = "#1a73e8"


def to_24h(hour_text: str, minute_text: str, pm: bool) -> str | None:
    """Picker fields -> ``"HH:MM"``, or None when they are not a valid 12-hour time.

    An empty minute field means its hint, ``00`` (the picker shows it greyed out).
    """
    minute_text = minute_text or "00"
    if not (hour_text.isdigit() and minute_text.isdigit()):
        return None
    hour, minute = int(hour_text), int(minute_text)
    if not (1 <= hour <= 12 and 0 <= minute <= 59):
        return None
    return f"{hour % 12 + (12 if pm else 0):02d}:{minute:02d}"


def picker_screen(hour: str, minute: str, pm: bool, error: str) -> Screen:
    """The time picker dialog over a grey scrim, showing the typed fields and the AM/PM choice."""
    scrim = Node(
        cls="android.view.View",
        bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_BOTTOM),
        style=Style(bg="#5f6368"),
    )
    x1, y1, x2 = 80, 620, SCREEN_W - 80
    card = Node(
        cls="android.widget.FrameLayout",
        bounds=(x1, y1, x2, y1 + 900),
        resource_id=f"{CLOCK}:id/time_picker_dialog",
        style=Style(bg="#ffffff", radius=56),
    )

    def field(rid: str, x: int, hint: str, desc: str) -> Node:
        return Node(
            cls="android.widget.EditText",
            bounds=(x, y1 + 200, x + 270, y1 + 420),
            text=hour if rid == HOUR_ID else minute,
            resource_id=rid,
            content_desc=desc,
            hint=hint,
            editable=True,
            style=Style(bg="#e8eaed", size=120, align="center", radius=24),
        )

    def toggle(text: str, y: int, on: bool) -> Node:
        return Node(
            cls="android.widget.RadioButton",
            bounds=(x1 + 680, y, x2 - 60, y + 110),
            text=text,
            resource_id=f"{CLOCK}:id/{text.lower()}",
            content_desc=text,
            clickable=True,
            checkable=True,
            checked=on,
            action=f"ampm:{text}",
            style=Style(
                bg="#d3e3fd" if on else "#ffffff",
                border="#80868b",
                size=46,
                align="center",
                bold=on,
                radius=20,
            ),
        )

    card.add(
        Node(
            cls="android.widget.TextView",
            bounds=(x1 + 60, y1 + 50, x2 - 60, y1 + 160),
            text="Enter time",
            style=Style(size=44, fg="#5f6368"),
        ),
        field(HOUR_ID, x1 + 60, "12", "Hour"),
        Node(
            cls="android.widget.TextView",
            bounds=(x1 + 330, y1 + 200, x1 + 390, y1 + 420),
            text=":",
            style=Style(size=120, align="center"),
        ),
        field(MINUTE_ID, x1 + 390, "00", "Minute"),
        toggle("AM", y1 + 200, not pm),
        toggle("PM", y1 + 310, pm),
        Node(
            cls="android.widget.TextView",
            bounds=(x1 + 60, y1 + 430, x1 + 330, y1 + 500),
            text="Hour",
            style=Style(size=34, fg="#5f6368"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(x1 + 390, y1 + 430, x1 + 660, y1 + 500),
            text="Minute",
            style=Style(size=34, fg="#5f6368"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(x1 + 60, y1 + 540, x2 - 60, y1 + 620),
            text=error,
            resource_id=f"{CLOCK}:id/error",
            style=Style(size=38, fg="#d93025"),
        ),
        _dialog_button((x2 - 480, y1 + 740, x2 - 260, y1 + 850), "Cancel", "cancel", 2),
        _dialog_button((x2 - 240, y1 + 740, x2 - 40, y1 + 850), "OK", "ok", 1),
    )
    return Screen(header=[], body=[scrim, card])


def _dialog_button(bounds: Bounds, text: str, action: str, n: int) -> Node:
    """A flat dialog button; ``android:id/button1`` is OK and ``button2`` Cancel, as on Android."""
    return button(bounds, text, action, rid=f"android:id/button{n}", bg=None, fg=ACCENT, size=46)
