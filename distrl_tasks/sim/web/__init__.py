"""Simulated web content shown by the simulated Chrome: Google results, web shops, other sites.

Every page is a list of :class:`~distrl_tasks.sim.ui.Node` for the scrollable body of a Chrome
screen. Content is a pure function of the page parameters (query, site, url), so the same query
always shows the same results on every device and in every run. This module holds the small
helpers the page builders share: a stable hash, text wrapping measured with the renderer's font,
and a few web-page widgets.

Only ASCII plus a handful of Latin-1 glyphs (the degree sign, the middle dot, curly quotes) are
used in texts: the renderer's built-in font draws anything else as a box.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar

from PIL import ImageFont

from distrl_tasks.sim.ui import SCREEN_W, Node, Style

T = TypeVar("T")

PAD = 40  # left/right page margin in logical px
TEXT_W = SCREEN_W - 2 * PAD
LINK = "#1a0dab"  # Google's link blue
GREY = "#5f6368"
DARK = "#202124"
CHROME_ID = "com.android.chrome:id"  # resource-id prefix of every Chrome view


def stable_int(*parts: str) -> int:
    """A 64-bit integer that depends only on ``parts`` (Python's ``hash`` is salted per run)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def pick(options: Sequence[T], *parts: str) -> T:
    """A deterministic choice from ``options`` keyed by ``parts``."""
    if not options:
        raise ValueError("pick() needs at least one option")
    return options[stable_int(*parts) % len(options)]


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


@lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=4096)
def wrap(text: str, width: int, size: int) -> tuple[str, ...]:
    """Split ``text`` into lines no wider than ``width`` logical px at font ``size``.

    Measured with the same font the renderer uses, so wrapped lines never get ellipsized.
    """
    font = _font(size)
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= width - 32 or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return tuple(lines)


def text_width(text: str, size: int) -> int:
    """Width in logical px of ``text`` drawn at font ``size``."""
    return round(_font(size).getlength(text))


def paragraph(
    text: str,
    y: int,
    *,
    x: int = PAD,
    width: int = TEXT_W,
    size: int = 38,
    fg: str = GREY,
    max_lines: int = 3,
    bold: bool = False,
    line_h: int | None = None,
) -> tuple[list[Node], int]:
    """Wrapped text as one TextView per line. Returns the nodes and the y below them."""
    step = line_h or round(size * 1.45)
    lines = list(wrap(text, width, size))
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1].rstrip(".,;:") + " ..."
    nodes = [
        Node(
            cls="android.widget.TextView",
            bounds=(x, y + i * step, x + width, y + (i + 1) * step),
            text=line,
            style=Style(fg=fg, size=size, bold=bold),
        )
        for i, line in enumerate(lines)
    ]
    return nodes, y + len(lines) * step


def label(
    text: str,
    bounds: tuple[int, int, int, int],
    *,
    size: int = 40,
    fg: str = DARK,
    bold: bool = False,
    bg: str | None = None,
    align: str = "left",
    radius: int = 0,
    icon: str | None = None,
    icon_bg: str = "#1a73e8",
    border: str | None = None,
) -> Node:
    """A single-line, non-clickable TextView."""
    return Node(
        cls="android.widget.TextView",
        bounds=bounds,
        text=text,
        style=Style(
            bg=bg,
            fg=fg,
            size=size,
            bold=bold,
            align=align,
            radius=radius,
            icon=icon,
            icon_bg=icon_bg,
            border=border,
        ),
    )


def box(
    bounds: tuple[int, int, int, int],
    *,
    bg: str | None = None,
    border: str | None = None,
    radius: int = 0,
    desc: str = "",
    action: str | None = None,
    rid: str = "",
    children: Sequence[Node] = (),
) -> Node:
    """A container view; clickable when it has an ``action``."""
    return Node(
        cls="android.view.View",
        bounds=bounds,
        content_desc=desc,
        resource_id=rid,
        clickable=action is not None,
        action=action,
        style=Style(bg=bg, border=border, radius=radius),
        children=list(children),
    )


GOOGLE_LETTERS = (
    ("G", "#4285f4"),
    ("o", "#ea4335"),
    ("o", "#fbbc05"),
    ("g", "#4285f4"),
    ("l", "#34a853"),
    ("e", "#ea4335"),
)


def money(value: float) -> str:
    """``1234.5`` -> ``"$1,234.50"``."""
    return f"${value:,.2f}"


# ----- shared by the Chrome page builders (serp, shops, sites) ---------------------------------
SERP_SEARCH_ID = f"{CHROME_ID}/serp_search"
SITE_SEARCH_ID = f"{CHROME_ID}/site_search"
RESULT_ID = f"{CHROME_ID}/result_link"
PRODUCT_ID = f"{CHROME_ID}/product_item"


@dataclass(frozen=True)
class Ctx:
    """What a page builder needs from the browser: where the page starts and the text fields."""

    top: int  # page y where web content starts (the bottom of Chrome's toolbar)
    fields: Mapping[str, str] = field(default_factory=dict)
    focus: str | None = None  # resource-id of the focused field
    incognito: bool = False

    def value(self, rid: str) -> str:
        return self.fields.get(rid, "")

    def focused(self, rid: str) -> bool:
        return self.focus == rid


def shuffled(options: Sequence[T], *parts: str) -> list[T]:
    """A deterministic permutation of ``options`` keyed by ``parts``."""
    return sorted(options, key=lambda o: stable_int(*parts, str(o)))


def smart_title(text: str) -> str:
    """:func:`title_case` that also upper-cases model numbers (``"g910"`` -> ``"G910"``)."""
    return " ".join(
        w.upper() if len(w) <= 6 and re.search(r"\d", w) and re.search(r"[a-z]", w) else w
        for w in title_case(text).split()
    )


def rating_text(rating: float, count: int) -> str:
    """``"4.3 out of 5 (1,234)"``: the bundled font has no star glyphs, so ratings are words."""
    return f"{rating:.1f} out of 5 ({count:,})"


class Column:
    """Lays nodes out top to bottom, the way a web page flows.

    Args:
        y: top of the first node, in page coordinates.
        x1: left edge of the column.
        x2: right edge of the column.
    """

    def __init__(self, y: int, x1: int = PAD, x2: int = SCREEN_W - PAD) -> None:
        self.y = y
        self.x1 = x1
        self.x2 = x2
        self.nodes: list[Node] = []

    def gap(self, height: int) -> Column:
        self.y += height
        return self

    def add(self, node: Node) -> Node:
        """Append ``node`` (already positioned) and move below it."""
        self.nodes.append(node)
        self.y = max(self.y, node.bounds[3])
        return node

    def text(
        self,
        text: str,
        *,
        size: int = 38,
        fg: str = DARK,
        bold: bool = False,
        height: int | None = None,
        action: str | None = None,
        rid: str = "",
        desc: str = "",
        bg: str | None = None,
        icon: str | None = None,
        icon_bg: str = "#1a73e8",
        align: str = "left",
        indent: int = 0,
    ) -> Node:
        """One line of text (clickable when ``action`` is given)."""
        h = height or int(size * 1.55)
        return self.add(
            Node(
                cls="android.widget.TextView",
                bounds=(self.x1 + indent, self.y, self.x2, self.y + h),
                text=text,
                resource_id=rid,
                content_desc=desc,
                clickable=action is not None,
                action=action,
                style=Style(
                    bg=bg, fg=fg, size=size, bold=bold, icon=icon, icon_bg=icon_bg, align=align
                ),
            )
        )

    def paragraph(self, text: str, *, size: int = 36, fg: str = "#4d5156", lines: int = 3) -> None:
        """Wrapped text (measured with the renderer's font), at most ``lines`` lines."""
        # wrap narrower than the box: small screenshot scales draw text slightly wider
        rows = list(wrap(text, self.x2 - self.x1 - 60, size))
        if len(rows) > lines:
            rows = rows[:lines]
            rows[-1] = rows[-1].rstrip(".,;:") + " ..."
        for row in rows:
            self.text(row, size=size, fg=fg, height=round(size * 1.45))

    def box(self, y1: int, *, bg: str = "#ffffff", border: str = "#dadce0", radius: int = 28):
        """A card background from ``y1`` to the current y (inserted under what it frames)."""
        node = Node(
            cls="android.view.View",
            bounds=(self.x1 - 20, y1, self.x2 + 20, self.y + 20),
            style=Style(bg=bg, border=border, radius=radius),
        )
        # insert before the first node at or below y1 so it is drawn underneath
        idx = next((i for i, n in enumerate(self.nodes) if n.bounds[1] >= y1), len(self.nodes))
        self.nodes.insert(idx, node)
        self.y += 20
        return node


def google_logo(cx: int, y: int, size: int = 110) -> list[Node]:
    """The six-letter Google wordmark in its colors, centered at ``cx``.

    Letters are spaced by their measured widths, each centered in a padded cell so the renderer
    never shortens a letter to an ellipsis.
    """
    widths = [text_width(ch, size) for ch, _ in GOOGLE_LETTERS]
    h = int(size * 1.3)
    x = cx - sum(widths) // 2
    logo = Node(
        cls="android.view.View", bounds=(x, y, x + sum(widths), y + h), content_desc="Google"
    )
    for (ch, color), w in zip(GOOGLE_LETTERS, widths, strict=True):
        cell = (x - 40, y, x + w + 40, y + h)  # padded: the renderer insets text from the edges
        logo.add(label(ch, cell, size=size, fg=color, bold=True, align="center"))
        x += w
    return [logo]


def input_box(
    value: str,
    focused: bool,
    rid: str,
    hint: str,
    bounds: tuple[int, int, int, int],
    *,
    bg: str = "#ffffff",
    border: str | None = "#dfe1e5",
    fg: str = DARK,
) -> list[Node]:
    """A web search box: an editable field plus a "Clear" button once it holds text."""
    x1, y1, x2, y2 = bounds
    field_x2 = x2 - 110 if value else x2
    nodes = [
        Node(
            cls="android.view.View",
            bounds=bounds,
            style=Style(bg=bg, border=border, radius=(y2 - y1) // 2),
        ),
        Node(
            cls="android.widget.EditText",
            bounds=(x1 + 10, y1, field_x2, y2),
            text=value,
            resource_id=rid,
            hint=hint,
            editable=True,
            focused=focused,
            style=Style(fg=fg, size=42, icon="@search", icon_bg=GREY),
        ),
    ]
    if value:
        nodes.append(
            Node(
                cls="android.widget.ImageButton",
                bounds=(x2 - 110, y1, x2 - 10, y2),
                text="X",
                content_desc="Clear",
                clickable=True,
                action=f"clear:{rid}",
                style=Style(fg=GREY, size=44, align="center"),
            )
        )
    return nodes


# ----- a little world knowledge, as of the simulated date (Saturday, Nov 21, 2020) ------------
def _table(spec: str) -> dict[str, str]:
    """``"a:1;b:2"`` -> ``{"a": "1", "b": "2"}`` (keeps long data tables compact)."""
    return dict(item.strip().split(":", 1) for item in spec.split(";") if item.strip())


_CAPITALS = _table(
    "argentina:Buenos Aires;bolivia:Sucre (constitutional), La Paz (seat of government);"
    "brazil:Brasília;canada:Ottawa;chile:Santiago;colombia:Bogotá;ecuador:Quito;"
    "mexico:Mexico City;panama:Panama City;paraguay:Asunción;peru:Lima;uruguay:Montevideo;"
    "venezuela:Caracas;united states:Washington, D.C.;usa:Washington, D.C.;china:Beijing;"
    "england:London;france:Paris;germany:Berlin;india:New Delhi;italy:Rome;japan:Tokyo;"
    "norway:Oslo;spain:Madrid;sweden:Stockholm;switzerland:Bern;united kingdom:London;"
    "uk:London;australia:Canberra;russia:Moscow;egypt:Cairo;south korea:Seoul;"
    "portugal:Lisbon;ireland:Dublin;netherlands:Amsterdam;greece:Athens;turkey:Ankara;"
    "kenya:Nairobi;nigeria:Abuja;south africa:Pretoria (executive);poland:Warsaw;"
    "austria:Vienna;belgium:Brussels;denmark:Copenhagen;finland:Helsinki;thailand:Bangkok;"
    "vietnam:Hanoi;indonesia:Jakarta;philippines:Manila;pakistan:Islamabad;cuba:Havana"
)
_FACTS = {
    "speed of light": ("299,792,458 m/s", "Speed of light in vacuum"),
    "speed of sound": ("343 m/s (767 mph)", "In dry air at 20 °C"),
    "cheetah": ("80 - 130 km/h (50 - 80 mph)", "Cheetah, top speed"),
    "blue whale": ("24 - 30 m (79 - 98 ft) long", "Blue whale, length"),
    "giraffe": ("4.3 - 5.7 m (14 - 19 ft) tall", "Giraffe, height"),
    "earth": ("12,742 km (7,918 mi) in diameter; 4.54 billion years old", "Earth"),
    "how far is the moon": ("384,400 km (238,855 mi)", "Average distance from Earth"),
    "moon": ("3,474 km (2,159 mi) in diameter", "Moon, diameter"),
    "sun": ("1.39 million km (864,000 mi) in diameter", "Sun, diameter"),
    "president of the united states": ("Donald Trump", "45th President of the United States"),
    "president of france": ("Emmanuel Macron", "President of France since 2017"),
    "prime minister of canada": ("Justin Trudeau", "Prime Minister of Canada since 2015"),
    "prime minister of the united kingdom": ("Boris Johnson", "Prime Minister since 2019"),
}
_UTC = {
    city: float(off)
    for city, off in _table(
        "beijing:8;berlin:1;london:0;los angeles:-8;moscow:3;new york:-5;nyc:-5;paris:1;"
        "san francisco:-8;sydney:11;tokyo:9;seoul:9;chicago:-6;denver:-7;mumbai:5.5;"
        "delhi:5.5;new delhi:5.5;hong kong:8;singapore:8;dubai:4;toronto:-5;mexico city:-6;"
        "sao paulo:-3;rio de janeiro:-3;buenos aires:-3;madrid:1;rome:1;zurich:1;"
        "johannesburg:2;cairo:2;istanbul:3;seattle:-8;boston:-5;miami:-5;honolulu:-10"
    ).items()
}
# code:units per US dollar:names; longest names are matched first
_CURRENCIES = {
    name: (code, float(rate))
    for code, spec in _table(
        "USD:1.0 usd|us dollar|dollar;EUR:0.843 eur|euro;GBP:0.753 gbp|british pound|pound;"
        "JPY:103.86 jpy|yen;CNY:6.567 cny|yuan|renminbi;INR:74.12 inr|rupee;"
        "KRW:1115.2 krw|won;MXN:20.07 mxn|peso;CAD:1.309 cad|canadian dollar;"
        "AUD:1.370 aud|australian dollar;BRL:5.33 brl|real;CHF:0.912 chf|franc;"
        "RUB:76.1 rub|ruble;HKD:7.753 hkd|hong kong dollar;SGD:1.340 sgd|singapore dollar"
    ).items()
    for rate, names in [spec.split(" ", 1)]
    for name in names.split("|")
}


def capital_of(text: str) -> str:
    """The capital for "capital of <country>" phrasings, or ``""`` if unknown."""
    m = re.search(r"capital (?:city )?of (?:the )?(.+?)$", text.lower().strip(" ?!."))
    country = m.group(1).strip() if m else ""
    return _CAPITALS.get(country, _CAPITALS.get(f"the {country}", ""))


def fact_answer(text: str) -> tuple[str, str] | None:
    """A known short answer whose key phrase occurs in ``text`` (longest key wins)."""
    low = text.lower()
    for key in sorted(_FACTS, key=len, reverse=True):
        if key in low:
            return _FACTS[key]
    return None


def utc_offset(city: str) -> float:
    """Hours from UTC for a city; unknown cities get a stable made-up offset (-10 .. +12)."""
    key = re.sub(r"[^a-z ]", "", city.lower()).strip()
    if key in _UTC:
        return _UTC[key]
    return float(stable_int("tz", key) % 23 - 10)


def currency_pair(text: str) -> tuple[str, str, float] | None:
    """``(from_code, to_code, rate)`` for text naming one or two currencies, else None.

    With one non-dollar currency the pair is USD -> it ("dollar to yen", "euro rate").
    """
    low = text.lower()
    found: list[tuple[int, str, float]] = []
    taken: list[tuple[int, int]] = []
    for name in sorted(_CURRENCIES, key=len, reverse=True):
        for m in re.finditer(rf"\b{re.escape(name)}s?\b", low):
            if any(a <= m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), *_CURRENCIES[name]))
    codes: list[tuple[str, float]] = []
    for _, code, per_usd in sorted(found):
        if (code, per_usd) not in codes:
            codes.append((code, per_usd))
    if not codes or codes == [("USD", 1.0)]:
        return None
    if len(codes) == 1:
        codes.insert(0, ("USD", 1.0))
    (src, src_rate), (dst, dst_rate) = codes[0], codes[1]
    return src, dst, dst_rate / src_rate
