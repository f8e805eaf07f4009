"""Collects the app classes from their modules (kept apart so modules can import the constants)."""

from __future__ import annotations

import importlib

from distrl_tasks.sim.app import App

# module name -> class names it defines; the phone instantiates them in this order
_MODULES: dict[str, tuple[str, ...]] = {
    "launcher": ("Launcher", "GenericApp"),
    "chrome": ("Chrome",),
    "playstore": ("PlayStore",),
    "youtube": ("YouTube",),
    "gmail": ("Gmail",),
    "maps": ("Maps",),
    "clock": ("Clock",),
    "calendar": ("Calendar",),
    "contacts": ("Contacts",),
    "calculator": ("Calculator",),
    "settings": ("Settings",),
    "messages": ("Messages",),
    "camera": ("Camera",),
    "photos": ("Photos",),
    "files": ("Files",),
    "music": ("Music",),
}


def _load() -> list[type[App]]:
    classes: list[type[App]] = []
    for module, names in _MODULES.items():
        mod = importlib.import_module(f"distrl_tasks.sim.apps.{module}")
        classes.extend(getattr(mod, name) for name in names)
    return classes


APP_CLASSES: list[type[App]] = _load()
