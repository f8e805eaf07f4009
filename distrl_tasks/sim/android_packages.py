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

from distrl_tasks.sim.apps import (
    CALCULATOR,
    CALENDAR,
    CAMERA,
    CHROME,
    CLOCK,
    CONTACTS,
    FILES,
    GENERIC,
    GMAIL,
    LAUNCHER,
    MAPS,
    MESSAGES,
    MUSIC,
    PHOTOS,
    PLAY_STORE,
    SETTINGS,
    YOUTUBE,
)

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
    return front_package_of(phone, phone.front)


def front_package_of(phone: Phone, app) -> str:
    """The package name ``app`` has to Android tools (the generic app shows another's)."""
    if app.package == GENERIC:
        return package_for_label(getattr(app, "showing", "") or "app")
    return app.package


# Each simulated app's launcher activity as an Android 13 emulator names it (``dumpsys``,
# ``am stack list``, ``am start -n``); other apps have ``.MainActivity``.
LAUNCH_ACTIVITIES = {
    LAUNCHER: "com.google.android.apps.nexuslauncher.NexusLauncherActivity",
    CHROME: "com.google.android.apps.chrome.Main",
    PLAY_STORE: "com.google.android.finsky.activities.MainActivity",
    YOUTUBE: "com.google.android.apps.youtube.app.WatchWhileActivity",
    GMAIL: "com.google.android.gm.ConversationListActivityGmail",
    MAPS: "com.google.android.maps.MapsActivity",
    CLOCK: "com.android.deskclock.DeskClock",
    CALENDAR: "com.android.calendar.AllInOneActivity",
    CONTACTS: "com.android.contacts.activities.PeopleActivity",
    CALCULATOR: "com.android.calculator2.Calculator",
    SETTINGS: "com.android.settings.Settings",
    MESSAGES: "com.google.android.apps.messaging.ui.ConversationListActivity",
    CAMERA: "com.android.camera.CameraLauncher",
    PHOTOS: "com.google.android.apps.photos.home.HomeActivity",
    FILES: "com.android.documentsui.LauncherActivity",
    MUSIC: "com.google.android.apps.youtube.music.activities.MusicActivity",
}


def activity_of(package: str) -> str:
    """The package's launcher activity, shortened to ``.Name`` when it lies in the package."""
    full = LAUNCH_ACTIVITIES.get(package, f"{package}.MainActivity")
    return full[len(package) :] if full.startswith(package + ".") else full


def has_activity(package: str, activity: str) -> bool:
    """Whether ``am start -n package/activity`` names an activity the package has (its launcher
    activity, written in full or as ``.Name`` relative to the package)."""
    full = activity if not activity.startswith(".") else package + activity
    return full == LAUNCH_ACTIVITIES.get(package, f"{package}.MainActivity")


def package_for_uri(uri: str) -> str | None:
    """The app a VIEW intent's data URI resolves to, as Android's defaults resolve it."""
    scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
    if scheme in ("http", "https"):
        return CHROME
    if scheme == "content" and "contacts" in uri:
        return CONTACTS
    if scheme in ("tel", "sms", "smsto"):
        return MESSAGES if scheme.startswith("sms") else CONTACTS
    if scheme == "mailto":
        return GMAIL
    if scheme in ("geo", "google.navigation"):
        return MAPS
    if scheme == "market":
        return PLAY_STORE
    if scheme == "vnd.youtube" or "youtube.com" in uri:
        return YOUTUBE
    return None


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
