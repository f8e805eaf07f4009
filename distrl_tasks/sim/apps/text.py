"""Text shaping for app content: tidy typed text, show names in their usual spelling, wrap lines.

Queries arrive as a person types them ("bruno mars new video", "ebay"); screens show them the
way the real apps would ("Bruno Mars", "eBay"). Wrapping here counts characters, which is
enough for the fixed-width layouts of the app screens (web pages measure with the font).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

# Words that stay lower case inside a title, and spellings that title-casing would get wrong.
_SMALL_WORDS = frozenset({"a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to"})
_SPECIAL_CASE = {
    "bbc": "BBC",
    "cnn": "CNN",
    "espn": "ESPN",
    "nyc": "NYC",
    "nbc": "NBC",
    "abc": "ABC",
    "cbs": "CBS",
    "npr": "NPR",
    "hbo": "HBO",
    "usa": "USA",
    "ebay": "eBay",
    "iphone": "iPhone",
    "ipad": "iPad",
    "youtube": "YouTube",
    "whatsapp": "WhatsApp",
    "tiktok": "TikTok",
    "linkedin": "LinkedIn",
    "paypal": "PayPal",
    "gamespot": "GameSpot",
    "gametrailers": "GameTrailers",
    "gamexplain": "GameXplain",
    "mcdonalds": "McDonald's",
    "ikea": "IKEA",
    "dc": "DC",
    "tv": "TV",
}


def clean(text: str) -> str:
    """Trim and collapse runs of whitespace."""
    return " ".join(text.split())


def display_name(text: str) -> str:
    """How a name typed in any case is shown: ``"bruno mars"`` -> ``"Bruno Mars"``.

    Words the user already capitalized are kept (``"GameSpot"``), known brands and acronyms get
    their usual spelling (``"ebay"`` -> ``"eBay"``), and small joining words stay lower case.
    """
    words = clean(text).split(" ")
    out: list[str] = []
    for i, word in enumerate(words):
        low = word.lower()
        if low in _SPECIAL_CASE:
            out.append(_SPECIAL_CASE[low])
        elif word != low:
            out.append(word)
        elif i > 0 and low in _SMALL_WORDS:
            out.append(low)
        else:
            out.append(low[:1].upper() + low[1:])
    return " ".join(w for w in out if w)


# Two or more capitalized words in a row: a proper name such as "Best Buy" or "New York Times".
_NAME_RUN = re.compile(r"\b[A-Z0-9][\w'&.-]*(?:\s+[A-Z0-9][\w'&.-]*)+")


def is_proper_name(text: str) -> bool:
    """True when ``text`` is entirely a run of capitalized words (a chain, channel, brand)."""
    match = _NAME_RUN.fullmatch(clean(text))
    return match is not None


def strip_words(text: str, words: Sequence[str]) -> str:
    """Remove whole words/phrases (case-insensitive) and tidy the spaces left behind.

    Runs of capitalized words are names and are kept whole ("Best Buy" keeps "Best", "New York
    Times" keeps "New"), unless the run itself is one of ``words`` ("Google Maps").
    """
    fillers = {w.lower() for w in words}
    names: list[str] = []

    def hide(match: re.Match[str]) -> str:
        run = match.group(0)
        if run.lower() in fillers:
            return run
        names.append(run)
        return f"\x00{len(names) - 1}\x00"

    out = f" {clean(_NAME_RUN.sub(hide, clean(text)))} "
    for phrase in sorted(words, key=len, reverse=True):
        out = re.sub(rf"(?i)(?<=\s){re.escape(phrase)}(?=\s)", " ", out)
        out = f" {clean(out)} "
    out = re.sub("\x00(\\d+)\x00", lambda m: names[int(m.group(1))], out)
    return clean(out).strip(" ,.?!:;'\"-")


def wrap(text: str, width: int, lines: int = 2) -> list[str]:
    """Break ``text`` into at most ``lines`` lines of ``width`` characters, ellipsizing the rest."""
    parts = textwrap.wrap(text, width) or [""]
    if len(parts) > lines:
        parts = parts[:lines]
        parts[-1] = parts[-1][: max(1, width - 1)].rstrip() + "…"
    return parts


def count_text(n: int) -> str:
    """``1234567`` -> ``"1.2M"``, as app stores and video sites abbreviate counts."""
    for div, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K")):
        if n >= div:
            value = n / div
            return f"{value:.1f}".rstrip("0").rstrip(".") + suffix
    return str(n)
