"""The observable state of a simulated phone: what task success predicates are written against.

``SimState`` is a frozen snapshot taken by :meth:`distrl_tasks.sim.phone.Phone.state`. Predicates
are pure functions ``SimState -> bool``, so they are unit-tested on hand-built states.

Vocabulary (the contract between apps and predicates). ``app`` is the foreground package;
``page`` and ``params`` come from that app's top page, merged with ``App.state_params()``:

==================  ===============================  =========================================
app (package)       page                             params
==================  ===============================  =========================================
launcher            home, drawer                     (generic app: label)
chrome              home (new tab page), serp,       serp: query, kind; site_*: site (e.g.
                    site_home, site_results,         ebay.com), query, item, title; web:
                    site_product, web, tabs, menu    url, title. Always: incognito ("0"/"1"),
                                                     url
play store          home, search, app                search: query; app: app (label)
youtube             home, search_box, search, video  search: query; video: title, channel,
                                                     query (what led there)
gmail               inbox, message, search, compose  message: subject; search: query
maps                home, search, place,             search: query; place: name, address;
                    directions, navigation           directions: destination, address, mode
clock               alarms, new_alarm, clock,        new_alarm: hour, minute, ampm, error;
                    timer, stopwatch                 timer/stopwatch: running
calendar            month, week, day                 month: month; week: start, end; day: date
contacts            list, contact, call              list: query; contact: name, phone, email
calculator          home                             expression, result
settings            home, apps, app_info,            app_*: app (label); search: query;
                    app_notifications,               wallpaper_preview: name
                    app_permissions, app_storage,
                    wallpaper, wallpaper_preview,
                    notifications, display, search,
                    network, battery, sound, ...
messages            home, conversation               conversation: name, last_sent
camera              home                             mode, recording
photos              home, photo                      photo: index; count
files               home, downloads, category, file  category: kind; file: name
music               home, playlist, search, playing  playing: title, artist
==================  ===============================  =========================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType


def _frozen(m: Mapping) -> Mapping:
    return MappingProxyType(dict(m))


@dataclass(frozen=True)
class SimState:
    """A snapshot of everything a success predicate may look at."""

    app: str = ""  # foreground package (see PACKAGES in distrl_tasks.sim.apps)
    app_label: str = ""  # its launcher label, e.g. "Chrome"
    page: str = ""  # page of the foreground app
    params: Mapping[str, str] = field(default_factory=dict)  # page params + app state params
    focused_field: str = ""  # resource-id of the focused text field, "" if none
    field_text: str = ""  # text currently in the focused field
    shade_open: bool = False  # the notification shade is pulled down
    installed: frozenset[str] = frozenset()  # labels of installed apps (system and user)
    alarms: tuple[str, ...] = ()  # enabled alarms as 24-hour "HH:MM", sorted
    notifications: Mapping[str, bool] = field(default_factory=dict)  # app label -> enabled
    initial_notifications: Mapping[str, bool] = field(default_factory=dict)  # at task start
    chrome_tabs: int = 1  # open normal tabs
    chrome_incognito_tabs: int = 0  # open incognito tabs
    chrome_windows: int = 1  # open Chrome windows
    initial_chrome: tuple[int, int, int] = (1, 0, 1)  # (tabs, incognito, windows) at task start
    playing: str = ""  # title of the video or song playing in the foreground, "" if none
    crashed: bool = False  # the device crashed and must be reset

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _frozen(self.params))
        object.__setattr__(self, "notifications", _frozen(self.notifications))
        object.__setattr__(self, "initial_notifications", _frozen(self.initial_notifications))
        object.__setattr__(self, "installed", frozenset(self.installed))
        object.__setattr__(self, "alarms", tuple(sorted(self.alarms)))

    def param(self, key: str, default: str = "") -> str:
        return self.params.get(key, default)

    def to_json(self) -> str:
        """JSON for ``simctl state``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["params"] = dict(self.params)
        d["notifications"] = dict(self.notifications)
        d["initial_notifications"] = dict(self.initial_notifications)
        d["installed"] = sorted(self.installed)
        d["alarms"] = list(self.alarms)
        d["initial_chrome"] = list(self.initial_chrome)
        return json.dumps(d, sort_keys=True)
