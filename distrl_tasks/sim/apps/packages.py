"""Package names of the simulated apps, the third-party apps at boot and the shade's notifications.

A leaf module: the app modules import their names from here, and the package's ``__init__``
re-exports them beside :data:`~distrl_tasks.sim.apps.APP_CLASSES`.
"""

from __future__ import annotations

LAUNCHER = "com.google.android.apps.nexuslauncher"
CHROME = "com.android.chrome"
PLAY_STORE = "com.android.vending"
YOUTUBE = "com.google.android.youtube"
GMAIL = "com.google.android.gm"
MAPS = "com.google.android.apps.maps"
CLOCK = "com.google.android.deskclock"
CALENDAR = "com.google.android.calendar"
CONTACTS = "com.google.android.contacts"
CALCULATOR = "com.google.android.calculator"
SETTINGS = "com.android.settings"
MESSAGES = "com.google.android.apps.messaging"
CAMERA = "com.android.camera2"
PHOTOS = "com.google.android.apps.photos"
FILES = "com.google.android.documentsui"
MUSIC = "com.google.android.apps.youtube.music"
GENERIC = "sim.generic.app"  # stands in for any installed app the simulator has no screens for

# Third-party apps present at boot (besides the system apps); tasks may install or remove more.
DEFAULT_USER_APPS = ("Netflix", "WhatsApp", "Google Play Movies", "Amazon Prime Music")

# What the notification shade shows, by app label (hidden when that app's notifications are off).
NOTIFICATIONS = (
    ("Gmail", "3 new messages from Alex, Priya and the Team"),
    ("Calendar", "Team sync at 2:00 PM in Room 4"),
    ("Play Store", "Updates available for 4 apps"),
    ("Messages", "Mom: call me when you land"),
    ("Maps", "Traffic is light on your way home"),
)
