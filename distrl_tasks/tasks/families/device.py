"""Families about the phone itself: apps, settings, notifications, alarms, Chrome tabs, calendar.

Each class is one family: a goal pattern (a regex over the cleaned goal), string parameters, the
preconditions it needs after a reset, and a pure success predicate whose docstring says what a
human judge of the final screen would accept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from distrl_tasks.sim.apps import CALENDAR, CHROME, FILES, GENERIC, GMAIL, SETTINGS
from distrl_tasks.sim.state import SimState
from distrl_tasks.tasks.families.names import WEB_FIRST, is_system_app, parse_time, resolve_app
from distrl_tasks.tasks.task import Family

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

_I = re.IGNORECASE
_APP = r"(?:the\s+)?(?P<name>.+?)(?:\s+app)?"


def _ensure_installed(phone: Phone, label: str) -> None:
    phone.installed.add(label)
    phone.notifications.setdefault(label, True)


def _app_params(name: str) -> dict[str, str]:
    ref = resolve_app(name)
    return {"app": ref.label, "package": ref.package}


def _same_label(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


class SetAlarm(Family):
    """ "Set an alarm for 6pm": succeeds when an enabled alarm at that time exists.

    Params: ``time`` as 24-hour "HH:MM". Setup disables any alarm already at that time, so the
    task is never done before the agent acts.
    """

    name = "set_alarm"
    _re = re.compile(r"^(?:set|create|add)\s+(?:an?\s+)?alarm\s+(?:for|at)\s+(?P<t>.+?)[.?!]*$", _I)

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        try:
            return {"time": parse_time(m.group("t"))}
        except ValueError:
            return None

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        if params["time"] in phone.alarms:
            phone.alarms[params["time"]] = False

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: ``state.alarms`` (enabled alarms) contains the time; any screen is fine."""
        return params["time"] in state.alarms


class ChromeNew(Family):
    """ "Open a new (incognito|private) (tab|window) in Chrome".

    Params: ``kind`` ("tab"/"window"), ``incognito`` ("0"/"1"). Success needs Chrome in front and
    the matching counter above its value at task start: incognito tabs for any incognito request
    (Chrome on a phone opens an incognito window as an incognito tab), windows for a normal new
    window, normal tabs for a normal new tab. Chrome must show an incognito page for incognito
    requests and a normal one otherwise, as the final screenshot would.
    """

    name = "chrome_new"
    _re = re.compile(
        r"^open\s+a\s+new\s+(?:(?P<c1>(?:google\s+)?chrome)\s+)?(?P<inc>incognito\s+|private\s+)?"
        r"(?P<kind>tab|window)(?:\s+(?:in|on)\s+(?:the\s+)?(?P<c2>(?:google\s+)?chrome)"
        r"(?:\s+app)?)?[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None or not (m.group("c1") or m.group("c2")):
            return None
        return {"kind": m.group("kind").lower(), "incognito": "1" if m.group("inc") else "0"}

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Chrome in front, in the right mode, with one more tab/window than at start."""
        if state.app != CHROME:
            return False
        tabs0, inc0, win0 = state.initial_chrome
        if params["incognito"] == "1":
            return state.chrome_incognito_tabs > inc0 and state.param("incognito") == "1"
        if state.param("incognito") == "1":
            return False
        if params["kind"] == "window":
            return state.chrome_windows > win0
        return state.chrome_tabs > tabs0


class ToggleNotifications(Family):
    """ "Toggle / Turn on / Turn off notifications for the X app".

    Params: ``app`` (label), ``package``, ``mode`` ("toggle"/"on"/"off"). Setup installs the app
    and, for "on"/"off", starts from the opposite setting so the goal is not already met.
    Success reads ``state.notifications[app]``: changed from the start for "toggle", else equal
    to the requested setting.
    """

    name = "app_notifications"
    _re = re.compile(
        r"^(?P<verb>toggle|turn\s+on|turn\s+off|enable|disable|switch\s+on|switch\s+off|mute)\s+"
        r"(?:the\s+|all\s+)?notifications\s+(?:for|of|from)\s+" + _APP + r"[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        verb = " ".join(m.group("verb").lower().split())
        mode = {"turn on": "on", "enable": "on", "switch on": "on", "toggle": "toggle"}.get(
            verb, "off"
        )
        return {**_app_params(m.group("name")), "mode": mode}

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        _ensure_installed(phone, params["app"])
        if params["mode"] != "toggle":
            phone.notifications[params["app"]] = params["mode"] == "off"

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: the app's notification setting is as asked (any screen)."""
        app = params["app"]
        if app not in state.notifications:
            return False
        now = state.notifications[app]
        if params["mode"] == "toggle":
            return app in state.initial_notifications and now != state.initial_notifications[app]
        return now == (params["mode"] == "on")


class AppSettings(Family):
    """ "Check the settings for the X app": the app's page in Settings is on screen.

    Params: ``app``, ``package``. Setup installs the app. Success: Settings in front on the
    app's "app_info" page (or its notification settings, a sub-page of the same settings).
    """

    name = "app_settings"
    _re = re.compile(
        r"^(?:check|open|show(?:\s+me)?|go\s+to|view)\s+(?:the\s+)?(?:app\s+)?settings\s+"
        r"(?:for|of)\s+" + _APP + r"[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        return None if m is None else _app_params(m.group("name"))

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        _ensure_installed(phone, params["app"])

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Settings shows "app_info"/"app_notifications" for this app."""
        return (
            state.app == SETTINGS
            and state.page in ("app_info", "app_notifications")
            and _same_label(state.param("app"), params["app"])
        )


class InstallApp(Family):
    """ "Install the X app": the app is installed at the end.

    Params: ``app``, ``package``. Setup uninstalls it (system apps too), so success really means
    the agent installed it; the final screen is not constrained (Play Store shows "Open").
    """

    name = "install_app"
    _re = re.compile(r"^(?:install|download|get)\s+" + _APP + r"(?:\s+from\s+.+)?[.?!]*$", _I)

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        return None if m is None else _app_params(m.group("name"))

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        phone.installed.discard(params["app"])

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: the label is in ``state.installed``."""
        return any(_same_label(label, params["app"]) for label in state.installed)


class OpenApp(Family):
    """ "Open the clock", "Open the SMS app", "Open the downloads".

    Params: ``app``, ``package`` and ``page`` (only "downloads" for the Files app's downloads).
    Setup installs a third-party app. Success: that app is in front (a third-party app is shown
    by the generic app with its label); for "downloads" the Files app is on its downloads page.
    """

    name = "open_app"
    _re = re.compile(r"^(?:open|launch|start|go\s+to)\s+(?:up\s+)?" + _APP + r"[.?!]*$", _I)

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        name = m.group("name")
        explicit_app = bool(re.search(r"\s+app[.?!]*$", text, _I))
        if not explicit_app and not is_system_app(name):
            if name.strip().lower() in WEB_FIRST or text.lower().startswith("go to"):
                return None  # a web site ("Open Reddit"), see the website family
        params = _app_params(name)
        low = name.strip().lower()
        params["page"] = "downloads" if params["package"] == FILES and "download" in low else ""
        return params

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        if not params["package"]:
            _ensure_installed(phone, params["app"])

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: the app is in front (and on its downloads page when asked)."""
        if params["package"]:
            if state.app != params["package"]:
                return False
            return not params["page"] or state.page == params["page"]
        return state.app == GENERIC and _same_label(state.param("label"), params["app"])


class CalendarView(Family):
    """ "What's on my calendar for the rest of the week?", "... show me this week's events".

    Params: ``view`` ("day"/"week"/"month"). Success: Calendar in front showing that view.
    """

    name = "calendar_view"
    _re = re.compile(
        r"^(?:what'?s\s+on\s+my\s+calendar|show\s+(?:me\s+)?my\s+calendar|open\s+(?:the\s+|my\s+)?"
        r"calendar\s+and\s+show\s+(?:me\s+)?).*?\b(?P<span>today|day|week|month)'?s?\b",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        span = m.group("span").lower()
        return {"view": "day" if span == "today" else span}

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Calendar in front on the requested view."""
        return state.app == CALENDAR and state.page == params["view"]


class CheckEmail(Family):
    """ "Check my email", "Check my gmail inbox": Gmail's inbox is on screen.

    Params: none. Success: Gmail in front on its inbox (a judge wants to see the mail list).
    """

    name = "check_email"
    _re = re.compile(
        r"^(?:check|open|read|show\s+me)\s+(?:my\s+)?(?:e-?mails?|gmail|mail|inbox)"
        r"(?:\s+inbox)?[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        return {} if self._re.match(text) else None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Gmail in front on "inbox"."""
        return state.app == GMAIL and state.page == "inbox"


class ShowNotifications(Family):
    """ "Show me my notifications": the notification shade is pulled down.

    Params: none. Success: ``state.shade_open``.
    """

    name = "show_notifications"
    _re = re.compile(
        r"^(?:show(?:\s+me)?|open|check|see)\s+(?:my\s+|the\s+|all\s+)?"
        r"(?:recent\s+)?notifications[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        return {} if self._re.match(text) else None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: the notification shade is open."""
        return state.shade_open
