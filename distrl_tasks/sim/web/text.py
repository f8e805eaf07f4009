"""Display casing for typed web queries: ``"usb-c to usb-b"`` -> ``"USB-C to USB-B"``; prices."""

from __future__ import annotations

import re


def title_case(text: str) -> str:
    """Capitalize a typed phrase for display ("usb-c to usb-b" -> "USB-C to USB-B")."""
    words = []
    for i, word in enumerate(text.split()):
        low = word.lower()
        head = low.split("-")[0]
        if head in _ACRONYMS:
            words.append(word.upper())
        elif i > 0 and low in _SMALL_WORDS:
            words.append(low)
        elif word.islower():
            words.append(word[:1].upper() + word[1:])
        else:
            words.append(word)  # keep the user's own casing ("iPhone", "LG")
    return " ".join(words)


_ACRONYMS = frozenset(
    [
        "usb",
        "hdmi",
        "ssd",
        "hdd",
        "tv",
        "led",
        "lcd",
        "oled",
        "rgb",
        "lg",
        "hp",
        "nyc",
        "usa",
        "uk",
        "us",
        "dc",
        "ps5",
        "ps4",
        "gpu",
        "cpu",
        "ram",
        "ac",
        "dvd",
    ]
)
_SMALL_WORDS = frozenset(
    ["a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"]
)


def smart_title(text: str) -> str:
    """:func:`title_case` that also upper-cases model numbers (``"g910"`` -> ``"G910"``)."""
    return " ".join(
        w.upper() if len(w) <= 6 and re.search(r"\d", w) and re.search(r"[a-z]", w) else w
        for w in title_case(text).split()
    )


def rating_text(rating: float, count: int) -> str:
    """``"4.3 out of 5 (1,234)"``: the bundled font has no star glyphs, so ratings are words."""
    return f"{rating:.1f} out of 5 ({count:,})"


def money(value: float) -> str:
    """``1234.5`` -> ``"$1,234.50"``."""
    return f"${value:,.2f}"
