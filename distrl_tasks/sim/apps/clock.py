"""The Clock app (deskclock): alarms with on/off switches, a keyboard-mode time picker, world
clock, timer and stopwatch tabs.

Alarms live on the phone (``phone.alarms``: 24-hour ``"HH:MM"`` -> enabled) so task predicates
see them through :class:`~distrl_tasks.sim.state.SimState`. New alarms are entered the way
Android's time picker does in keyboard mode: an hour field (1-12), a minute field (00-59), an
AM/PM toggle and Cancel/OK; the fields accept at most two digits, like the real number inputs.
"""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.clock_picker import ACCENT, HOUR_ID, MINUTE_ID, picker_screen, to_24h
from distrl_tasks.sim.apps.packages import CLOCK
from distrl_tasks.sim.system_ui import CLOCK_TEXT
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD, button

TABS = (("alarms", "Alarm"), ("clock", "Clock"), ("timer", "Timer"), ("stopwatch", "Stopwatch"))
TAB_H = 210
# (city, offset in minutes from local time) for the world clock; local is US Pacific in November
WORLD = (("New York", 180), ("London", 480), ("Tokyo", 1020), ("Sydney", 1140))


def format_12h(hhmm: str) -> str:
    """``"18:05"`` -> ``"6:05 PM"``; ``"00:00"`` -> ``"12:00 AM"``."""
    hour, minute = (int(v) for v in hhmm.split(":"))
    suffix = "AM" if hour < 12 else "PM"
    return f"{hour % 12 or 12}:{minute:02d} {suffix}"


def _now_minutes() -> int:
    hour, minute = (int(v) for v in CLOCK_TEXT.split(":"))
    return hour * 60 + minute


def switch(bounds: tuple[int, int, int, int], on: bool, desc: str, action: str, rid: str) -> Node:
    """A Material switch: a checkable node drawn as a track with a round thumb."""
    x1, y1, x2, y2 = bounds
    cy = (y1 + y2) // 2
    track = Node(
        cls="android.view.View",
        bounds=(x1, cy - 40, x2, cy + 40),
        style=Style(bg=ACCENT if on else "#dadce0", radius=40),
    )
    tx = x2 - 76 if on else x1 + 4
    thumb = Node(
        cls="android.view.View",
        bounds=(tx, cy - 36, tx + 72, cy + 36),
        style=Style(bg="#ffffff" if on else "#80868b", radius=36),
    )
    node = Node(
        cls="android.widget.Switch",
        bounds=bounds,
        resource_id=rid,
        content_desc=desc,
        clickable=True,
        checkable=True,
        checked=on,
        action=action,
    )
    return node.add(track, thumb)


class Clock(App):
    package = CLOCK
    label = "Clock"
    color = ACCENT
    home_page = "alarms"

    def reset(self) -> None:
        super().reset()
        self.pm = True
        self.error = ""
        self.timer_digits = ""  # typed timer duration, hhmmss digits shifted in from the right
        self.timer_running = False
        self.stopwatch_start: int | None = None  # phone.version when the stopwatch started

    # ----- events ----------------------------------------------------------------------------
    def set_field(self, rid: str, text: str) -> None:
        if rid in (HOUR_ID, MINUTE_ID):
            # number inputs of the picker: digits only, at most two of them
            text = "".join(c for c in text if c.isdigit())[:2]
            self.error = ""
        super().set_field(rid, text)

    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if kind == "tab":
            self.stack = [Page(arg)]
            self.phone.on_navigate(self)
        elif kind == "toggle":
            self.phone.alarms[arg] = not self.phone.alarms.get(arg, False)
        elif kind == "add_alarm":
            self.fields.pop(HOUR_ID, None)
            self.fields.pop(MINUTE_ID, None)
            self.pm = _now_minutes() >= 12 * 60  # the picker starts at the current time's half
            self.error = ""
            self.push("new_alarm")
        elif kind == "ampm":
            self.pm = arg == "PM"
        elif kind == "cancel":
            self.back()
        elif kind == "ok":
            self._confirm()
        elif kind == "timer_key":
            self._timer_key(arg)
        elif kind == "stopwatch":
            self._stopwatch(arg)
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        if rid == HOUR_ID:
            self.phone.focus = MINUTE_ID  # the IME "next" action moves on to the minute field
        elif rid == MINUTE_ID:
            self.phone.focus = None  # "done" hides the keyboard

    def _confirm(self) -> None:
        hhmm = to_24h(self.field_text(HOUR_ID), self.field_text(MINUTE_ID), self.pm)
        if hhmm is None:
            self.error = "Enter a valid time"
            return
        self.phone.alarms[hhmm] = True
        self.back()

    def _timer_key(self, key: str) -> None:
        if key == "del":
            self.timer_digits = self.timer_digits[:-1]
        elif key == "start":
            self.timer_running = bool(self.timer_digits.strip("0"))
        elif key == "stop":
            self.timer_running = False
            self.timer_digits = ""
        elif key.isdigit() and not self.timer_running:
            self.timer_digits = (self.timer_digits + key).lstrip("0")[-6:]

    def _stopwatch(self, what: str) -> None:
        if what == "start":
            self.stopwatch_start = self.phone.version
        else:
            self.stopwatch_start = None

    def state_params(self) -> dict[str, str]:
        name = self.page.name
        if name == "new_alarm":
            return {
                "hour": self.field_text(HOUR_ID),
                "minute": self.field_text(MINUTE_ID),
                "ampm": "PM" if self.pm else "AM",
                "error": self.error,
            }
        if name == "timer":
            return {"timer": self._timer_text(":"), "running": "1" if self.timer_running else "0"}
        if name == "stopwatch":
            return {"running": "1" if self.stopwatch_start is not None else "0"}
        return {}

    # ----- screens ---------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        if page.name == "new_alarm":
            return picker_screen(
                self.field_text(HOUR_ID), self.field_text(MINUTE_ID), self.pm, self.error
            )
        title = dict(TABS).get(page.name, "Alarm")
        header = [
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP, SCREEN_W - PAD, CONTENT_TOP + 170),
                text=title,
                resource_id=f"{CLOCK}:id/title",
                style=Style(bg="#ffffff", size=60, fg="#202124"),
            )
        ]
        top = CONTENT_TOP + 200
        if page.name == "clock":
            body = self._world(top)
        elif page.name == "timer":
            body = self._timer(top)
        elif page.name == "stopwatch":
            body = self._stopwatch_body(top)
        else:
            body = self._alarm_list(top)
        bar_y = max(CONTENT_BOTTOM - TAB_H - 30, max(n.bounds[3] for n in body) + 40)
        body.append(self._tab_bar(bar_y, page.name))
        return Screen(header=header, body=body)

    def _tab_bar(self, y: int, current: str) -> Node:
        bar = Node(cls="android.widget.LinearLayout", bounds=(0, y, SCREEN_W, y + TAB_H))
        width = SCREEN_W // len(TABS)
        for i, (page, label) in enumerate(TABS):
            x = i * width
            on = page == current
            cell = Node(
                cls="android.widget.FrameLayout",
                bounds=(x, y, x + width, y + TAB_H),
                content_desc=label,
                clickable=True,
                action=f"tab:{page}",
            )
            cell.add(
                Node(
                    cls="android.view.View",
                    bounds=(x + width // 2 - 80, y + 14, x + width // 2 + 80, y + 104),
                    style=Style(bg="#d3e3fd" if on else None, radius=45),
                ),
                Node(
                    cls="android.widget.ImageView",
                    bounds=(x + width // 2 - 50, y + 14, x + width // 2 + 50, y + 104),
                    style=Style(icon=label, icon_bg=ACCENT if on else "#5f6368", size=44),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(x, y + 110, x + width, y + 180),
                    text=label,
                    style=Style(size=36, align="center", bold=on),
                ),
            )
            bar.add(cell)
        return bar

    def _alarm_list(self, top: int) -> list[Node]:
        body: list[Node] = []
        y = top
        for hhmm in sorted(self.phone.alarms):
            on = self.phone.alarms[hhmm]
            label = format_12h(hhmm)
            card = Node(
                cls="android.view.ViewGroup",
                bounds=(PAD, y, SCREEN_W - PAD, y + 250),
                style=Style(bg="#f1f3f4", radius=48),
            )
            card.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD + 30, y + 20, SCREEN_W - 300, y + 160),
                    text=label,
                    resource_id=f"{CLOCK}:id/digital_clock",
                    style=Style(size=100, fg="#202124" if on else "#80868b"),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD + 30, y + 160, SCREEN_W - 300, y + 230),
                    text="Every day" if on else "Not scheduled",
                    style=Style(size=38, fg="#5f6368"),
                ),
                switch(
                    (SCREEN_W - 260, y + 60, SCREEN_W - PAD - 40, y + 190),
                    on,
                    f"{label} alarm",
                    f"toggle:{hhmm}",
                    f"{CLOCK}:id/onoff",
                ),
            )
            body.append(card)
            y += 290
        fab_y = max(y + 40, CONTENT_BOTTOM - TAB_H - 300)
        body.append(
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W // 2 - 130, fab_y, SCREEN_W // 2 + 130, fab_y + 230),
                text="+",
                resource_id=f"{CLOCK}:id/fab",
                content_desc="Add alarm",
                clickable=True,
                action="add_alarm",
                style=Style(bg="#d3e3fd", fg="#041e49", size=130, align="center", radius=60),
            )
        )
        return body

    def _world(self, top: int) -> list[Node]:
        now = _now_minutes()
        body = [
            Node(
                cls="android.widget.TextClock",
                bounds=(PAD, top + 40, SCREEN_W - PAD, top + 300),
                text=format_12h(CLOCK_TEXT),
                resource_id=f"{CLOCK}:id/digital_clock",
                style=Style(size=170, align="center"),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 300, SCREEN_W - PAD, top + 380),
                text="Sat, Nov 21",
                resource_id=f"{CLOCK}:id/date",
                style=Style(size=44, fg="#5f6368", align="center"),
            ),
        ]
        y = top + 480
        for city, offset in WORLD:
            total = now + offset
            day = "Today" if total < 24 * 60 else "Tomorrow"
            local = f"{total // 60 % 24:02d}:{total % 60:02d}"
            row = Node(
                cls="android.view.ViewGroup",
                bounds=(PAD, y, SCREEN_W - PAD, y + 200),
                style=Style(bg="#f1f3f4", radius=40),
            )
            row.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD + 30, y + 20, 600, y + 120),
                    text=city,
                    style=Style(size=48, bold=True),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD + 30, y + 120, 600, y + 180),
                    text=f"{day}, +{offset // 60} hrs",
                    style=Style(size=36, fg="#5f6368"),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(560, y, SCREEN_W - PAD - 30, y + 200),
                    text=format_12h(local),
                    style=Style(size=64, align="right"),
                ),
            )
            body.append(row)
            y += 230
        return body

    def _timer_text(self, sep: str = "") -> str:
        d = self.timer_digits.rjust(6, "0")
        if sep:
            return f"{d[:2]}{sep}{d[2:4]}{sep}{d[4:]}"
        return f"{d[:2]}h {d[2:4]}m {d[4:]}s"

    def _timer(self, top: int) -> list[Node]:
        body = [
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 20, SCREEN_W - PAD, top + 240),
                text=self._timer_text() if not self.timer_running else self._timer_text(":"),
                resource_id=f"{CLOCK}:id/timer_setup_time",
                style=Style(
                    size=130, align="center", fg=ACCENT if self.timer_running else "#202124"
                ),
            )
        ]
        keys = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "00", "0", "del")
        for i, key in enumerate(keys):
            row, col = divmod(i, 3)
            x, y = 150 + col * 270, top + 300 + row * 230
            label = {"del": "DEL", "00": "00"}.get(key, key)
            body.append(
                Node(
                    cls="android.widget.Button",
                    bounds=(x, y, x + 240, y + 200),
                    text=label,
                    content_desc="Delete" if key == "del" else key,
                    clickable=True,
                    action=f"timer_key:{key}",
                    style=Style(bg="#f1f3f4", size=70, align="center", radius=100),
                )
            )
        y = top + 1260
        if self.timer_running:
            body.append(_pill(y, "Stop", "timer_key:stop", "#d93025"))
        elif self.timer_digits:
            body.append(_pill(y, "Start", "timer_key:start", ACCENT))
        return body

    def _stopwatch_body(self, top: int) -> list[Node]:
        running = self.stopwatch_start is not None
        # time advances with input events (about one second each), so it stays deterministic
        ticks = (self.phone.version - self.stopwatch_start) if running else 0
        text = f"{ticks // 60:02d}:{ticks % 60:02d}.{(ticks * 37) % 100:02d}"
        return [
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 300, SCREEN_W - PAD, top + 600),
                text=text,
                resource_id=f"{CLOCK}:id/stopwatch_time_text",
                style=Style(size=170, align="center"),
            ),
            _pill(
                top + 1100,
                "Pause" if running else "Start",
                "stopwatch:stop" if running else "stopwatch:start",
                ACCENT,
            ),
        ]


def _pill(y: int, text: str, action: str, color: str) -> Node:
    """The wide round Start/Stop/Pause button under the timer and the stopwatch."""
    return button(
        (SCREEN_W // 2 - 200, y, SCREEN_W // 2 + 200, y + 180),
        text,
        action,
        bg=color,
        size=54,
        radius=90,
    )
