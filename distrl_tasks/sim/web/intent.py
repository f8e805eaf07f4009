"""What a search query asks for: :func:`classify` sorts it into a ``kind`` with the slots its
answer card needs (city, route, currency pair, ...), by general phrasing rules rather than a list
of known goals:

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

A query that names a site ("ebay", "walmart tv") is recognized by :func:`mentioned_site`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from distrl_tasks.sim.web.facts import currency_pair, table_spec
from distrl_tasks.sim.web.text import smart_title

# fmt: off
KINDS = ("directions", "menu", "rent", "videos", "news", "currency", "weather", "flights",
         "hotels", "time", "images", "shopping", "local", "facts", "generic")
# fmt: on
LOCAL_CITY = "Mountain View"

_LEAD = re.compile(
    r"^(?:(?:please|hey google|ok google|google|search(?: for)?|searchfor|find(?: me)?|"
    r"show me(?: some)?|look up|tell me|i want to know|can you)\s+)+"
)
_TAIL = re.compile(r"\s+(?:on|in|using|with) (?:google maps|google|maps|chrome)$")
SITES = table_spec(
    "ebay:ebay.com;best buy:bestbuy.com;bestbuy:bestbuy.com;costco:costco.com;"
    "newegg:newegg.com;walmart:walmart.com;reddit:reddit.com;amazon:amazon.com;"
    "youtube:youtube.com;home depot:homedepot.com;lowes:lowes.com;lowe's:lowes.com;"
    "sephora:sephora.com;target:target.com;wikipedia:wikipedia.org;ikea:ikea.com"
)
SHOP_WORDS = "|".join(re.escape(k) for k in SITES if k not in ("reddit", "youtube", "wikipedia"))


@dataclass(frozen=True)
class Intent:
    """The kind of a query and the slots its card needs."""

    kind: str
    subject: str  # what the query is about, cleaned ("capital of peru", "tokyo")
    slots: dict[str, str] = field(default_factory=dict)


def unglue(text: str) -> str:
    """Split words a typist ran together ("inToronto", "a3 bedroom", "goodrestaurant")."""
    text = re.sub(r"\b(in|the|at|of|for|to|from)([A-Z][a-z])", r"\1 \2", text)
    text = re.sub(r"\ba(\d+)(?=[ -]?(?:bed|br))", r"a \1", text)
    return re.sub(r"(?i)\b(good|rate)(restaurants?|against)\b", r"\1 \2", text)


def clean_query(query: str) -> str:
    """Lower-case ``query`` and drop polite lead-ins and trailing "on google" phrases."""
    q = " ".join(unglue(query).lower().replace("’", "'").split())
    q = re.sub(r"[?!.]+$", "", q).strip()
    q = _LEAD.sub("", q)
    return _TAIL.sub("", q).strip()


def after(pattern: str, q: str) -> str:
    """The last group of ``pattern``'s first match in ``q`` (or ``""``), trimmed."""
    m = re.search(pattern, q)
    return m.group(m.lastindex or 0).strip(" ,") if m else ""


def drop_words(q: str, words: str) -> str:
    """``q`` without the ``words`` alternation and without leading filler ("what's the", ...)."""
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
    q = clean_query(query)
    typed = " ".join(unglue(query).replace("’", "'").split())

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
        place = after(r"\bmenus? (?:at|for|of|from) (.+)", q) or drop_words(q, r"menus?|on")
        return Intent("menu", place, {"restaurant": nice(place)})
    if _has(r"\brent(?:s|al|ing)?\b", q) and _has(r"apartment|bedroom|studio|condo|flat|house", q):
        beds = after(r"\b(\d+|one|two|three|four)[ -]?(?:bedroom|bed|br)\b", q)
        city = after(r"\bin ([a-z .'-]+?)(?: area)?$", q)
        return Intent("rent", city or q, {"bedrooms": beds or "1", "city": nice(city)})
    if _has(r"\b(?:videos?|youtube|trailers?|vlogs?|clips?)\b", q):
        src = after(r"\b(?:from|by|of) (?:the )?(.+)", q) or drop_words(
            q, r"videos?|youtube|latest|new|newest|play|watch|on"
        )
        return Intent("videos", src, {"channel": nice(src)})
    if _has(r"\b(?:news|headlines?|breaking)\b", q):
        topic = after(r"\bnews (?:in|about|on|from|for|of) (?:the )?(.+)", q)
        topic = topic or drop_words(
            q,
            r"news|headlines?|latest|today'?s?|top|breaking|"
            r"this (?:morning|afternoon|evening|week|weekend|month)|"
            r"today|tonight",
        )
        return Intent("news", topic, {"topic": nice(topic) if topic else "Top stories"})
    pair = currency_pair(q)
    if pair and (_has(r"exchange|rate|convert|currency|forex| to | in |\bvs\b|against", q)):
        return Intent("currency", q, {"from": pair[0], "to": pair[1]})
    priced = _has(r"\b(?:prices?|cost|costs|how much|buy)\b", q)  # "price of the snow blower"
    if not priced and _has(r"\b(?:weather|forecast|temperature|raining|rain|snow|humidity)\b", q):
        city = after(r"\b(?:in|for|at|of) (.+)$", q) or drop_words(
            q, r"weather|forecast|temperature|like|today|tomorrow|now|raining|rain|snow|humidity"
        )
        return Intent("weather", city, {"city": nice(city) if city else LOCAL_CITY})
    if _has(r"\b(?:flights?|fly|flying|airfares?|plane tickets?)\b", q):
        m = re.search(r"\bfrom (.+?) to (.+)$", q) or re.search(
            r"(?:flights?|fly|airfares?|tickets?) (.+?) to (.+)$", q
        )
        src, dst = (m.group(1), m.group(2)) if m else ("", after(r"\bto (.+)$", q))
        slots = {"from": nice(src) if src else LOCAL_CITY, "to": nice(dst)}
        return Intent("flights", f"{src} {dst}".strip(), slots)
    if _has(r"\b(?:hotels?|motels?|resorts?|inns?|lodging|places? to stay|airbnbs?|hostels?)\b", q):
        city = after(r"\b(?:in|near|at|around) (.+)$", q) or drop_words(
            q, r"hotels?|motels?|resorts?|cheap|best|good|book|lodging"
        )
        return Intent("hotels", city, {"city": nice(city) if city else LOCAL_CITY})
    if _has(
        r"\bwhat time is it\b|\btime (?:in|at|now)\b|what's the time|^(?:current |local )?"
        r"time$|\btime zone\b|\bcurrent time\b|\blocal time\b",
        q,
    ):
        city = after(r"\b(?:in|at) (.+)$", q)
        return Intent("time", city, {"city": nice(city) if city else ""})
    if _has(r"\b(?:wallpapers?|images?|pictures?|photos?|pics|backgrounds?|look like)\b", q):
        subj = drop_words(q, r"what does|look like|show|nice|some|cool|good|best|my")
        return Intent("images", subj, {})
    if _has(
        rf"\b(?:prices?|cost|costs|how much|buy|cheap|cheapest|deals?|for sale|on sale|"
        rf"best selling|new products|order|shopping|{SHOP_WORDS})\b|^(?:a )?new ",
        q,
    ):
        product = drop_words(
            q,
            rf"where can i buy|how much (?:does|is|are|do)|what's|"
            rf"prices?|cost|costs|price of|buy|a nice|at|on|from|"
            rf"{SHOP_WORDS}",
        )
        return Intent("shopping", product or q, {"product": nice(product or q)})
    if _has(
        r"\b(?:restaurants?|near me|nearest|nearby|open now|places?|stores?|shops?|cafes?|"
        r"coffee|bars?|pizza|sushi|burgers?|bbq|food|grocery|pharmacy|gas station|gyms?|"
        r"bakery|diner)\b",
        q,
    ):
        city = after(r"\b(?:in|near) ((?!me\b)[a-z .'-]+)$", q)
        what = re.sub(r"\b(?:in|near) [a-z .'-]+$", "", q) if city else q
        what = drop_words(
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
    for word, domain in SITES.items():
        m = re.search(rf"\b{re.escape(word)}(?:\.com)?\b", q)
        if m and m.start() < best[1]:
            best = (domain, m.start())
    return best[0]


def intent_for(query: str, kind: str = "") -> Intent:
    """``classify(query)``, or the same subject shown as ``kind`` (a tab the user picked)."""
    intent = classify(query)
    if not kind or kind == intent.kind:
        return intent
    if kind not in KINDS:
        raise ValueError(f"unknown result kind {kind!r}; expected one of {KINDS}")
    subject = intent.subject or clean_query(query)
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
