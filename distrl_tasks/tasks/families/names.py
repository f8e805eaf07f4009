"""Small vocabularies of entity kinds: app names and their aliases, web sites, times of day.

Goals name apps the way people do ("the SMS app", "the gallery", "Google Maps"); these tables map
such names onto the simulated system apps. Any other name is taken literally as the launcher label
of a third-party app ("the Pandora app" -> "Pandora"), so new apps work without new entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distrl_tasks.sim.apps import (
    CALCULATOR,
    CALENDAR,
    CAMERA,
    CHROME,
    CLOCK,
    CONTACTS,
    FILES,
    GMAIL,
    MAPS,
    MESSAGES,
    MUSIC,
    PHOTOS,
    PLAY_STORE,
    SETTINGS,
    YOUTUBE,
)

# package -> launcher label the simulated app uses (checked against the app classes in tests)
SYSTEM_LABELS = {
    CHROME: "Chrome",
    PLAY_STORE: "Play Store",
    YOUTUBE: "YouTube",
    GMAIL: "Gmail",
    MAPS: "Maps",
    CLOCK: "Clock",
    CALENDAR: "Calendar",
    CONTACTS: "Contacts",
    CALCULATOR: "Calculator",
    SETTINGS: "Settings",
    MESSAGES: "Messages",
    CAMERA: "Camera",
    PHOTOS: "Photos",
    FILES: "Files",
    MUSIC: "YouTube Music",
}

# lower-case name (without "the"/"app") -> package
_ALIASES: dict[str, str] = {}
for _pkg, _names in {
    CHROME: "chrome|google chrome|chrome browser|browser|web browser|internet",
    PLAY_STORE: "play store|google play store|google play|playstore|app store",
    YOUTUBE: "youtube|you tube",
    GMAIL: "gmail|email|e-mail|mail|google mail|inbox|email inbox|gmail inbox",
    MAPS: "maps|google maps|map",
    CLOCK: "clock|alarm|alarms|alarm clock|timer|world clock",
    CALENDAR: "calendar|google calendar|agenda",
    CONTACTS: "contacts|contact list|address book|phone book|people",
    CALCULATOR: "calculator|calc",
    SETTINGS: "settings|system settings|phone settings|setting",
    MESSAGES: "sms|messages|messaging|text messages|texts|message|sms app|text messaging",
    CAMERA: "camera",
    PHOTOS: "photos|gallery|google photos|pictures|photo gallery|images",
    FILES: "files|file manager|downloads|my files|download|file",
    MUSIC: "music|youtube music|yt music|music player",
}.items():
    for _name in _names.split("|"):
        _ALIASES[_name] = _pkg

# Names that mean a web site when opened without the word "app" ("Open Reddit").
WEB_FIRST = {
    "reddit": "reddit.com",
    "wikipedia": "wikipedia.org",
    "imdb": "imdb.com",
    "hacker news": "news.ycombinator.com",
    "craigslist": "craigslist.org",
    "quora": "quora.com",
}


@dataclass(frozen=True)
class AppRef:
    """An app a goal names: its launcher label and, for simulated system apps, its package."""

    label: str
    package: str = ""  # "" for third-party apps (shown by the generic app)


def _key(name: str) -> str:
    low = re.sub(r"[^a-z0-9&+\- ]", "", name.lower()).strip()
    low = re.sub(r"^(the|my)\s+", "", low)
    return re.sub(r"\s+app$", "", low).strip()


def resolve_app(name: str) -> AppRef:
    """Map a name from a goal to an app. Unknown names become third-party labels as written."""
    pkg = _ALIASES.get(_key(name))
    if pkg is not None:
        return AppRef(SYSTEM_LABELS[pkg], pkg)
    label = re.sub(r"(?i)\s+app$", "", name.strip(" ?.!,")).strip()
    label = re.sub(r"(?i)^(the|my)\s+", "", label)
    if not label:
        raise ValueError(f"empty app name in {name!r}")
    return AppRef(label[0].upper() + label[1:] if label.islower() else label)


def is_system_app(name: str) -> bool:
    """Whether ``name`` is an alias of a simulated system app."""
    return _key(name) in _ALIASES


def site_domain(name: str) -> str:
    """``"eBay"`` -> ``"ebay.com"``; a name that already has a TLD is kept as is."""
    low = name.strip().lower()
    if low in WEB_FIRST:
        return WEB_FIRST[low]
    if re.fullmatch(r"[a-z0-9\-]+(\.[a-z0-9\-]+)+", low):
        return low.removeprefix("www.")
    slug = re.sub(r"[^a-z0-9]", "", low)
    if not slug:
        raise ValueError(f"cannot make a web site out of {name!r}")
    return f"{slug}.com"


_TIME = re.compile(
    r"^(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)?$|^(?P<word>noon|midnight)$",
    re.I,
)


def parse_time(text: str) -> str:
    """``"6pm"`` -> ``"18:00"``, ``"7:30 am"`` -> ``"07:30"``, ``"noon"`` -> ``"12:00"``.

    Raises:
        ValueError: the text is not a clock time.
    """
    m = _TIME.match(text.strip().rstrip("."))
    if m is None:
        raise ValueError(f"not a time of day: {text!r}")
    if m.group("word"):
        return "12:00" if m.group("word").lower() == "noon" else "00:00"
    hour, minute = int(m.group("h")), int(m.group("m") or 0)
    ap = (m.group("ap") or "").lower().replace(".", "")
    if ap:
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} does not fit am/pm in {text!r}")
        hour = hour % 12 + (12 if ap == "pm" else 0)
    if hour > 23 or minute > 59:
        raise ValueError(f"time out of range: {text!r}")
    return f"{hour:02d}:{minute:02d}"
