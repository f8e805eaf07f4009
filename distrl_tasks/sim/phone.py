"""One simulated Android phone: apps, focus, scrolling, system bars and input semantics.

The phone is synchronous and deterministic. Latency and faults belong to the transport layer
(:mod:`distrl_tasks.sim.shell`), so tests of app logic never wait. The system bars and the
notification shade are drawn by :mod:`distrl_tasks.sim.system_ui`; the phone decides when they
show and what their buttons do.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps import (
    APP_CLASSES,
    CHROME,
    DEFAULT_USER_APPS,
    GENERIC,
    LAUNCHER,
    NOTIFICATIONS,
)
from distrl_tasks.sim.dynamics import Dynamics
from distrl_tasks.sim.render import PNG_CACHE
from distrl_tasks.sim.screen_tree import max_scroll, view_tree
from distrl_tasks.sim.state import SimState
from distrl_tasks.sim.system_ui import (
    nav_bar,
    notification_shade,
    status_bar,
)
from distrl_tasks.sim.ui import (
    SCREEN_H,
    SCREEN_W,
    STATUS_BAR_H,
    Node,
    hit_test,
    signature,
    to_uiautomator_xml,
)

KEYCODE_HOME = 3
KEYCODE_BACK = 4
KEYCODE_ENTER = 66
KEY_NAMES = {"KEYCODE_HOME": 3, "KEYCODE_BACK": 4, "KEYCODE_ENTER": 66, "HOME": 3, "BACK": 4}
TAP_SLOP = 24  # a swipe shorter than this (logical px) is a tap, as Android's touch slop


class EpisodeTask(Protocol):
    """What the phone needs of a task: the simulator defines it, ``tasks.task.Task`` implements it.

    ``setup`` applies the task's preconditions to a freshly reset phone; ``check`` is the pure
    success predicate over a state snapshot.
    """

    goal: str
    family: str

    def setup(self, phone: Phone) -> None: ...

    def check(self, state: SimState) -> bool: ...


GoalParser = Callable[[str], EpisodeTask]
"""Turns a goal's text into its task; ``ValueError`` for text it does not know. The simulator
knows no task families: whoever builds a farm hands one in (``tasks.parse.parse_goal``)."""


class Phone:
    """A simulated device. Its methods take logical pixels on a 1080x2400 layout.

    The display a client sees over ADB is ``display_size`` (the layout times ``render_scale``):
    the ADB shell converts ``input`` coordinates and uiautomator bounds between the two, so
    ``wm size`` equals the screencap's pixel size, as on a real device.
    """

    def __init__(
        self,
        serial: str = "emulator-5554",
        *,
        seed: int = 0,
        render_scale: float = 0.25,
        dynamics: Dynamics | None = None,
        goal_parser: GoalParser | None = None,
    ):
        # live-world perturbations (static: none); the farm passes one seeded per device
        self.dynamics = dynamics if dynamics is not None else Dynamics(seed=seed, serial=serial)
        self.serial = serial
        self.seed = seed
        self.render_scale = render_scale
        self.rng = random.Random(seed)
        self.apps: dict[str, App] = {}
        self._app_classes = APP_CLASSES
        self.task: EpisodeTask | None = None
        self.goal_parser = goal_parser  # what ``simctl task set`` uses; None: the command fails
        self.version = 0  # bumped on every mutation; keys the composed-screen cache
        self._composed: tuple[int, Node, str] | None = None
        self.reset()

    # ----- lifecycle ---------------------------------------------------------------------
    def reset(self) -> None:
        """Restore the boot snapshot: home screen, default apps and settings, no task."""
        self.apps = {cls.package: cls(self) for cls in self._app_classes}
        self.launcher = self.apps[LAUNCHER]
        self.front: App = self.launcher
        self.recents: list[App] = []
        # package -> the app that was in front when it came to the front: where BACK at its
        # root returns (the launcher for an app opened from home, as on a device)
        self.came_from: dict[str, App] = {}
        self.focus: str | None = None
        self.scroll: dict[tuple[str, Page], int] = {}
        self.shade_open = False
        self.crashed = False
        self.installed: set[str] = {a.label for a in self.apps.values() if a.system}
        self.installed |= set(DEFAULT_USER_APPS)
        self.alarms: dict[str, bool] = {"07:00": False, "08:30": False}
        self.notifications: dict[str, bool] = dict.fromkeys(self.installed, True)
        self.task = None
        self.task_start: SimState | None = None
        self.just_navigated = False
        self.nav = 0  # bumped on every navigation; the dynamics draw per new screen
        self.dynamics.new_episode()
        self._touch()

    def _touch(self) -> None:
        self.version += 1

    def app_by_label(self, label: str) -> App | None:
        low = label.lower()
        for app in self.apps.values():
            if app.label.lower() == low:
                return app
        return None

    # ----- navigation hooks used by apps ----------------------------------------------------
    def on_navigate(self, app: App) -> None:
        """An app changed its page: drop focus, mark a fresh load (for blank-frame faults)."""
        self.focus = None
        self.just_navigated = True
        self.nav += 1
        self._touch()

    def launch(self, package: str) -> bool:
        """Bring an app to the front (launcher icon, intent or `am start`)."""
        app = self.apps.get(package)
        if app is None or (app.label not in self.installed and package != GENERIC):
            return False
        if app is not self.front:
            if self.front is not self.launcher:
                self.recents = [a for a in self.recents if a is not self.front] + [self.front]
            self.came_from[app.package] = self.front
            self.front = app
        app.on_open()
        self.focus = None
        self.shade_open = False
        self.just_navigated = True
        self.nav += 1
        self._touch()
        return True

    def go_home(self) -> None:
        if self.front is not self.launcher:
            self.recents = [a for a in self.recents if a is not self.front] + [self.front]
        self.front = self.launcher
        self.launcher.reset()
        self.focus = None
        self.shade_open = False
        self.nav += 1
        self.dynamics.on_home(self)
        self._touch()

    # ----- input ---------------------------------------------------------------------------
    def tap(self, x: float, y: float) -> None:
        self._touch()
        if self.shade_open:
            node = hit_test(self._shade(), x, y)
            if node is None or node.action == "shade:close":
                self.shade_open = False
            return
        self.compose()  # settles the dynamics: an overlay that is due is on screen
        self.dynamics.on_input(self)
        if self.dynamics.on_tap(self, x, y):
            self._touch()
            return
        node = hit_test(self.compose(), x, y)
        if node is None:
            return
        if node.editable:
            self.focus = node.resource_id
            self._touch()
            return
        if node.action == "sys:back":
            self.keyevent(KEYCODE_BACK)
        elif node.action == "sys:home":
            self.keyevent(KEYCODE_HOME)
        elif node.action == "sys:recents":
            pass  # the overview screen is not simulated; Android shows recents, nothing changes
        elif node.action is not None:
            front = self.front
            front.on_tap(node.action)
            if self.front is front and node.action.startswith("open:"):
                self.focus = None
        self._touch()

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        dx, dy = x2 - x1, y2 - y1
        if abs(dx) < TAP_SLOP and abs(dy) < TAP_SLOP:
            self.tap(x1, y1)
            return
        self._touch()
        if self.shade_open:
            if dy < 0:
                self.shade_open = False
            return
        self.compose()
        self.dynamics.on_input(self)
        if self.dynamics.on_swipe(self, x1, y1):
            return
        self._touch()  # composed above: what follows changes the screen
        if y1 < STATUS_BAR_H + 40 and dy > 300:
            self.shade_open = True
            self.focus = None
            return
        if abs(dy) < abs(dx):
            return  # horizontal swipes are not used by any simulated app
        handler = getattr(self.front, "on_swipe", None)
        if handler is not None and handler(dx, dy):
            return
        self._scroll_by(-dy)

    def input_text(self, text: str) -> None:
        """Type into the focused field; without focus Android drops the text."""
        self._touch()
        self.dynamics.on_input(self)
        if self.focus is None or self.dynamics.blocks_typing():
            return
        app = self.front
        app.set_field(self.focus, app.field_text(self.focus) + text)

    def keyevent(self, code: int | str) -> None:
        if isinstance(code, str):
            code = KEY_NAMES.get(code.upper(), int(code) if code.isdigit() else -1)
        self._touch()
        self.compose()
        self.dynamics.on_input(self)
        if code == KEYCODE_HOME:
            self.go_home()
        elif code == KEYCODE_BACK:
            self.back()
        elif code == KEYCODE_ENTER:
            if self.focus is not None and not self.dynamics.blocks_typing():
                rid, app = self.focus, self.front
                app.on_submit(rid, app.field_text(rid))
        # every other key code is a no-op, as on a phone with no app bound to it
        self._touch()  # composed above: the key may have changed the screen

    def back(self) -> None:
        if self.shade_open:
            self.shade_open = False
            return
        if self.dynamics.on_back(self):
            return
        self.focus = None
        if self.front.back():
            return
        if self.front is self.launcher:
            return
        # the app's back stack is empty: it finishes, and what was in front when it came to the
        # front returns (home for an app opened from the launcher, the caller for an app another
        # app or `am start` opened over it)
        finished = self.front
        finished.reset()
        self.recents = [a for a in self.recents if a is not finished]
        back_to = self.came_from.pop(finished.package, self.launcher)
        if back_to is not self.launcher and (
            back_to is finished
            or (back_to.package != GENERIC and back_to.label not in self.installed)
        ):
            back_to = self.launcher
        if back_to is self.launcher:
            self.launcher.reset()
        self.front = back_to
        self.just_navigated = True
        self.nav += 1

    # ----- scrolling -----------------------------------------------------------------------
    def _scroll_key(self) -> tuple[str, Page]:
        return (self.front.package, self.front.page)

    def _scroll_by(self, delta: float) -> None:
        key = self._scroll_key()
        limit = max_scroll(self._screen())
        self.scroll[key] = int(min(limit, max(0, self.scroll.get(key, 0) + delta)))

    # ----- screen --------------------------------------------------------------------------
    def _screen(self) -> Screen:
        """The front app's screen as this episode's dynamics show it (drift, slow loads)."""
        return self.dynamics.transform(self, self.front.build(self.front.page))

    def compose(self) -> Node:
        """The full view tree: status bar, app content (scrolled and clipped), nav bar, then
        any interruption of the live-world dynamics and the notification shade on top."""
        self.dynamics.settle(self)
        if self._composed is not None and self._composed[0] == self.version:
            return self._composed[1]
        screen = self._screen()  # first: the dynamics draw for this screen, as they always did
        on_top = [status_bar(), nav_bar()]
        if self.dynamics.overlay is not None:
            on_top.append(self.dynamics.overlay.node)
        if self.shade_open:
            on_top.append(self._shade())
        offset = self.scroll.get(self._scroll_key(), 0)
        root = view_tree(screen, offset=offset, focus=self.focus, on_top=on_top)
        self._composed = (self.version, root, signature(root))
        return root

    def screenshot_png(self) -> bytes:
        root = self.compose()
        assert self._composed is not None
        png = PNG_CACHE.get_or_render(root, self.render_scale, self._composed[2])
        self.dynamics.observed(self)
        return png

    def dump_tree(self) -> tuple[Node, str]:
        """The view tree ``uiautomator dump`` serializes and its package: the active window's.

        An interruption that is a window of its own on Android (a permission or
        app-not-responding dialog, a sign-in or interstitial activity) is dumped alone, as a
        device dumps the focused window; otherwise the whole composed screen, in-page overlays
        included, under the front app's package. The screenshot always shows everything.
        """
        root = self.compose()
        overlay = self.dynamics.overlay
        # the pulled-down shade is the window in front, and it is drawn in the composed tree
        if overlay is not None and overlay.window and not self.shade_open:
            return overlay.node, overlay.window
        return root, self.front.package

    def ui_xml(self) -> str:
        """The hierarchy in logical pixels (what in-process drivers such as the expert read)."""
        root, package = self.dump_tree()
        xml = to_uiautomator_xml(root, package=package)
        self.dynamics.observed(self)
        return xml

    def display_xml(self) -> str:
        """The hierarchy in display pixels, as ``uiautomator dump`` prints it over ADB."""
        root, package = self.dump_tree()
        xml = to_uiautomator_xml(root, package=package, scale=self.render_scale)
        self.dynamics.observed(self)
        return xml

    @property
    def display_size(self) -> tuple[int, int]:
        """Display pixels (width, height): ``wm size`` and the screencap's size."""
        return max(1, round(SCREEN_W * self.render_scale)), max(
            1, round(SCREEN_H * self.render_scale)
        )

    def to_logical(self, v: float) -> float:
        """A display-pixel coordinate (from ``input``) in logical pixels."""
        return v / self.render_scale

    def _shade(self) -> Node:
        return notification_shade(NOTIFICATIONS, self.notifications)

    # ----- state ---------------------------------------------------------------------------
    def state(self) -> SimState:
        app = self.front
        params = dict(app.page.params)
        extra = app.state_params()
        playing = extra.pop("playing", "")
        params.update(extra)
        chrome = self.apps.get(CHROME)
        tabs = getattr(chrome, "tabs", 1), getattr(chrome, "incognito_tabs", 0)
        windows = getattr(chrome, "windows", 1)
        start = self.task_start
        return SimState(
            app=app.package,
            app_label=app.display_label,
            page=app.page.name,
            params=params,
            focused_field=self.focus or "",
            field_text=app.field_text(self.focus) if self.focus else "",
            shade_open=self.shade_open,
            installed=frozenset(self.installed),
            alarms=tuple(t for t, on in self.alarms.items() if on),
            notifications=dict(self.notifications),
            initial_notifications=dict(start.notifications) if start else dict(self.notifications),
            chrome_tabs=tabs[0],
            chrome_incognito_tabs=tabs[1],
            chrome_windows=windows,
            initial_chrome=(start.chrome_tabs, start.chrome_incognito_tabs, start.chrome_windows)
            if start
            else (tabs[0], tabs[1], windows),
            playing=playing,
            crashed=self.crashed,
        )

    def set_task(self, task: EpisodeTask) -> None:
        """Start an episode: reset, apply the task's preconditions, remember the start state."""
        self.reset()
        task.setup(self)
        self.task = task
        self.task_start = self.state()
        self._touch()

    def check_task(self) -> dict[str, Any]:
        if self.task is None:
            return {"success": False, "error": "no task set (use: simctl task set '<goal>')"}
        state = self.state()
        return {
            "success": bool(self.task.check(state)),
            "goal": self.task.goal,
            "family": self.task.family,
            "app": state.app,
            "page": state.page,
        }
