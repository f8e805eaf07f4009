"""Simulated Android Settings: app list and app info, per-app notifications, wallpapers, display.

Pages: ``home``, ``search`` (query), ``apps``, ``app_info`` / ``app_notifications`` /
``app_permissions`` / ``app_storage`` (app = label), ``notifications``, ``wallpaper``,
``wallpaper_preview`` (name), ``display`` and the plain sections in :data:`SECTIONS`. The
notification switch of an app writes ``phone.notifications[label]``, which predicates read.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from distrl_tasks.sim.app import App, Page, Screen, pick, stable_int
from distrl_tasks.sim.apps.launcher import open_installed_app
from distrl_tasks.sim.apps.packages import NOTIFICATIONS, SETTINGS
from distrl_tasks.sim.apps.settings_data import (
    DEFAULT_TOGGLES,
    HOME,
    PERMISSIONS,
    SECTIONS,
    WALLPAPERS,
    Row,
)
from distrl_tasks.sim.apps.text import clean
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import (
    APP_BAR_H,
    PAD,
    UP_ACTION,
    app_bar,
    button,
    color_for,
    list_item,
    search_field,
    section_header,
    switch_row,
)

SEARCH_ID = f"{SETTINGS}:id/search_action_bar"
TOP = CONTENT_TOP + APP_BAR_H + 20  # first row under an app bar
ROW = 170


def _page_action(page: str, /, **params: str) -> str:
    """A tap token opening ``name`` (params may include keys App.push cannot take, e.g. name)."""
    return f"page:{page}?{urlencode(params)}"


class Settings(App):
    """The Settings app."""

    package = SETTINGS
    label = "Settings"
    color = "#5f6368"

    def reset(self) -> None:
        super().reset()
        self.toggles: dict[str, bool] = dict(DEFAULT_TOGGLES)
        self.wallpaper = WALLPAPERS[0][0]
        self.stopped: set[str] = set()  # apps force-stopped since boot
        self.cleared: set[str] = set()  # apps whose cache was cleared

    def is_on(self, key: str) -> bool:
        """A switch's state; per-app channels (``"<app>:<channel>"``) default on but Promotions."""
        if key in self.toggles:
            return self.toggles[key]
        if ":" in key:
            return not key.endswith(":Promotions")
        return DEFAULT_TOGGLES.get(key, False)

    # ----- pages -------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        app = page.get("app")
        builders = {
            "home": lambda: self._home(""),
            "search": lambda: self._home(page.get("query")),
            "apps": self._apps,
            "app_info": lambda: self._app_info(app),
            "app_notifications": lambda: self._app_notifications(app),
            "app_permissions": lambda: self._app_permissions(app),
            "app_storage": lambda: self._app_storage(app),
            "notifications": self._notifications,
            "wallpaper": self._wallpaper,
            "wallpaper_preview": lambda: self._wallpaper_preview(page.get("name")),
        }
        if page.name in builders:
            return builders[page.name]()
        title, rows = SECTIONS.get(page.name, ("Settings", ()))
        return Screen(header=[app_bar(title)], body=self._rows(TOP, rows))

    def _rows(self, y: int, rows: tuple[Row, ...]) -> list[Node]:
        body: list[Node] = []
        for key, title, subtitle in rows:
            if key:
                body.extend(switch_row(y, title, self.is_on(key), f"toggle:{key}"))
            else:
                body.append(list_item(y, title, subtitle))
            y += ROW
        return body

    def _home(self, query: str) -> Screen:
        box = search_field(self, SEARCH_ID, "Search settings", y=CONTENT_TOP + 150)
        box.style = Style(bg="#e8eaed", size=44, radius=64, icon="@search", icon_bg="#5f6368")
        header = [app_bar("Settings", up=bool(query), color="#f8f9fa"), box]
        header[0].bounds = (0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 300)
        body: list[Node] = []
        y = CONTENT_TOP + 320
        low = query.lower()
        for page, title, subtitle in HOME:
            if low and low not in f"{title} {subtitle}".lower():
                continue
            action = "open:" + page
            body.append(
                list_item(y, title, subtitle, action=action, icon=title, icon_bg=color_for(page))
            )
            y += ROW + 10
        if low:
            for label in self._installed():
                if low in label.lower():
                    body.append(self._app_row(y, label))
                    y += ROW
        return Screen(header=header, body=body)

    def _installed(self) -> list[str]:
        return sorted(self.phone.installed, key=str.casefold)

    def _app_row(self, y: int, label: str) -> Node:
        return list_item(
            y,
            label,
            action=_page_action("app_info", app=label),
            icon=label,
            icon_bg=color_for(label),
            height=ROW,
        )

    def _apps(self) -> Screen:
        labels = self._installed()
        body = [section_header(TOP, f"All apps ({len(labels)})", "#5f6368")]
        y = TOP + 100
        for label in labels:
            body.append(self._app_row(y, label))
            y += ROW
        return Screen(header=[app_bar("Apps")], body=body)

    def _app_header(self, label: str, y: int) -> list[Node]:
        return [
            Node(
                cls="android.widget.ImageView",
                bounds=(SCREEN_W // 2 - 100, y, SCREEN_W // 2 + 100, y + 200),
                text=label[:1].upper(),
                content_desc=f"{label} icon",
                style=Style(
                    bg=color_for(label), fg="#ffffff", radius=100, size=100, align="center"
                ),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y + 220, SCREEN_W - PAD, y + 310),
                text=label,
                resource_id="com.android.settings:id/entity_header_title",
                style=Style(size=54, align="center"),
            ),
        ]

    def _app_info(self, label: str) -> Screen:
        header = [app_bar("App info")]
        body = self._app_header(label, TOP)
        y = TOP + 340
        if label not in self.phone.installed:
            body.append(list_item(y, "App not installed", "It may have been uninstalled"))
            return Screen(header=header, body=body)
        app = self.phone.app_by_label(label)
        system = app is not None and app.system
        actions = [("Open", "launch"), ("Force stop", "force_stop")]
        if not system:
            actions.insert(1, ("Uninstall", "uninstall"))
        width = (SCREEN_W - 2 * PAD - 40 * (len(actions) - 1)) // len(actions)
        for i, (text, act) in enumerate(actions):
            x = PAD + i * (width + 40)
            stopped = act == "force_stop" and label in self.stopped
            body.append(
                button(
                    (x, y, x + width, y + 130),
                    text,
                    f"{act}:{label}",
                    bg="#e8eaed" if stopped else "#d3e3fd",
                    fg="#9aa0a6" if stopped else "#041e49",
                )
            )
        y += 180
        on = self.phone.notifications.get(label, True)
        cache = "0 B" if label in self.cleared else f"{1 + stable_int('cache', label) % 90} MB"
        rows = (
            ("app_notifications", "Notifications", "On" if on else "Off"),
            ("app_permissions", "Permissions", self._allowed_text(label)),
            ("app_storage", "Storage & cache", f"{cache} cache"),
            ("", "Mobile data & Wi-Fi", f"{stable_int('data', label) % 900} MB used"),
            ("", "Battery", f"{stable_int('bat', label) % 5}% use since last full charge"),
            ("", "Open by default", "Allow app to open supported links"),
        )
        for page, title, subtitle in rows:
            action = _page_action(page, app=label) if page else None
            body.append(list_item(y, title, subtitle, action=action))
            y += ROW
        return Screen(header=header, body=body)

    def _granted(self, label: str) -> list[str]:
        return [p for p in PERMISSIONS if stable_int("perm", label, p) % 3 == 0] or [
            "Notifications"
        ]

    def _allowed_text(self, label: str) -> str:
        return ", ".join(self._granted(label))

    def _app_notifications(self, label: str) -> Screen:
        header = [app_bar("Notifications")]
        body = self._app_header(label, TOP)
        y = TOP + 340
        on = self.phone.notifications.get(label, True)
        body.extend(
            switch_row(
                y,
                f"All {label} notifications",
                on,
                _page_action("notify", app=label),
                rid="com.android.settings:id/main_switch_bar",
            )
        )
        y += ROW + 20
        for channel in ("General", "Updates", "Promotions"):
            key = f"{label}:{channel}"
            if on:
                body.extend(switch_row(y, channel, self.is_on(key), f"toggle:{key}"))
            else:
                body.append(list_item(y, channel, "Blocked"))
            y += ROW
        return Screen(header=header, body=body)

    def _app_permissions(self, label: str) -> Screen:
        granted = self._granted(label)
        body = [section_header(TOP, "Allowed", "#5f6368")]
        y = TOP + 100
        for perm in granted:
            body.append(list_item(y, perm, "Allowed only while in use"))
            y += ROW
        body.append(section_header(y, "Not allowed", "#5f6368"))
        y += 100
        for perm in PERMISSIONS:
            if perm not in granted:
                body.append(list_item(y, perm, "Not allowed"))
                y += ROW
        return Screen(header=[app_bar(f"{label} permissions")], body=body)

    def _app_storage(self, label: str) -> Screen:
        cleared = label in self.cleared
        rows: tuple[Row, ...] = (
            ("", "App size", f"{20 + stable_int('size', label) % 200} MB"),
            ("", "User data", f"{stable_int('user', label) % 100} MB"),
            ("", "Cache", "0 B" if cleared else f"{1 + stable_int('cache', label) % 90} MB"),
        )
        body = self._rows(TOP, rows)
        y = TOP + 3 * ROW + 40
        body.append(button((PAD, y, PAD + 440, y + 120), "Clear cache", f"clear_cache:{label}"))
        return Screen(header=[app_bar("Storage & cache")], body=body)

    def _notifications(self) -> Screen:
        body: list[Node] = [section_header(TOP, "Recently sent", "#1a73e8")]
        y = TOP + 100
        for label, _ in NOTIFICATIONS:
            if label in self.phone.installed:
                on = self.phone.notifications.get(label, True)
                body.extend(switch_row(y, label, on, _page_action("notify", app=label)))
                y += ROW
        body.append(list_item(y, "App notifications", "See all apps", action="open:apps"))
        y += ROW + 20
        body.append(section_header(y, "General", "#1a73e8"))
        y += 100
        general: tuple[Row, ...] = (
            ("dnd", "Do Not Disturb", ""),
            ("history", "Notification history", ""),
            ("bubbles", "Bubbles", ""),
        )
        body.extend(self._rows(y, general))
        return Screen(header=[app_bar("Notifications")], body=body)

    def _wallpaper(self) -> Screen:
        body: list[Node] = [
            list_item(
                TOP,
                "Current wallpaper",
                self.wallpaper,
                icon=self.wallpaper,
                icon_bg=dict(WALLPAPERS)[self.wallpaper],
            ),
            section_header(TOP + ROW, "Wallpapers", "#1a73e8"),
        ]
        y0 = TOP + ROW + 110
        for i, (name, color) in enumerate(WALLPAPERS):
            row, col = divmod(i, 3)
            x, y = PAD + col * 340, y0 + row * 620
            tile = Node(
                cls="android.widget.ImageView",
                bounds=(x, y, x + 310, y + 520),
                content_desc=f"{name} wallpaper",
                clickable=True,
                action=_page_action("wallpaper_preview", name=name),
                style=Style(bg=color, radius=28),
            )
            tile.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(x, y + 530, x + 310, y + 600),
                    text=name,
                    style=Style(size=34, align="center"),
                )
            )
            body.append(tile)
        return Screen(header=[app_bar("Wallpaper & style")], body=body)

    def _wallpaper_preview(self, name: str) -> Screen:
        color = dict(WALLPAPERS).get(name, pick([c for _, c in WALLPAPERS], "wall", name))
        body = [
            Node(
                cls="android.widget.ImageView",
                bounds=(140, TOP, SCREEN_W - 140, TOP + 1400),
                content_desc=f"Preview of {name}",
                style=Style(bg=color, radius=40),
            ),
            button(
                (PAD, TOP + 1440, SCREEN_W - PAD, TOP + 1570),
                "Set wallpaper",
                f"set_wallpaper:{name}",
            ),
        ]
        return Screen(header=[app_bar(name)], body=body)

    # ----- events ------------------------------------------------------------------------
    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if action == UP_ACTION:
            self.phone.back()
        elif kind == "page":
            name, _, query = arg.partition("?")
            params = dict(parse_qsl(query))
            if name == "notify":  # flips the app's notification switch, no page change
                label = params.get("app", "")
                self.phone.notifications[label] = not self.phone.notifications.get(label, True)
            else:
                self.push_page(Page(name, params))
        elif kind == "toggle":
            self.toggles[arg] = not self.is_on(arg)
        elif kind == "launch":
            open_installed_app(self.phone, arg)
        elif kind == "force_stop":
            self.stopped.add(arg)
        elif kind == "uninstall":
            self.phone.installed.discard(arg)
            self.phone.notifications.pop(arg, None)
            self.phone.back()
        elif kind == "clear_cache":
            self.cleared.add(arg)
        elif kind == "set_wallpaper":
            self.wallpaper = arg
            self.phone.back()
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        query = clean(text)
        if rid != SEARCH_ID or not query:
            return
        self.show_results("search", query=query)
