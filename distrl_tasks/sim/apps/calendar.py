"""The Calendar app: month, week and day views of deterministic events around the simulated date.

The phone's date is Saturday, November 21, 2020 (the status bar shows 12:30). Events for any date
are derived from a stable hash of the date, so every view of every day is reproducible; today
also holds the "Team sync" that the notification shade announces.
"""

from __future__ import annotations

import calendar as pycal
import hashlib
from dataclasses import dataclass
from datetime import date, timedelta

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import CALENDAR
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD

TODAY = date(2020, 11, 21)
ACCENT = "#1a73e8"
VIEWS = (("day", "Day"), ("week", "Week"), ("month", "Month"))
HEADER_BOTTOM = CONTENT_TOP + 300
# (title, place) pool the daily events are drawn from
POOL = (
    ("Project review", "Zoom"),
    ("Dentist appointment", "Smile Dental"),
    ("Lunch with Priya", "Cafe Luna"),
    ("Gym", "FitLife"),
    ("1:1 with Alex", "Room 2"),
    ("Yoga class", "Studio 9"),
    ("Call with Mom", ""),
    ("Book club", "City Library"),
    ("Grocery shopping", "Safeway"),
    ("Soccer practice", "Central Park"),
    ("Design standup", "Room 7"),
    ("Haircut", "Main St Barbers"),
)
COLORS = ("#039be5", "#33b679", "#f4511e", "#8e24aa", "#e67c73", "#f6bf26", "#3f51b5")


@dataclass(frozen=True)
class Event:
    """One calendar entry; times are minutes after midnight."""

    day: date
    start: int
    minutes: int
    title: str
    place: str = ""

    @property
    def when(self) -> str:
        return f"{_clock(self.start)} - {_clock(self.start + self.minutes)}"

    @property
    def color(self) -> str:
        return COLORS[int(hashlib.md5(self.title.encode()).hexdigest(), 16) % len(COLORS)]


def _clock(minutes: int) -> str:
    hour, minute = divmod(minutes, 60)
    return f"{hour % 12 or 12}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def events_on(day: date) -> list[Event]:
    """The events of ``day``, sorted by start time (0-3 per day, fewer on weekends)."""
    digest = hashlib.blake2b(day.isoformat().encode(), digest_size=16).digest()
    weekend = day.weekday() >= 5
    count = digest[0] % (2 if weekend else 4)
    found: dict[int, Event] = {}
    for i in range(count):
        title, place = POOL[digest[1 + i] % len(POOL)]
        start = (8 + digest[5 + i] % 11) * 60 + (30 if digest[9 + i] % 2 else 0)
        minutes = (30, 60, 60, 90)[digest[12 + i] % 4]
        found.setdefault(start, Event(day, start, minutes, title, place))
    if day == TODAY:
        found[14 * 60] = Event(day, 14 * 60, 60, "Team sync", "Room 4")
    return sorted(found.values(), key=lambda e: e.start)


def week_of(day: date) -> list[date]:
    """Sunday..Saturday of the week holding ``day`` (US week start, as the phone's locale)."""
    sunday = day - timedelta(days=(day.weekday() + 1) % 7)
    return [sunday + timedelta(days=i) for i in range(7)]


def _parse_day(text: str) -> date:
    if not text:
        return TODAY
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"calendar day param must be YYYY-MM-DD, got {text!r}") from exc


class Calendar(App):
    package = CALENDAR
    label = "Calendar"
    color = ACCENT
    home_page = "month"

    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if kind == "view":
            # switching views replaces the page: BACK leaves the app, as in Google Calendar
            if arg == "day":
                self.replace("day", date=TODAY.isoformat())
            else:
                self.replace(arg)
        elif kind == "day":
            self.push("day", date=arg)
        else:
            super().on_tap(action)

    def state_params(self) -> dict[str, str]:
        if self.page.name == "week":
            days = week_of(TODAY)
            return {"start": days[0].isoformat(), "end": days[-1].isoformat()}
        if self.page.name == "month":
            return {"month": TODAY.strftime("%Y-%m")}
        return {}

    # ----- screens ---------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        if page.name == "day":
            day = _parse_day(page.get("date"))
            body = self._day(day)
            title = day.strftime("%B %Y")
        elif page.name == "week":
            body = self._week()
            title = TODAY.strftime("%B %Y")
        else:
            body = self._month()
            title = TODAY.strftime("%B %Y")
        return Screen(header=self._header(title, page.name), body=body)

    def _header(self, title: str, current: str) -> list[Node]:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, HEADER_BOTTOM),
            style=Style(bg="#ffffff"),
        )
        bar.add(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP, SCREEN_W - 200, CONTENT_TOP + 160),
                text=title,
                resource_id=f"{CALENDAR}:id/date_picker_text_view",
                style=Style(size=58, icon="@menu", icon_bg="#5f6368"),
            ),
            Node(
                cls="android.widget.Button",
                bounds=(SCREEN_W - 170, CONTENT_TOP + 35, SCREEN_W - PAD, CONTENT_TOP + 125),
                text=str(TODAY.day),
                content_desc="Jump to Today",
                clickable=True,
                action="view:day",
                style=Style(border="#5f6368", size=40, align="center", radius=16),
            ),
        )
        width = (SCREEN_W - 2 * PAD) // len(VIEWS)
        for i, (name, label) in enumerate(VIEWS):
            on = name == current
            x = PAD + i * width
            bar.add(
                Node(
                    cls="android.widget.Button",
                    bounds=(x + 8, CONTENT_TOP + 170, x + width - 8, CONTENT_TOP + 270),
                    text=label,
                    resource_id=f"{CALENDAR}:id/{name}_view",
                    content_desc=f"{label} view",
                    clickable=True,
                    checkable=True,
                    checked=on,
                    action=f"view:{name}",
                    style=Style(
                        bg="#d3e3fd" if on else "#ffffff",
                        border=None if on else "#c4c7c5",
                        fg="#041e49" if on else "#444746",
                        size=40,
                        bold=on,
                        align="center",
                        radius=50,
                    ),
                )
            )
        return [bar]

    def _month(self) -> list[Node]:
        top = HEADER_BOTTOM + 10
        col_w = SCREEN_W // 7
        body = [
            Node(
                cls="android.widget.TextView",
                bounds=(i * col_w, top, (i + 1) * col_w, top + 70),
                text=name,
                style=Style(size=34, fg="#5f6368", align="center"),
            )
            for i, name in enumerate("SMTWTFS")
        ]
        weeks = pycal.Calendar(firstweekday=6).monthdatescalendar(TODAY.year, TODAY.month)
        row_h = (CONTENT_BOTTOM - top - 90) // len(weeks)
        for r, week in enumerate(weeks):
            for c, day in enumerate(week):
                x, y = c * col_w, top + 80 + r * row_h
                body.append(self._month_cell((x, y, x + col_w, y + row_h), day))
        return body

    def _month_cell(self, bounds: tuple[int, int, int, int], day: date) -> Node:
        x1, y1, x2, y2 = bounds
        events = events_on(day)
        in_month = day.month == TODAY.month
        cell = Node(
            cls="android.view.View",
            bounds=bounds,
            content_desc=f"{day.strftime('%A, %B')} {day.day}, {len(events)} events",
            clickable=True,
            action=f"day:{day.isoformat()}",
            style=Style(border="#e0e0e0"),
        )
        today = day == TODAY
        cell.add(
            Node(
                cls="android.widget.TextView",
                bounds=((x1 + x2) // 2 - 36, y1 + 8, (x1 + x2) // 2 + 36, y1 + 80),
                text=str(day.day),
                style=Style(
                    bg=ACCENT if today else None,
                    fg="#ffffff" if today else ("#202124" if in_month else "#9aa0a6"),
                    size=36,
                    bold=today,
                    align="center",
                    radius=36,
                ),
            )
        )
        for i, event in enumerate(events[:3]):
            y = y1 + 90 + i * 64
            if y + 58 > y2:
                break
            cell.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(x1 + 4, y, x2 - 4, y + 58),
                    text=event.title,
                    style=Style(bg=event.color, fg="#ffffff", size=24, radius=8),
                )
            )
        return cell

    def _week(self) -> list[Node]:
        days = week_of(TODAY)
        top = HEADER_BOTTOM + 10
        col_w = SCREEN_W // 7
        body: list[Node] = []
        for i, day in enumerate(days):
            today = day == TODAY
            x1, x2 = i * col_w + 10, (i + 1) * col_w - 10
            chip = Node(
                cls="android.view.ViewGroup",
                bounds=(x1, top, x2, top + 150),
                content_desc=f"{day.strftime('%A, %B')} {day.day}",
                clickable=True,
                action=f"day:{day.isoformat()}",
                style=Style(bg=ACCENT if today else "#f1f3f4", radius=30),
            )
            fg = "#ffffff" if today else "#202124"
            chip.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(x1, top + 10, x2, top + 65),
                    text=day.strftime("%a"),
                    style=Style(size=30, fg=fg, align="center"),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(x1, top + 65, x2, top + 140),
                    text=str(day.day),
                    style=Style(size=48, fg=fg, align="center", bold=today),
                ),
            )
            body.append(chip)
        y = top + 190
        for day in days:
            today = day == TODAY
            events = events_on(day)
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 80),
                    text=day.strftime("%A, %B ") + str(day.day) + ("  (Today)" * today),
                    style=Style(size=40, bold=True, fg=ACCENT if today else "#202124"),
                )
            )
            if not events:
                body.append(_line(y, "No events", x1=SCREEN_W - 400, height=80))
            y += 90
            for event in events:
                body.append(_event_card(y, event))
                y += 155
            y += 10
        return body

    def _day(self, day: date) -> list[Node]:
        top = HEADER_BOTTOM + 10
        body = [
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top, SCREEN_W - PAD, top + 110),
                text=day.strftime("%A, %B ") + str(day.day),
                resource_id=f"{CALENDAR}:id/day_title",
                style=Style(size=48, bold=True, fg=ACCENT if day == TODAY else "#202124"),
            )
        ]
        first_hour, hour_h = 7, 120
        grid_top = top + 140
        for h in range(first_hour, 22):
            y = grid_top + (h - first_hour) * hour_h
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(0, y, 180, y + hour_h),
                    text=_clock(h * 60).replace(":00", ""),
                    style=Style(size=30, fg="#5f6368", align="right", border="#f1f3f4"),
                )
            )
        events = events_on(day)
        for event in events:
            y = grid_top + (event.start - first_hour * 60) * hour_h // 60
            height = max(80, event.minutes * hour_h // 60 - 6)
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(200, y, SCREEN_W - PAD, y + height),
                    text=f"{event.title}, {event.when}",
                    content_desc=f"{event.title}, {event.when}, {event.place}".rstrip(", "),
                    style=Style(bg=event.color, fg="#ffffff", size=36, radius=16),
                )
            )
        if not events:
            body.append(_line(grid_top, "No events"))
        return body


def _line(y: int, text: str, *, x1: int = PAD + 200, height: int = 90) -> Node:
    return Node(
        cls="android.widget.TextView",
        bounds=(x1, y, SCREEN_W - PAD, y + height),
        text=text,
        style=Style(size=38, fg="#80868b", align="right" if x1 > SCREEN_W // 2 else "left"),
    )


def _event_card(y: int, event: Event) -> Node:
    card = Node(
        cls="android.view.ViewGroup",
        bounds=(PAD, y, SCREEN_W - PAD, y + 140),
        content_desc=f"{event.title}, {event.when}",
        style=Style(bg="#f8f9fa", radius=24),
    )
    card.add(
        Node(
            cls="android.view.View",
            bounds=(PAD, y, PAD + 16, y + 140),
            style=Style(bg=event.color),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(PAD + 40, y + 8, SCREEN_W - PAD, y + 75),
            text=event.title,
            resource_id=f"{CALENDAR}:id/event_title",
            style=Style(size=42, bold=True),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(PAD + 40, y + 75, SCREEN_W - PAD, y + 132),
            text=" · ".join(p for p in (event.when, event.place) if p),
            resource_id=f"{CALENDAR}:id/event_time",
            style=Style(size=36, fg="#5f6368"),
        ),
    )
    return card
