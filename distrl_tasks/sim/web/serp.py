"""Google search result pages for arbitrary queries.

:func:`classify` sorts a query into a ``kind`` by general phrasing rules (not by a list of known
goals), pulling out the slots the top card needs (city, route, currency pair, ...):

==============  ============================================  ================================
kind            recognized by                                 top card
==============  ============================================  ================================
directions      how do I get to / directions to / route to    route with travel times
menu            "menu"                                        popular dishes with prices
rent            rent + apartment/bedroom/studio               average rent and listings
videos          video(s), youtube, trailer                    video carousel
news            news, headlines                               top stories
currency        exchange rate, convert, two currencies        "1 USD equals ..." converter
weather         weather, forecast, temperature                today's weather and 5 days
flights         flight(s), fly, airfare                       flights from -> to
hotels          hotel(s), place to stay, resort               hotels in the city
time            what time is it, time in X                    the clock of a city
images          wallpapers, images, pictures, look like       image grid
shopping        price, cost, buy, deals, a shop's name        product listings with stores
local           restaurants, nearest, near me, store, cafe    map and three places
facts           capital of, how big/old/far, speed of, who    featured answer
generic         anything else                                 "People also ask"
==============  ============================================  ================================

The page (``serp_body``) shows the Google logo, a search box holding the query
(``com.android.chrome:id/serp_search``), tabs, the card and organic results whose titles are
clickable (``com.android.chrome:id/result_link``). A result on a shop or reddit opens that site;
others open a ``web`` page. A query that names a site ("ebay", "walmart tv") lists it first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from distrl_tasks.sim.app import make_action
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import (
    RESULT_ID,
    SERP_SEARCH_ID,
    Column,
    Ctx,
    _table,
    capital_of,
    currency_pair,
    fact_answer,
    google_logo,
    input_box,
    pick,
    shuffled,
    smart_title,
    stable_int,
    utc_offset,
)
from distrl_tasks.sim.web.shops import SHOPS, search_url
from distrl_tasks.sim.web.sites import REDDIT, result_title_for, site_results_target

# fmt: off
KINDS = ("directions", "menu", "rent", "videos", "news", "currency", "weather", "flights",
         "hotels", "time", "images", "shopping", "local", "facts", "generic")
# fmt: on
LOCAL_CITY = "Mountain View"

# ----- classification -------------------------------------------------------------------------
_LEAD = re.compile(
    r"^(?:(?:please|hey google|ok google|google|search(?: for)?|searchfor|find(?: me)?|"
    r"show me(?: some)?|look up|tell me|i want to know|can you)\s+)+"
)
_TAIL = re.compile(r"\s+(?:on|in|using|with) (?:google maps|google|maps|chrome)$")
_SITES = _table(
    "ebay:ebay.com;best buy:bestbuy.com;bestbuy:bestbuy.com;costco:costco.com;"
    "newegg:newegg.com;walmart:walmart.com;reddit:reddit.com;amazon:amazon.com;"
    "youtube:youtube.com;home depot:homedepot.com;lowes:lowes.com;lowe's:lowes.com;"
    "sephora:sephora.com;target:target.com;wikipedia:wikipedia.org;ikea:ikea.com"
)
_SHOP_WORDS = "|".join(re.escape(k) for k in _SITES if k not in ("reddit", "youtube", "wikipedia"))


@dataclass(frozen=True)
class Intent:
    """The kind of a query and the slots its card needs."""

    kind: str
    subject: str  # what the query is about, cleaned ("capital of peru", "tokyo")
    slots: dict[str, str] = field(default_factory=dict)


def _clean(query: str) -> str:
    q = " ".join(query.lower().replace("’", "'").split())
    q = re.sub(r"[?!.]+$", "", q).strip()
    q = _LEAD.sub("", q)
    return _TAIL.sub("", q).strip()


def _after(pattern: str, q: str) -> str:
    m = re.search(pattern, q)
    return m.group(m.lastindex or 0).strip(" ,") if m else ""


def _strip_words(q: str, words: str) -> str:
    text = re.sub(rf"\b(?:{words})\b", " ", q)
    text = re.sub(
        r"^(?:what's|what is|whats|what are|the|a|an|some|me|for|in|on|of|\s)+\b",
        "",
        " ".join(text.split()),
    )
    return " ".join(text.split()).strip(" ,")


def _has(pattern: str, q: str) -> bool:
    return re.search(pattern, q) is not None


def classify(query: str) -> Intent:
    """Classify ``query`` into one of :data:`KINDS` with its slots (see the module docstring)."""
    q = _clean(query)
    typed = " ".join(query.replace("’", "'").split())

    def nice(piece: str) -> str:
        """A slot in display form, keeping the user's own casing ("IKEA", "iPhone")."""
        at = typed.lower().find(piece) if piece else -1
        return smart_title(typed[at : at + len(piece)] if at >= 0 else piece)

    if not q:
        return Intent("generic", "")
    m = re.search(
        r"(?:how (?:do|can|would) i (?:get|go|drive|walk) to|directions? (?:to|for)|"
        r"route to|navigate to|take me to|the way to|get directions to)\s+(.+)",
        q,
    )
    if m or q.endswith(" directions"):
        dest = m.group(1) if m else q[: -len(" directions")]
        return Intent("directions", dest.strip(), {"destination": nice(_place_name(dest))})
    if _has(r"\bmenus?\b", q):
        place = _after(r"\bmenus? (?:at|for|of|from) (.+)", q) or _strip_words(q, r"menus?|on")
        return Intent("menu", place, {"restaurant": nice(place)})
    if _has(r"\brent(?:s|al|ing)?\b", q) and _has(r"apartment|bedroom|studio|condo|flat|house", q):
        beds = _after(r"\b(\d+|one|two|three|four)[ -]?(?:bedroom|bed|br)\b", q)
        city = _after(r"\bin ([a-z .'-]+?)(?: area)?$", q)
        return Intent("rent", city or q, {"bedrooms": beds or "1", "city": nice(city)})
    if _has(r"\b(?:videos?|youtube|trailers?|vlogs?|clips?)\b", q):
        src = _after(r"\b(?:from|by|of) (?:the )?(.+)", q) or _strip_words(
            q, r"videos?|youtube|latest|new|newest|play|watch|on"
        )
        return Intent("videos", src, {"channel": nice(src)})
    if _has(r"\b(?:news|headlines?|breaking)\b", q):
        topic = _after(r"\bnews (?:in|about|on|from|for|of) (?:the )?(.+)", q)
        topic = topic or _strip_words(
            q,
            r"news|headlines?|latest|today'?s?|top|breaking|"
            r"this (?:morning|afternoon|evening|week|weekend|month)|"
            r"today|tonight",
        )
        return Intent("news", topic, {"topic": nice(topic) if topic else "Top stories"})
    pair = currency_pair(q)
    if pair and (_has(r"exchange|rate|convert|currency|forex| to | in |\bvs\b|against", q)):
        return Intent("currency", q, {"from": pair[0], "to": pair[1]})
    if _has(r"\b(?:weather|forecast|temperature|raining|rain|snow|humidity)\b", q):
        city = _after(r"\b(?:in|for|at|of) (.+)$", q) or _strip_words(
            q, r"weather|forecast|temperature|like|today|tomorrow|now|raining|rain|snow|humidity"
        )
        return Intent("weather", city, {"city": nice(city) if city else LOCAL_CITY})
    if _has(r"\b(?:flights?|fly|flying|airfares?|plane tickets?)\b", q):
        m = re.search(r"\bfrom (.+?) to (.+)$", q) or re.search(
            r"(?:flights?|fly|airfares?|tickets?) (.+?) to (.+)$", q
        )
        src, dst = (m.group(1), m.group(2)) if m else ("", _after(r"\bto (.+)$", q))
        slots = {"from": nice(src) if src else LOCAL_CITY, "to": nice(dst)}
        return Intent("flights", f"{src} {dst}".strip(), slots)
    if _has(r"\b(?:hotels?|motels?|resorts?|inns?|lodging|places? to stay|airbnbs?|hostels?)\b", q):
        city = _after(r"\b(?:in|near|at|around) (.+)$", q) or _strip_words(
            q, r"hotels?|motels?|resorts?|cheap|best|good|book|lodging"
        )
        return Intent("hotels", city, {"city": nice(city) if city else LOCAL_CITY})
    if _has(
        r"\bwhat time is it\b|\btime (?:in|at|now)\b|what's the time|^(?:current |local )?"
        r"time$|\btime zone\b|\bcurrent time\b|\blocal time\b",
        q,
    ):
        city = _after(r"\b(?:in|at) (.+)$", q)
        return Intent("time", city, {"city": nice(city) if city else ""})
    if _has(r"\b(?:wallpapers?|images?|pictures?|photos?|pics|backgrounds?|look like)\b", q):
        subj = _strip_words(q, r"what does|look like|show|nice|some|cool|good|best|my")
        return Intent("images", subj, {})
    if _has(
        rf"\b(?:prices?|cost|costs|how much|buy|cheap|cheapest|deals?|for sale|on sale|"
        rf"best selling|new products|order|shopping|{_SHOP_WORDS})\b|^(?:a )?new ",
        q,
    ):
        product = _strip_words(
            q,
            rf"where can i buy|how much (?:does|is|are|do)|what's|"
            rf"prices?|cost|costs|price of|buy|a nice|at|on|from|"
            rf"{_SHOP_WORDS}",
        )
        return Intent("shopping", product or q, {"product": nice(product or q)})
    if _has(
        r"\b(?:restaurants?|near me|nearest|nearby|open now|places?|stores?|shops?|cafes?|"
        r"coffee|bars?|pizza|sushi|burgers?|bbq|food|grocery|pharmacy|gas station|gyms?|"
        r"bakery|diner)\b",
        q,
    ):
        city = _after(r"\b(?:in|near) ((?!me\b)[a-z .'-]+)$", q)
        what = re.sub(r"\b(?:in|near) [a-z .'-]+$", "", q) if city else q
        what = _strip_words(
            what,
            r"find|nearest|nearby|near me|good|best|top rated|a|that's open"
            r"(?: now| today| tomorrow)?|open now|5 star",
        )
        return Intent("local", what, {"what": what or "places", "city": nice(city)})
    if _has(
        r"\b(?:capital of|how (?:big|tall|old|far|long|fast|heavy|deep|high|many|large)|"
        r"speed of|who (?:is|was|are)|president|prime minister|population|define|meaning of|"
        r"when (?:is|was|did)|what(?:'s| is| are| was) (?:a|an|the))\b",
        q,
    ):
        return Intent("facts", q, {})
    return Intent("generic", q, {})


def _place_name(text: str) -> str:
    return re.sub(r"^(?:the )?(?:nearest |closest )?", "", text.strip())


def mentioned_site(query: str) -> str:
    """The domain a query names ("ebay", "best buy"), or ``""``; the earliest mention wins."""
    q = query.lower()
    best = ("", len(q) + 1)
    for word, domain in _SITES.items():
        m = re.search(rf"\b{re.escape(word)}(?:\.com)?\b", q)
        if m and m.start() < best[1]:
            best = (domain, m.start())
    return best[0]


# ----- organic results ------------------------------------------------------------------------
_DOMAINS = {
    "news": ("cnn.com", "bbc.com", "reuters.com", "apnews.com", "nytimes.com", "npr.org"),
    "weather": ("weather.com", "accuweather.com", "wunderground.com", "weather.gov"),
    "flights": ("expedia.com", "kayak.com", "skyscanner.com", "united.com", "delta.com"),
    "hotels": ("booking.com", "hotels.com", "tripadvisor.com", "expedia.com", "marriott.com"),
    "local": ("yelp.com", "tripadvisor.com", "opentable.com", "foursquare.com"),
    "shopping": (
        "ebay.com",
        "walmart.com",
        "bestbuy.com",
        "amazon.com",
        "newegg.com",
        "costco.com",
    ),
    "facts": ("wikipedia.org", "britannica.com", "nationalgeographic.com", "nasa.gov"),
    "time": ("timeanddate.com", "time.is", "worldtimebuddy.com"),
    "currency": ("xe.com", "wise.com", "x-rates.com", "bloomberg.com"),
    "directions": ("mapquest.com", "yelp.com", "waze.com"),
    "menu": ("menuwithprice.com", "doordash.com", "yelp.com", "ubereats.com"),
    "rent": ("zillow.com", "apartments.com", "rent.com", "zumper.com", "trulia.com"),
    "videos": ("youtube.com", "vimeo.com", "dailymotion.com"),
    "images": ("unsplash.com", "pexels.com", "wallpaperaccess.com", "pinterest.com"),
    "generic": (
        "wikipedia.org",
        "reddit.com",
        "quora.com",
        "medium.com",
        "britannica.com",
        "stackoverflow.com",
        "nytimes.com",
    ),
}


@dataclass(frozen=True)
class Result:
    """One organic result: where it points, what it says, what a tap does."""

    host: str
    url: str
    title: str
    snippet: str
    action: str


def organic_results(query: str, intent: Intent, n: int = 6) -> list[Result]:
    """Deterministic organic results; a site named in the query comes first."""
    hosts = shuffled(_DOMAINS.get(intent.kind, ()), "hosts", query.lower())
    hosts += [h for h in _DOMAINS["generic"] if h not in hosts]  # always a full page
    named = mentioned_site(query)
    if named:
        hosts = [named] + [h for h in hosts if h != named]
    subject = intent.subject or query
    out = []
    for host in hosts[:n]:
        title = result_title_for(host, subject)
        url = f"https://www.{host}/{re.sub(r'[^a-z0-9]+', '-', subject.lower()).strip('-')}"
        action = "open:" + make_action("web", url=url, title=title)
        if host in SHOPS or host == REDDIT:
            bare = _strip_words(query.lower(), rf"{_SHOP_WORDS}|reddit|\.com|go to|open|site")
            if host == REDDIT or not bare or (host == named and bare == ""):
                url = f"https://www.{host}/"
                title = f"{'Reddit - Dive into anything' if host == REDDIT else _shop_title(host)}"
                action = "open:" + make_action("site_home", site=host)
            else:
                name, params = site_results_target(host, intent.slots.get("product") or bare)
                url = search_url(host, params["query"])
                title = f"{smart_title(params['query'])} for sale | {SHOPS[host].name}"
                action = "open:" + make_action(name, **params)
        snippet = pick(_SNIPPETS, "snippet", host, query.lower()).format(s=smart_title(subject))
        out.append(Result(host, url, title, snippet, action))
    return out


def _shop_title(host: str) -> str:
    return f"{SHOPS[host].name}: Shop Electronics, Deals and More"


_SNIPPETS = (
    "Everything about {s}: latest updates, key facts and answers to common questions.",
    "Compare options for {s}. Read reviews, see photos and find the best choice for you.",
    "{s} - a complete guide, updated November 2020, with tips from experts and readers.",
    "Looking for {s}? Browse our selection and get the details you need in one place.",
)


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
            hours, price = 2 + (h >> (3 * i)) % 14, 180 + (h >> (5 * i)) % 900
            stops = "Nonstop" if i == 0 else f"{i} stop"
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
            head, detail = cap, f"Capital of {smart_title(_after(r'capital of (.+)', s))}"
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


# ----- the page -------------------------------------------------------------------------------
TABS = (
    ("All", "all"),
    ("News", "news"),
    ("Images", "images"),
    ("Videos", "videos"),
    ("Shopping", "shopping"),
    ("Maps", "local"),
)
_LINKED = ("news", "videos", "shopping", "local", "hotels")  # kinds whose card rows are links


def intent_for(query: str, kind: str = "") -> Intent:
    """``classify(query)``, or the same subject shown as ``kind`` (a tab the user picked)."""
    intent = classify(query)
    if not kind or kind == intent.kind:
        return intent
    if kind not in KINDS:
        raise ValueError(f"unknown result kind {kind!r}; expected one of {KINDS}")
    subject = intent.subject or _clean(query)
    title = smart_title(subject)
    slots = {
        "topic": title or "Top stories",
        "channel": title,
        "product": title or "Deals",
        "what": subject,
        "city": "",
        "from": LOCAL_CITY,
        "to": "",
        "destination": title,
        "restaurant": title,
        "bedrooms": "1",
    }
    if kind == "currency" and currency_pair(subject) is None:
        kind = "generic"
    return Intent(kind, subject, {**slots, **intent.slots})


def serp_body(ctx: Ctx, query: str, kind: str = "", tab: str = "all") -> list[Node]:
    """The Google results page for ``query`` (``kind`` overrides the classified kind).

    ``tab`` is the highlighted tab ("all" unless the user picked News, Images, ...).
    """
    intent = intent_for(query, kind)
    col = Column(ctx.top + 10)
    for node in google_logo(SCREEN_W // 2, col.y, 72):
        col.add(node)
    col.gap(20)
    for node in input_box(
        ctx.value(SERP_SEARCH_ID),
        ctx.focused(SERP_SEARCH_ID),
        SERP_SEARCH_ID,
        "Search Google",
        (40, col.y, SCREEN_W - 40, col.y + 130),
        border="#dfe1e5",
    ):
        col.add(node)
    col.gap(20)
    x, tab_y = 30, col.y
    for label, key in TABS:
        w = 40 + len(label) * 24
        on = key == tab
        col.add(
            Node(
                cls="android.widget.TextView",
                bounds=(x, tab_y, x + w, tab_y + 90),
                text=label,
                content_desc=f"{label} results",
                clickable=True,
                action=f"serp:tab:{key}",
                style=Style(
                    fg="#1a73e8" if on else "#5f6368",
                    size=36,
                    bold=on,
                    align="center",
                    border="#1a73e8" if on else None,
                    radius=10,
                ),
            )
        )
        x += w + 14
    col.gap(30)
    if intent.kind in ("local", "hotels", "directions"):
        col.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(0, col.y, SCREEN_W, col.y + 380),
                text="Map",
                content_desc=f"Map of {intent.subject}",
                style=Style(bg="#e6f4ea", fg="#188038", size=40, align="center"),
            )
        )
        col.gap(30)
    if intent.kind == "images":
        _image_grid(col, intent)
    top = col.y
    col.gap(20)
    for i, (text, size, fg, bold) in enumerate(answer_card(intent)):
        action = _card_action(intent, i - 1, text) if i and intent.kind in _LINKED else None
        col.text(
            text,
            size=size,
            fg="#1a0dab" if action else fg,
            bold=bold,
            action=action,
            desc=text if action else "",
            height=int(size * 1.7),
        )
    col.box(top)
    col.gap(30)
    for r in organic_results(query, intent):
        col.text(
            f"{r.host}  ·  {r.url.split('://', 1)[-1][:40]}",
            size=30,
            fg="#4d5156",
            icon=r.host,
            icon_bg=pick(("#4285f4", "#34a853", "#ea4335", "#a142f4"), r.host),
        )
        col.text(
            r.title, size=42, fg="#1a0dab", action=r.action, rid=RESULT_ID, desc=r.title, height=80
        )
        col.paragraph(r.snippet, size=34, lines=2)
        col.gap(36)
    col.text(f"{LOCAL_CITY}, CA - From your IP address", size=30, fg="#70757a", align="center")
    return col.nodes


def _card_action(intent: Intent, i: int, text: str) -> str:
    if intent.kind == "shopping":
        site = shuffled(tuple(SHOPS), "stores", intent.subject)[i]
        name, params = site_results_target(site, intent.slots.get("product") or intent.subject)
        return "open:" + make_action(name, **params)
    host = {
        "news": pick(("cnn.com", "bbc.com", "reuters.com"), "n", text),
        "videos": "youtube.com",
        "local": "yelp.com",
        "hotels": "booking.com",
    }[intent.kind]
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]
    path = f"watch?v={slug[:11]}" if host == "youtube.com" else slug
    return "open:" + make_action("web", url=f"https://www.{host}/{path}", title=text)


def _image_grid(col: Column, intent: Intent) -> None:
    colors = shuffled(
        ("#3949ab", "#00897b", "#f4511e", "#8e24aa", "#039be5", "#7cb342"), "tiles", intent.subject
    )
    subject = smart_title(intent.subject) or "Wallpapers"
    for i, color in enumerate(colors):
        row, c = divmod(i, 2)
        x1 = 30 + c * 520
        y1 = col.y + row * 420
        title = f"{subject} {pick(('HD', '4K', 'Minimal', 'Nature', 'Abstract'), str(i), subject)}"
        col.nodes.append(
            Node(
                cls="android.widget.ImageView",
                bounds=(x1, y1, x1 + 500, y1 + 400),
                text=title,
                content_desc=title,
                clickable=True,
                style=Style(bg=color, fg="#ffffff", size=34, align="center", radius=20),
                action="open:"
                + make_action(
                    "web",
                    url=f"https://www.unsplash.com/s/{i}-{stable_int(title) % 99999}",
                    title=title,
                ),
            )
        )
    col.y += 3 * 420 + 10
