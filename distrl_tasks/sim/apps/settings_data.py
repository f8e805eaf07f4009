"""What the Settings app lists: its sections and their rows, switch defaults, wallpapers.

Plain data, kept apart from the screens that draw it. A row with a toggle key is a switch whose
state lives in ``Settings.toggles`` (defaults in :data:`DEFAULT_TOGGLES`).
"""

from __future__ import annotations

Row = tuple[str, str, str]  # (toggle key or "", title, subtitle); a key makes it a switch

# page -> (title, rows). Toggle defaults live in DEFAULT_TOGGLES.
SECTIONS: dict[str, tuple[str, tuple[Row, ...]]] = {
    "network": ("Network & internet", (
        ("", "Internet", "GoogleWifi"), ("airplane", "Airplane mode", ""),
        ("", "Hotspot & tethering", "Off"), ("data_saver", "Data Saver", ""), ("", "VPN", "None"),
    )),
    "connected_devices": ("Connected devices", (
        ("bluetooth", "Bluetooth", ""), ("", "Pair new device", ""),
        ("", "Connection preferences", "Bluetooth, Android Auto, NFC"),
    )),
    "battery": ("Battery", (
        ("", "87%", "About 1 day, 4 hr left"), ("battery_saver", "Battery Saver", ""),
        ("adaptive_battery", "Adaptive Battery", ""), ("battery_pct", "Battery percentage", ""),
    )),
    "storage": ("Storage", (
        ("", "64 GB used", "of 128 GB"), ("", "Apps", "21 GB"), ("", "Images", "12 GB"),
        ("", "Videos", "18 GB"), ("", "System", "13 GB"),
    )),
    "sound": ("Sound & vibration", (
        ("", "Media volume", "60%"), ("", "Ring volume", "80%"), ("dnd", "Do Not Disturb", ""),
        ("", "Phone ringtone", "Pixel Sounds"), ("vibrate", "Vibrate for calls", ""),
    )),
    "display": ("Display", (
        ("", "Brightness level", "45%"), ("adaptive_brightness", "Adaptive brightness", ""),
        ("dark_theme", "Dark theme", ""), ("", "Screen timeout", "After 30 seconds"),
        ("", "Font size", "Default"), ("auto_rotate", "Auto-rotate screen", ""),
    )),
    "security": ("Security", (
        ("", "Screen lock", "PIN"), ("", "Fingerprint Unlock", "1 fingerprint"),
        ("", "Find My Device", "On"), ("", "Security update", "November 1, 2026"),
    )),
    "privacy": ("Privacy", (
        ("", "Permission manager", "Camera, location, microphone"),
        ("show_passwords", "Show passwords", ""), ("", "Ads", "Advertising ID"),
    )),
    "location": ("Location", (
        ("location", "Use location", ""), ("", "Recent access", "Maps, Chrome"),
    )),
    "accounts": ("Passwords & accounts", (
        ("", "Google", "user@gmail.com"), ("autosync", "Automatically sync app data", ""),
    )),
    "system": ("System", (
        ("", "Languages", "English (United States)"), ("", "Date & time", "GMT-08:00"),
        ("", "Backup", "On"), ("", "Reset options", "Network, apps or device"),
    )),
    "about": ("About phone", (
        ("", "Device name", "Pixel 6"), ("", "Android version", "14"),
        ("", "Build number", "UQ1A.240105.004"),
    )),
}  # fmt: skip
DEFAULT_TOGGLES = {
    "bluetooth": True, "adaptive_battery": True, "battery_pct": True, "vibrate": True,
    "adaptive_brightness": True, "show_passwords": True, "location": True, "autosync": True,
}  # fmt: skip
# (page, title, subtitle) of the home list, in order
HOME: tuple[tuple[str, str, str], ...] = (
    ("network", "Network & internet", "Mobile, Wi-Fi, hotspot"),
    ("connected_devices", "Connected devices", "Bluetooth, pairing"),
    ("apps", "Apps", "Assistant, recent apps, default apps"),
    ("notifications", "Notifications", "Notification history, conversations"),
    ("battery", "Battery", "87%"),
    ("storage", "Storage", "50% used - 64 GB free"),
    ("sound", "Sound & vibration", "Volume, haptics, Do Not Disturb"),
    ("display", "Display", "Dark theme, font size, brightness"),
    ("wallpaper", "Wallpaper & style", "Colors, themed icons, app grid"),
    ("security", "Security", "Screen lock, Find My Device, app security"),
    ("privacy", "Privacy", "Permissions, account activity, personal data"),
    ("location", "Location", "On - 4 apps have access to location"),
    ("accounts", "Passwords & accounts", "Saved passwords, autofill, synced accounts"),
    ("system", "System", "Languages, gestures, time, backup"),
    ("about", "About phone", "Pixel 6"),
)
WALLPAPERS = (
    ("Ocean Blue", "#1565c0"), ("Sunset Dunes", "#ef6c00"), ("Forest Trail", "#2e7d32"),
    ("Night Sky", "#1a237e"), ("Coral Reef", "#f06292"), ("Mountain Mist", "#78909c"),
    ("Desert Bloom", "#c0ca33"), ("Aurora", "#00897b"), ("Lava Glow", "#c62828"),
    ("City Lights", "#4527a0"), ("Autumn Leaves", "#8d6e63"), ("Lavender Field", "#9575cd"),
)  # fmt: skip
PERMISSIONS = ("Camera", "Location", "Microphone", "Contacts", "Notifications", "Storage")
