"""The system UI the phone draws around an app: status bar, navigation bar, notification shade.

These are the parts of the screen that belong to Android rather than to the app in front: the
status bar with the (fixed) clock, the three-button navigation bar whose taps the phone turns into
key events, and the notification shade pulled down from the top. They are built from the phone's
state passed in, never read from it, so they live apart from :mod:`distrl_tasks.sim.phone`, which
decides when they show and what their buttons do, and re-exports :data:`CLOCK_TEXT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from distrl_tasks.sim.ui import NAV_BAR_H, SCREEN_H, SCREEN_W, STATUS_BAR_H, Node, Style

CLOCK_TEXT = "12:30"  # the simulated wall clock shown in the status bar (fixed: deterministic)


def status_bar() -> Node:
    """The status bar along the top: the clock on the left, network and battery on the right."""
    bar = Node(
        cls="android.widget.FrameLayout",
        bounds=(0, 0, SCREEN_W, STATUS_BAR_H),
        resource_id="com.android.systemui:id/status_bar",
        style=Style(bg="#f8f9fa"),
    )
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(40, 0, 400, STATUS_BAR_H),
            text=CLOCK_TEXT,
            resource_id="com.android.systemui:id/clock",
            style=Style(size=40, bold=True),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(SCREEN_W - 400, 0, SCREEN_W - 40, STATUS_BAR_H),
            text="LTE  87%",
            content_desc="Battery 87 percent",
            style=Style(size=36, align="right"),
        ),
    )
    return bar


def nav_bar() -> Node:
    """The navigation bar along the bottom: Back, Home and Overview buttons (``sys:`` actions)."""
    y = SCREEN_H - NAV_BAR_H
    bar = Node(
        cls="android.widget.FrameLayout",
        bounds=(0, y, SCREEN_W, SCREEN_H),
        resource_id="com.android.systemui:id/navigation_bar_frame",
        style=Style(bg="#f8f9fa"),
    )
    for i, (label, desc, action, rid) in enumerate(
        [
            ("@back", "Back", "sys:back", "back"),
            ("@home", "Home", "sys:home", "home"),
            ("@recents", "Overview", "sys:recents", "recent_apps"),
        ]
    ):
        x = 140 + i * 300
        bar.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(x, y, x + 200, SCREEN_H),
                text="",
                content_desc=desc,
                resource_id=f"com.android.systemui:id/{rid}",
                clickable=True,
                action=action,
                style=Style(icon=label, icon_bg="#3c4043", size=48),
            )
        )
    return bar


def notification_shade(
    notifications: Iterable[tuple[str, str]], enabled: Mapping[str, bool]
) -> Node:
    """The pulled-down notification shade: a heading, one card per notification of an app
    whose notifications are on (``enabled``, default on), and a "Clear all" button that closes it.

    Args:
        notifications: ``(app label, text)`` pairs in display order.
        enabled: per app label, whether its notifications are shown.
    """
    shade = Node(
        cls="android.widget.FrameLayout",
        bounds=(0, 0, SCREEN_W, 1500),
        resource_id="com.android.systemui:id/notification_panel",
        style=Style(bg="#e8eaed"),
    )
    shade.add(
        Node(
            cls="android.widget.TextView",
            bounds=(40, 60, SCREEN_W - 40, 180),
            text=f"{CLOCK_TEXT}  Notifications",
            style=Style(size=52, bold=True),
        )
    )
    y = 220
    for app, text in notifications:
        if not enabled.get(app, True):
            continue
        shade.add(
            Node(
                cls="android.widget.TextView",
                bounds=(40, y, SCREEN_W - 40, y + 200),
                text=f"{app}: {text}",
                resource_id="com.android.systemui:id/notification",
                style=Style(bg="#ffffff", radius=36, size=40, icon=app),
            )
        )
        y += 230
    shade.add(
        Node(
            cls="android.widget.Button",
            bounds=(SCREEN_W - 360, 1380, SCREEN_W - 40, 1480),
            text="Clear all",
            clickable=True,
            action="shade:close",
            style=Style(size=40, align="center"),
        )
    )
    return shade
