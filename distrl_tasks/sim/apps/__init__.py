"""The simulated apps and their package names.

Each app lives in its own module; ``APP_CLASSES`` lists every class the phone instantiates. The
names (:mod:`~distrl_tasks.sim.apps.packages`) are re-exported here for code outside the
package; the app modules import them from ``packages`` directly.
"""

from __future__ import annotations

from distrl_tasks.sim.apps._registry import APP_CLASSES
from distrl_tasks.sim.apps.packages import (
    CALCULATOR,
    CALENDAR,
    CAMERA,
    CHROME,
    CLOCK,
    CONTACTS,
    DEFAULT_USER_APPS,
    FILES,
    GENERIC,
    GMAIL,
    LAUNCHER,
    MAPS,
    MESSAGES,
    MUSIC,
    NOTIFICATIONS,
    PHOTOS,
    PLAY_STORE,
    SETTINGS,
    YOUTUBE,
)

__all__ = [
    "APP_CLASSES",
    "CALCULATOR",
    "CALENDAR",
    "CAMERA",
    "CHROME",
    "CLOCK",
    "CONTACTS",
    "DEFAULT_USER_APPS",
    "FILES",
    "GENERIC",
    "GMAIL",
    "LAUNCHER",
    "MAPS",
    "MESSAGES",
    "MUSIC",
    "NOTIFICATIONS",
    "PHOTOS",
    "PLAY_STORE",
    "SETTINGS",
    "YOUTUBE",
]
