"""Task families, in the order the parser tries them (specific patterns before general ones)."""

from __future__ import annotations

from distrl_tasks.tasks.families.device import (
    AppSettings,
    CalendarView,
    CheckEmail,
    ChromeNew,
    InstallApp,
    OpenApp,
    SetAlarm,
    ShowNotifications,
    ToggleNotifications,
)
from distrl_tasks.tasks.families.media import Directions, MapsSearch, YouTubeVideo
from distrl_tasks.tasks.families.web import ShopSearch, WebSearch, WebShop, Website
from distrl_tasks.tasks.task import Family

FAMILIES: tuple[Family, ...] = (
    WebShop(),
    SetAlarm(),
    ChromeNew(),
    ToggleNotifications(),
    AppSettings(),
    InstallApp(),
    CalendarView(),
    CheckEmail(),
    ShowNotifications(),
    YouTubeVideo(),
    Directions(),
    MapsSearch(),
    ShopSearch(),
    Website(),
    OpenApp(),
    WebSearch(),
)
FAMILY_NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)

__all__ = ["FAMILIES", "FAMILY_NAMES"]
