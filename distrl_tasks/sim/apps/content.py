"""Deterministic fake content and small widgets shared by the Play Store, YouTube, Gmail, Maps and
Settings apps.

Variety comes from a stable hash of the inputs (blake2b, never Python's salted ``hash()``), so the
same query shows the same screen on every device, in every process and on every run.
"""

from __future__ import annotations

import hashlib
import random
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from distrl_tasks.sim.app import PAD
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

T = TypeVar("T")

APP_BAR_H = 160
UP_ACTION = "nav:up"  # every app bar's back arrow; apps route it to ``phone.back()``
PALETTE = ("#ea4335", "#34a853", "#fbbc04", "#4285f4", "#a142f4", "#f06292", "#00897b", "#ff7043")

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


# ----- stable randomness -------------------------------------------------------------------------
def stable_int(*parts: str) -> int:
    """A 64-bit integer that depends only on ``parts`` (same value in every process)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def seeded(*parts: str) -> random.Random:
    """A private random generator seeded from ``parts`` (``random.Random(int)`` is stable)."""
    return random.Random(stable_int(*parts))


def pick(options: Sequence[T], *parts: str) -> T:
    """One element of ``options`` chosen by the stable hash of ``parts``."""
    if not options:
        raise ValueError("pick() needs at least one option")
    return options[stable_int(*parts) % len(options)]


def color_for(label: str) -> str:
    """A badge color that is always the same for the same name."""
    return pick(PALETTE, "color", label)


# ----- text ---------------------------------------------------------------------------------------
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


# ----- launching apps -----------------------------------------------------------------------------
def open_installed_app(phone: Phone, label: str) -> bool:
    """Launch the app called ``label``: its simulated screens, or the generic stand-in app."""
    if label not in phone.installed:
        return False
    app = phone.app_by_label(label)
    from distrl_tasks.sim.apps import GENERIC

    if app is not None and app.package != GENERIC:
        return phone.launch(app.package)
    generic = phone.apps.get(GENERIC)
    if generic is None:
        return False
    generic.showing = label  # type: ignore[attr-defined]  # GenericApp shows this label
    return phone.launch(GENERIC)


# ----- widgets ------------------------------------------------------------------------------------
def up_button(top: int, bottom: int, fg: str = "#202124") -> Node:
    """The toolbar's back arrow ("Navigate up")."""
    return Node(
        cls="android.widget.ImageButton",
        bounds=(16, top + 20, 136, bottom - 20),
        content_desc="Navigate up",
        clickable=True,
        action=UP_ACTION,
        style=Style(icon="@back", icon_bg=fg, size=44),
    )


def app_bar(
    title: str,
    *,
    color: str = "#ffffff",
    fg: str = "#202124",
    up: bool = True,
    actions: Sequence[tuple[str, str, str]] = (),
    rid: str = "",
) -> Node:
    """A toolbar with an optional "Navigate up" arrow, a title and icon buttons on the right.

    ``actions`` are ``(glyph, content_desc, action)`` triples drawn right to left, where a glyph
    is a renderer icon name such as ``"@search"`` or ``"@menu"``.
    """
    top, bottom = CONTENT_TOP, CONTENT_TOP + APP_BAR_H
    bar = Node(cls="android.view.ViewGroup", bounds=(0, top, SCREEN_W, bottom), resource_id=rid)
    bar.style = Style(bg=color)
    x = PAD
    if up:
        bar.add(up_button(top, bottom, fg))
        x = 160
    right = SCREEN_W - 16
    for glyph, desc, action in actions:
        bar.add(
            Node(
                cls="android.widget.ImageButton",
                bounds=(right - 130, top + 20, right, bottom - 20),
                content_desc=desc,
                clickable=True,
                action=action,
                style=Style(icon=glyph, icon_bg=fg, size=50),
            )
        )
        right -= 140
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(x, top, right, bottom),
            text=title,
            style=Style(fg=fg, size=54, bold=True),
        )
    )
    return bar


def list_item(
    y: int,
    title: str,
    subtitle: str = "",
    *,
    action: str | None = None,
    icon: str | None = None,
    icon_bg: str = "#1a73e8",
    height: int = 170,
    rid: str = "",
    trailing: str = "",
    x1: int = 0,
    x2: int = SCREEN_W,
) -> Node:
    """A clickable two-line row (title over grey subtitle) with an optional badge and right text.

    The row itself carries the action and the title as content-desc; its children hold the text.
    """
    row = Node(
        cls="android.widget.LinearLayout",
        bounds=(x1, y, x2, y + height),
        resource_id=rid,
        content_desc=title,
        clickable=action is not None,
        action=action,
    )
    left = x1 + PAD
    if icon:
        row.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(left - 16, y + 20, left + 120, y + height - 20),
                style=Style(icon=icon, icon_bg=icon_bg, size=60),
            )
        )
        left += 140
    right = x2 - PAD - (len(trailing) * 22 + 40 if trailing else 0)
    mid = y + (height // 2 if subtitle else height)
    row.add(
        Node(
            cls="android.widget.TextView",
            bounds=(left, y + (12 if subtitle else 0), right, mid),
            text=title,
            style=Style(size=44, fg="#202124"),
        )
    )
    if subtitle:
        row.add(
            Node(
                cls="android.widget.TextView",
                bounds=(left, mid, right, y + height - 12),
                text=subtitle,
                style=Style(size=36, fg="#5f6368"),
            )
        )
    if trailing:
        row.add(
            Node(
                cls="android.widget.TextView",
                bounds=(right, y, x2 - PAD, y + height),
                text=trailing,
                style=Style(size=36, fg="#5f6368", align="right"),
            )
        )
    return row


def chip(bounds: tuple[int, int, int, int], text: str, action: str, *, selected: bool = False):
    """A rounded filter chip."""
    return Node(
        cls="android.widget.Button",
        bounds=bounds,
        text=text,
        content_desc=text,
        clickable=True,
        action=action,
        style=Style(
            bg="#e8f0fe" if selected else "#ffffff",
            fg="#1967d2" if selected else "#3c4043",
            border="#dadce0",
            radius=(bounds[3] - bounds[1]) // 2,
            size=38,
            align="center",
        ),
    )


def section_header(y: int, text: str, color: str = "#1a73e8") -> Node:
    """A small colored heading between groups of rows."""
    return Node(
        cls="android.widget.TextView",
        bounds=(PAD, y, SCREEN_W - PAD, y + 100),
        text=text,
        style=Style(size=38, fg=color, bold=True),
    )


# ----- places (Maps) ------------------------------------------------------------------------------
# (words in a query, category shown, name endings for made-up places of that kind)
PLACE_KINDS: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("pizza",), "Pizza restaurant", ("Pizzeria", "Pizza Co.", "Slice House")),
    (("burger", "burgers"), "Hamburger restaurant", ("Burgers", "Burger Bar", "Patty Shack")),
    (("sushi",), "Sushi restaurant", ("Sushi", "Sushi Bar", "Omakase")),
    (("seafood", "fish"), "Seafood restaurant", ("Seafood", "Fish House", "Oyster Bar")),
    (("vegetarian", "vegan"), "Vegetarian restaurant", ("Greens", "Veggie Table", "Plant Kitchen")),
    (("italian",), "Italian restaurant", ("Trattoria", "Osteria", "Cucina")),
    (("chinese",), "Chinese restaurant", ("Dumpling House", "Noodle Bar", "Wok")),
    (("indian",), "Indian restaurant", ("Tandoor", "Curry House", "Masala")),
    (("greek",), "Greek restaurant", ("Taverna", "Gyro House", "Estiatorio")),
    (("korean",), "Korean restaurant", ("Korean BBQ", "Tofu House", "Bibimbap")),
    (("french",), "French restaurant", ("Bistro", "Brasserie", "Creperie")),
    (("japanese",), "Japanese restaurant", ("Izakaya", "Ramen", "Teppanyaki")),
    (("mexican",), "Mexican restaurant", ("Taqueria", "Cantina", "Cocina")),
    (("thai",), "Thai restaurant", ("Thai Kitchen", "Thai Basil", "Thai Orchid")),
    (("coffee", "cafe", "cafes"), "Coffee shop", ("Coffee", "Cafe", "Roasters")),
    (("gas", "fuel"), "Gas station", ("Gas", "Fuel Stop", "Service Station")),
    (("grocery", "groceries", "supermarket"), "Grocery store", ("Market", "Grocers", "Foods")),
    (("electronics",), "Electronics store", ("Electronics", "Tech Store", "Digital")),
    (("hotel", "hotels"), "Hotel", ("Hotel", "Inn", "Suites")),
    (("bar", "bars", "pub"), "Bar", ("Tavern", "Taproom", "Pub")),
    (("restaurant", "restaurants", "food", "dinner", "lunch"), "Restaurant", ("Grill", "Eatery")),
)
_CHAINS = {
    "starbucks": "Coffee shop",
    "mcdonald's": "Fast food restaurant",
    "burger king": "Fast food restaurant",
    "subway": "Sandwich shop",
    "chipotle": "Mexican restaurant",
    "walmart": "Department store",
    "target": "Department store",
    "best buy": "Electronics store",
    "home depot": "Home improvement store",
    "lowe's": "Home improvement store",
    "ikea": "Furniture store",
}
_PREFIXES = ("Golden", "Blue Door", "Olive Tree", "Harbor", "Corner", "Little", "Sunset", "Maple")
_PREFIXES += ("Luigi's", "Rosa's", "Mama Lin's", "Kenji's", "Old Town", "Lucky", "Riverside")
_STREETS = ("Main St", "Oak Ave", "Market St", "Broadway", "Elm St", "Pine St", "Mission Blvd")
_STREETS += ("2nd Ave", "Park Rd", "Lake St", "Cedar Ave", "Washington Blvd", "Valencia St")
_RANKED = ("good", "best", "top rated", "top-rated", "5 star", "five star", "highest rated")
_QUERY_FILLER = (
    *_RANKED,
    "find", "search for", "searchfor", "show me", "what's a", "what's", "whats", "how do i get to",
    "directions to", "navigate to", "the nearest", "nearest", "closest", "near me", "nearby",
    "on google maps", "on maps", "google maps", "maps", "a", "the", "some", "place", "places",
    "spot", "spots", "that's open now", "that's open today", "that's open tomorrow", "that's open",
    "open now", "open",
)  # fmt: skip
DEFAULT_CITY = "Mountain View"


@dataclass(frozen=True)
class Place:
    """A place on the map; every field follows from its name and address."""

    name: str
    address: str
    category: str
    rating: float
    reviews: int
    price: str
    distance_mi: float
    open_now: bool
    hour: int  # closing hour if open, opening hour if closed (12-hour clock)

    @property
    def key(self) -> str:
        return f"{self.name}|{self.address}"

    @property
    def status(self) -> str:
        return (
            f"Open · Closes {self.hour} PM" if self.open_now else f"Closed · Opens {self.hour} AM"
        )

    @property
    def distance_text(self) -> str:
        return f"{self.distance_mi} mi"

    @property
    def blurb(self) -> str:
        return f"{self.category} on {self.address.split(',')[0]}, popular with locals for years."


def kind_of_place(name: str) -> str:
    """The category of a place from its name: a known chain, a made-up name's ending, or Store."""
    low = name.lower()
    if low in _CHAINS:
        return _CHAINS[low]
    for _, category, endings in PLACE_KINDS:
        if any(low.endswith(e.lower()) for e in endings):
            return category
    return "Store"


def place_at(name: str, address: str) -> Place:
    """The place called ``name`` at ``address`` (pure: same inputs, same place)."""
    key = f"{name}|{address}"
    h = stable_int("place", key)
    open_now = h % 4 != 0  # three places in four are open at the simulated 12:30
    return Place(
        name=name,
        address=address,
        category=kind_of_place(name),
        rating=round(3.5 + (h >> 8) % 15 / 10, 1),
        reviews=20 + (h >> 16) % 4000,
        price=("$", "$$", "$$$")[(h >> 28) % 3],
        distance_mi=round(0.2 + (h >> 32) % 80 / 10, 1),
        open_now=open_now,
        hour=(9 + (h >> 40) % 3) if open_now else (6 + (h >> 40) % 4),
    )


def parse_place_query(query: str) -> tuple[str, str]:
    """``"good pizza places in chicago"`` -> ``("pizza", "Chicago")``: what, and which city."""
    text = clean(query).rstrip("?!. ")
    city = DEFAULT_CITY
    match = re.search(r"(?i)\b(?:in|near)\s+(?!me\b)([a-z .'-]+)$", text)
    if match:
        city = display_name(match.group(1))
        text = text[: match.start()]
    return strip_words(text, _QUERY_FILLER), city


def search_places(query: str, count: int = 6) -> list[Place]:
    """Places matching ``query``: branches of a named chain, or made-up places of a kind."""
    what, city = parse_place_query(query)
    words = set(what.lower().split())
    # a proper name ("Burger King", "Best Buy") is a chain, even when it contains a category word
    category = (
        None
        if is_proper_name(what)
        else next((kind for kind in PLACE_KINDS if words & set(kind[0])), None)
    )
    rng = seeded("places", what.lower(), city)
    candidates: list[Place] = []
    for i in range(count * 3):
        address = f"{100 + rng.randrange(8900)} {rng.choice(_STREETS)}, {city}"
        if category is None and what:
            name = display_name(what)
        else:
            endings = category[2] if category else PLACE_KINDS[-1][2]
            prefix = _PREFIXES[(stable_int(what, city) + i) % len(_PREFIXES)]
            name = f"{prefix} {endings[i % len(endings)]}"
        candidates.append(place_at(name, address))
    if "open" in query.lower():
        candidates = [p for p in candidates if p.open_now]
    chosen = candidates[:count]
    if any(word in query.lower() for word in _RANKED):
        return sorted(chosen, key=lambda p: (-p.rating, p.distance_mi))
    return sorted(chosen, key=lambda p: p.distance_mi)
