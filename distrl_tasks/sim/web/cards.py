"""The answer card at the top of a Google results page, for each kind of query.

A card is a list of lines ``(text, size, color, bold)``; numbers on it (temperatures, prices,
ratings) follow from the query through a stable hash.
"""

from __future__ import annotations

import re

from distrl_tasks.sim.app import pick, shuffled, stable_int
from distrl_tasks.sim.web.facts import capital_of, currency_pair, fact_answer, utc_offset
from distrl_tasks.sim.web.intent import LOCAL_CITY, Intent, after
from distrl_tasks.sim.web.shops import SHOPS
from distrl_tasks.sim.web.text import smart_title


def answer_card(intent: Intent) -> list[tuple[str, int, str, bool]]:
    """Lines ``(text, size, color, bold)`` of the top card for ``intent`` (all kinds)."""
    k, s, sl = intent.kind, intent.subject, intent.slots
    h = stable_int(k, s)
    grey, dark = "#5f6368", "#202124"
    if k == "weather":
        temp = 40 + h % 46
        cond = pick(("Sunny", "Partly cloudy", "Cloudy", "Light rain", "Clear"), "cond", s)
        days = " ".join(
            f"{d} {temp + (h >> i) % 9 - 4}°"
            for i, d in enumerate(("Sat", "Sun", "Mon", "Tue", "Wed"))
        )
        return [
            (f"Weather in {sl['city']}", 40, grey, False),
            (f"{temp}°F  {cond}", 72, dark, True),
            (
                f"Precipitation: {h % 60}%  Humidity: {30 + h % 60}%  Wind: {2 + h % 18} mph",
                34,
                grey,
                False,
            ),
            (days, 36, dark, False),
        ]
    if k == "time":
        offset = utc_offset(sl["city"]) if sl["city"] else -8
        minutes = (20 * 60 + 30 + int(offset * 60)) % (24 * 60)
        day = (
            "Sunday, November 22, 2020"
            if 20 * 60 + 30 + offset * 60 >= 24 * 60
            else ("Saturday, November 21, 2020")
        )
        hh, mm = divmod(minutes, 60)
        clock = f"{(hh - 1) % 12 + 1}:{mm:02d} {'AM' if hh < 12 else 'PM'}"
        where = f"Time in {sl['city']}" if sl["city"] else "Local time (Mountain View)"
        return [
            (clock, 80, dark, True),
            (day, 38, dark, False),
            (f"{where} (GMT{offset:+g})", 36, grey, False),
        ]
    if k == "currency":
        src, dst, rate = sl["from"], sl["to"], currency_pair(intent.subject)[2]
        return [
            (f"1 {src} equals", 38, grey, False),
            (f"{rate:,.4g} {dst}", 72, dark, True),
            ("Nov 21, 2020, 20:30 UTC · Disclaimer", 32, grey, False),
        ]
    if k == "flights":
        lines = [(f"Flights from {sl['from']} to {sl['to'] or 'anywhere'}", 44, dark, True)]
        for i, airline in enumerate(
            shuffled(
                ("United", "Delta", "American", "JetBlue", "Lufthansa", "Air France"), "air", s
            )[:3]
        ):
            # each extra stop adds hours: a 2-stop trip is never the shortest option
            hours = 2 + h % 12 + i * (2 + (h >> (3 * i)) % 4)
            price = 180 + (h >> (5 * i)) % 900
            stops = "Nonstop" if i == 0 else f"{i} stop{'s' if i > 1 else ''}"
            lines.append(
                (f"{airline} · {stops} · {hours}h {h % 60:02d}m · from ${price}", 36, dark, False)
            )
        return lines
    if k in ("hotels", "local", "rent", "menu"):
        return _listing_card(intent, h)
    if k == "directions":
        drive = 4 + h % 25
        return [
            (f"Directions to {sl['destination']}", 44, dark, True),
            (f"Car  {drive} min ({drive * 0.6:.1f} mi) via El Camino Real", 38, dark, False),
            (f"Transit  {drive * 2 + 3} min   Walk  {drive * 5} min", 36, grey, False),
            (f"From your location, {LOCAL_CITY}", 34, grey, False),
        ]
    if k == "facts":
        head, detail = fact_answer(s) or (smart_title(s), "Overview from Wikipedia")
        cap = capital_of(s)
        if cap:
            head, detail = cap, f"Capital of {smart_title(after(r'capital of (.+)', s))}"
        return [(head, 60, dark, True), (detail, 36, grey, False)]
    if k == "news":
        return [("Top stories", 44, dark, True)] + [
            (
                f"{pick(('CNN', 'BBC', 'Reuters', 'AP'), 'src', s, str(i))} · {i + 1}h ago: "
                f"{sl['topic']} {pick(_HEADLINES, 'hl', s, str(i))}",
                36,
                dark,
                False,
            )
            for i in range(3)
        ]
    if k == "videos":
        return [("Videos", 44, dark, True)] + [
            (
                f"{sl['channel'] or 'Video'}: {pick(_VIDEO_TITLES, 'v', s, str(i))} · "
                f"YouTube · {(h >> i) % 14 + 1}:{(h >> (2 * i)) % 60:02d}",
                36,
                dark,
                False,
            )
            for i in range(3)
        ]
    if k == "images":
        return [(f"Images for {smart_title(s) or 'wallpapers'}", 44, dark, True)]
    if k == "shopping":
        prod = sl["product"]
        return [(f"Shop for {prod}", 44, dark, True)] + [
            (f"{prod} · ${60 + (h >> (4 * i)) % 1200}.99 · {SHOPS[site].name}", 36, dark, False)
            for i, site in enumerate(shuffled(tuple(SHOPS), "stores", s)[:3])
        ]
    return [("People also ask", 44, dark, True)] + [
        (f"{t.format(s=smart_title(s))}", 36, dark, False)
        for t in ("What is {s}?", "Why is {s} popular?", "How does {s} work?")
    ]


def _listing_card(intent: Intent, h: int) -> list[tuple[str, int, str, bool]]:
    k, sl = intent.kind, intent.slots
    dark, grey = "#202124", "#5f6368"
    if k == "rent":
        beds = {"one": "1", "two": "2", "three": "3", "four": "4"}.get(
            sl["bedrooms"], sl["bedrooms"]
        )
        avg = 900 + h % 2600 + 400 * int(beds if beds.isdigit() else 1)
        city = sl["city"] or LOCAL_CITY
        return [
            (f"Average rent, {beds} bedroom in {city}", 40, grey, False),
            (f"${avg:,}/mo", 72, dark, True),
            (f"Range ${avg - 450:,} - ${avg + 900:,} · Updated Nov 2020", 34, grey, False),
        ]
    if k == "menu":
        items = shuffled(
            (
                "Classic Burger",
                "Chicken Sandwich",
                "Caesar Salad",
                "Fries",
                "Cheese Pizza",
                "Burrito Bowl",
                "Iced Coffee",
                "Pancakes",
                "Tacos",
                "Milkshake",
                "Pasta Alfredo",
                "Veggie Wrap",
            ),
            "menu",
            intent.subject,
        )
        return [(f"{sl['restaurant']} menu", 44, dark, True)] + [
            (f"{item} · ${3 + (h >> (3 * i)) % 12}.{(h >> i) % 10}9", 38, dark, False)
            for i, item in enumerate(items[:4])
        ]
    where = sl.get("city") or LOCAL_CITY
    what = smart_title(intent.subject) if k == "local" else "Hotel"
    lines = [(f"{'Hotels' if k == 'hotels' else what} in {where}", 44, dark, True)]
    for i in range(3):
        name = _venue_name(intent, i)
        rating = 3.6 + ((h >> (4 * i)) % 15) / 10
        extra = f"${90 + (h >> (6 * i)) % 310}/night" if k == "hotels" else "Open · Closes 9 PM"
        lines.append((f"{name} · {rating:.1f} · {extra}", 36, dark, False))
    return lines


def _venue_name(intent: Intent, i: int) -> str:
    what = intent.slots.get("what", intent.subject)
    generic = re.search(r"restaurants?|stores?|shops?|places?|cafes?|bars?|hotel|food|coffee", what)
    if intent.kind == "hotels":
        return (
            pick(
                ("Grand", "Harbor", "Park", "Central", "Plaza", "Riverside"),
                "h",
                str(i),
                intent.subject,
            )
            + " "
            + ("Hotel", "Inn", "Suites")[i]
        )
    if generic or not what:
        kind = smart_title(re.sub(r"\b(restaurants?|places?|s)$", "", what).strip()) or "Local"
        return (
            f"{pick(('The Golden', 'Blue Door', 'Corner', 'Maple', 'Sunny'), 'v', what, str(i))}"
            f" {kind}"
        )
    return f"{smart_title(what)} - {('Main St', 'Castro St', 'El Camino Real')[i]}"


_HEADLINES = (
    "leaders meet as talks continue",
    "what experts say about the latest numbers",
    "markets react to new data",
    "five things to know this week",
    "officials announce new measures",
)
_VIDEO_TITLES = (
    "Official Video",
    "Full Review",
    "Everything You Need to Know",
    "Highlights",
    "Live Performance",
    "Behind the Scenes",
)
