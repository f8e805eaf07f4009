"""The home screen (Pixel-launcher-like): search bar, icon grid, dock, and the app drawer."""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, PhoneHost, Screen
from distrl_tasks.sim.apps.packages import (
    CAMERA,
    CHROME,
    GENERIC,
    GMAIL,
    LAUNCHER,
    MESSAGES,
    PHOTOS,
    PLAY_STORE,
    YOUTUBE,
)
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD, search_field

SEARCH_ID = f"{LAUNCHER}:id/search_box"
DRAWER_SEARCH_ID = f"{LAUNCHER}:id/drawer_search"
HOME_GRID = (PLAY_STORE, GMAIL, PHOTOS, YOUTUBE)
DOCK = (MESSAGES, CHROME, CAMERA)
ICON_W, ICON_H = 270, 300
WALLPAPER = "#dce8f7"  # the home screen's wallpaper color


def icon(x: int, y: int, label: str, color: str, action: str) -> Node:
    """A launcher icon: a clickable cell (content-desc = label), a badge and a label under it."""
    cell = Node(
        cls="android.widget.FrameLayout",
        bounds=(x, y, x + ICON_W, y + ICON_H),
        content_desc=label,
        clickable=True,
        action=action,
    )
    cell.add(
        Node(
            cls="android.widget.ImageView",
            bounds=(x + 55, y + 10, x + ICON_W - 55, y + 190),
            style=Style(icon=label, icon_bg=color, size=100),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(x, y + 195, x + ICON_W, y + ICON_H - 20),
            text=label,
            style=Style(fg="#202124", size=34, align="center"),
        ),
    )
    return cell


class Launcher(App):
    package = LAUNCHER
    label = "Launcher"
    color = "#4285f4"

    def _launch_action(self, label: str) -> str:
        app = self.phone.app_by_label(label)
        if app is not None and app.package != GENERIC:
            return f"launch:{app.package}"
        return f"launch-label:{label}"

    def _shown(self, package: str) -> bool:
        app = self.phone.apps.get(package)
        return app is not None and app.label in self.phone.installed

    def _icon_for(self, x: int, y: int, package: str) -> Node:
        app = self.phone.apps[package]
        return icon(x, y, app.label, app.color, f"launch:{package}")

    def build(self, page: Page) -> Screen:
        if page.name == "drawer":
            return self._drawer()
        header = [
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP + 40, SCREEN_W - PAD, CONTENT_TOP + 300),
                text="Saturday, Nov 21  ·  18°C",
                style=Style(size=48, fg="#202124"),
            ),
        ]
        body: list[Node] = []
        y = CONTENT_TOP + 1150
        installed = [p for p in HOME_GRID if self._shown(p)]
        for i, package in enumerate(installed):
            body.append(self._icon_for(i * ICON_W, y, package))
        dock_y = CONTENT_BOTTOM - 520
        for i, package in enumerate(p for p in DOCK if self._shown(p)):
            body.append(self._icon_for(PAD + 120 + i * (ICON_W + 40), dock_y, package))
        body.append(
            search_field(self, SEARCH_ID, "Search Google", y=CONTENT_BOTTOM - 190, height=140)
        )
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(SCREEN_W // 2 - 200, CONTENT_BOTTOM - 620, SCREEN_W // 2 + 200, dock_y),
                text="All apps",
                content_desc="Swipe up to see all apps",
                clickable=True,
                action="open:drawer",
                style=Style(size=32, fg="#5f6368", align="center"),
            )
        )
        return Screen(header=header, body=body, background=WALLPAPER)

    def _drawer(self) -> Screen:
        header = [search_field(self, DRAWER_SEARCH_ID, "Search apps", y=CONTENT_TOP + 40)]
        query = self.field_text(DRAWER_SEARCH_ID).strip().lower()
        labels = sorted((lab for lab in self.phone.installed if lab != "Launcher"), key=str.lower)
        if query:
            labels = [lab for lab in labels if query in lab.lower()]
        body: list[Node] = []
        top = CONTENT_TOP + 220
        for i, label in enumerate(labels):
            row, col = divmod(i, 4)
            app = self.phone.app_by_label(label)
            color = app.color if app is not None else _color_for(label)
            body.append(
                icon(
                    PAD + col * (ICON_W - 20),
                    top + row * ICON_H,
                    label,
                    color,
                    self._launch_action(label),
                )
            )
        return Screen(header=header, body=body)

    def on_swipe(self, dx: float, dy: float) -> bool:
        if self.page.name == "home" and dy < -300:
            self.push("drawer")
            return True
        if (
            self.page.name == "drawer"
            and dy > 300
            and self.phone.scroll.get((self.package, self.page), 0) == 0
        ):
            self.back()
            return True
        return False

    def on_tap(self, action: str) -> None:
        if action.startswith("launch:"):
            self.phone.launch(action.split(":", 1)[1])
        elif action.startswith("launch-label:"):
            open_installed_app(self.phone, action.split(":", 1)[1])
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        if rid == SEARCH_ID and text.strip():
            chrome = self.phone.apps[CHROME]
            open_search = getattr(chrome, "open_search", None)
            if open_search is not None:
                self.set_field(rid, "")
                self.phone.launch(CHROME)
                open_search(text.strip())
        elif rid == DRAWER_SEARCH_ID:
            query = text.strip().lower()
            matches = [lab for lab in self.phone.installed if query and query in lab.lower()]
            if len(matches) == 1:
                self.on_tap(self._launch_action(matches[0]))


class GenericApp(App):
    """Any installed app that has no dedicated screens: shows its name and a content feed."""

    package = GENERIC
    label = "(generic)"
    system = False

    def reset(self) -> None:
        super().reset()
        self.showing = ""

    def build(self, page: Page) -> Screen:
        color = _color_for(self.showing)
        header = [
            Node(
                cls="android.widget.TextView",
                bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 180),
                text=self.showing,
                resource_id=f"{GENERIC}:id/title",
                style=Style(
                    bg=color,
                    fg="#ffffff",
                    size=56,
                    bold=True,
                    icon=self.showing,
                    icon_bg="#00000040",
                ),
            )
        ]
        body = [
            Node(
                cls="android.widget.TextView",
                bounds=(
                    PAD,
                    CONTENT_TOP + 220 + i * 220,
                    SCREEN_W - PAD,
                    CONTENT_TOP + 400 + i * 220,
                ),
                text=f"{self.showing} · featured item {i + 1}",
                style=Style(bg="#f1f3f4", radius=30, size=40),
            )
            for i in range(6)
        ]
        return Screen(header=header, body=body)

    @property
    def display_label(self) -> str:
        return self.showing

    def state_params(self) -> dict[str, str]:
        return {"label": self.showing}


def _color_for(label: str) -> str:
    palette = ("#ea4335", "#34a853", "#fbbc04", "#4285f4", "#a142f4", "#f06292", "#00897b")
    return palette[sum(map(ord, label)) % len(palette)]


def open_installed_app(phone: PhoneHost, label: str) -> bool:
    """Launch the app called ``label``: its simulated screens, or the generic stand-in app."""
    if label not in phone.installed:
        return False
    app = phone.app_by_label(label)
    if app is not None and app.package != GENERIC:
        return phone.launch(app.package)
    generic = phone.apps.get(GENERIC)
    if not isinstance(generic, GenericApp):
        return False
    generic.showing = label
    return phone.launch(GENERIC)
