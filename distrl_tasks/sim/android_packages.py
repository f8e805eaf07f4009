"""The phone's apps as Android names them: package names, what is installed and in front.

Android tools speak in package names (``com.android.chrome``) while the simulator's apps are
known by class and label; this module maps between the two. Apps with screens of their own carry
their package; any other installed label gets a stable made-up one (:data:`KNOWN_PACKAGES` for
well-known apps) and is shown by the generic app when launched. It is apart from
:mod:`distrl_tasks.sim.shell_android` because it describes the phone, not a shell command: the
``pm``, ``am``, ``monkey`` and ``dumpsys`` tools there all read it, and that module re-exports it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from distrl_tasks.sim.apps import GENERIC, LAUNCHER

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

# Package names of third-party apps that have no dedicated simulated screens.
KNOWN_PACKAGES = {
    "Netflix": "com.netflix.mediaclient",
    "WhatsApp": "com.whatsapp",
    "Google Play Movies": "com.google.android.videos",
    "Amazon Prime Music": "com.amazon.mp3",
    "Pandora": "com.pandora.android",
    "Spotify": "com.spotify.music",
    "Instagram": "com.instagram.android",
    "Facebook": "com.facebook.katana",
}


def package_for_label(label: str) -> str:
    """A stable package name for an app label the simulator has no screens for."""
    known = KNOWN_PACKAGES.get(label)
    if known:
        return known
    slug = re.sub(r"[^a-z0-9]+", "", label.lower()) or "app"
    return f"com.sim.{slug}"


def installed_packages(phone: Phone) -> dict[str, tuple[str, bool]]:
    """package -> (label, is_system) for everything installed on the phone."""
    out: dict[str, tuple[str, bool]] = {}
    by_label = {a.label: a for a in phone.apps.values() if a.package != GENERIC}
    for label in phone.installed:
        app = by_label.get(label)
        if app is not None:
            out[app.package] = (label, app.system)
        else:
            out[package_for_label(label)] = (label, False)
    out[LAUNCHER] = (phone.apps[LAUNCHER].label, True)
    return out


def front_package(phone: Phone) -> str:
    front = phone.front
    if front.package == GENERIC:
        return package_for_label(getattr(front, "showing", "") or "app")
    return front.package


def activity_of(package: str) -> str:
    return ".NexusLauncherActivity" if package == LAUNCHER else ".MainActivity"


def launch_package(phone: Phone, package: str) -> bool:
    """Start ``package`` as a launcher intent would; False if it is not installed."""
    pkgs = installed_packages(phone)
    if package not in pkgs:
        return False
    if package == LAUNCHER:
        phone.go_home()
        return True
    if package in phone.apps:
        return phone.launch(package)
    generic = phone.apps[GENERIC]
    generic.reset()
    generic.showing = pkgs[package][0]  # type: ignore[attr-defined]
    return phone.launch(GENERIC)
