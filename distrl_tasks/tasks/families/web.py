"""Families answered in Chrome: information questions, web sites, shop searches, WebShop.

Information questions are recognised by sentence structure (question words, "Google X",
"Search for X"); their ``topic`` only labels the kind of question. Success compares the searched
query with the goal's key terms (see :func:`distrl_tasks.tasks.families.text.key_terms`), so any
query a person would accept as "searching for that" counts, whatever its exact wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from distrl_tasks.sim.apps import CHROME
from distrl_tasks.sim.state import SimState
from distrl_tasks.tasks.families.names import WEB_FIRST, is_system_app, site_domain
from distrl_tasks.tasks.families.text import (
    content_phrase,
    covers,
    key_terms,
    same_query,
    stem,
    stems,
    strip_article,
)
from distrl_tasks.tasks.task import WEBSHOP, Family

_I = re.IGNORECASE
_SITE_PAGES = ("site_home", "site_results", "site_product", "web")

# (topic, pattern) in priority order; the first match names the topic. Group "q", when present,
# is the phrase to search for; otherwise the whole question is.
_TOPICS: list[tuple[str, re.Pattern[str]]] = [
    (t, re.compile(p, _I))
    for t, p in [
        ("flights", r"\bflights?\s+from\s+(?P<src>.+?)\s+to\s+(?P<dst>.+?)[.?!]*$"),
        ("rent", r"\b(?P<q>\d+\s+bedroom\s+apartment)\s+rent\s+for\s+in\s+(?P<where>.+?)[.?!]*$"),
        ("exchange_rate", r"\bexchange\s+rate\b"),
        ("weather", r"\bweather\b"),
        ("menu", r"\bmenu\s+(?:at|of|for)\s+"),
        ("hotels", r"\bhotels?\s+(?:in|near)\s+"),
        ("time", r"^what\s+time\s+is\s+it\b|^what'?s\s+the\s+time\b"),
        ("news", r"\bnews\b"),
        ("restaurants", r"\brestaurants?\b"),
        ("wallpapers", r"\bwallpapers?\b"),
        ("prices", r"\b(?:how\s+much|price|cost)\b"),
        ("shopping", r"^where\s+can\s+i\s+buy\b|\bbest\s+selling\b|\bnew\s+products\b"),
        ("people", r"^who\s+is\b"),
        ("capitals", r"\bcapital\s+of\b"),
        ("facts", r"^(?:how|what|when|where|why|which|is|are|does|do|can)\b"),
        ("search", r"^(?:google|search\s+for|search|look\s+up|find)\b"),
    ]
]
_LEAD = re.compile(
    r"^(?:google|search\s+(?:for|google\s+for)|search|look\s+up|find|show\s+me)\s+", _I
)


class WebSearch(Family):
    """Information questions and web searches, answered by a Google results page in Chrome.

    Params: ``topic`` (news, weather, hotels, flights, ...), ``query`` (a natural query, what
    the expert types), ``terms`` (space-separated stemmed key terms the query must contain), and
    for flights ``src``/``dst``. Success: Chrome in front on "serp" whose query contains every key
    term (qualifiers like "good", "latest", "today" are optional); for flights the origin must
    also come before the destination. Any other page (a site, an empty tab) fails: the judge
    needs to see results for the question.
    """

    name = "web_search"

    def match(self, text: str) -> dict[str, str] | None:
        for topic, pattern in _TOPICS:
            m = pattern.search(text)
            if m is None:
                continue
            query = strip_article(_LEAD.sub("", text))
            terms = key_terms(query)
            if not terms:
                return None
            params = {"topic": topic, "query": query, "terms": " ".join(terms)}
            if topic == "flights":
                params["src"] = " ".join(key_terms(m.group("src"), soft=False))
                params["dst"] = " ".join(key_terms(m.group("dst"), soft=False))
            return params
        return None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: a Chrome "serp" whose query covers the key terms (flights: in order)."""
        if state.app != CHROME or state.page != "serp":
            return False
        query = state.param("query")
        if not covers(query, params["terms"]):
            return False
        if params["topic"] == "flights":
            return _in_order(stems(query), params["src"].split(), params["dst"].split())
        return True


def _in_order(tokens: list[str], first: list[str], second: list[str]) -> bool:
    """Whether phrase ``first`` starts before phrase ``second`` in ``tokens``."""

    def start(phrase: list[str]) -> int:
        for i in range(len(tokens) - len(phrase) + 1):
            if tokens[i : i + len(phrase)] == phrase:
                return i
        return -1

    a, b = start(first), start(second)
    return a >= 0 and b >= 0 and a < b


class Website(Family):
    """ "Go to Reddit", "Open Reddit", "What's on Reddit today", "What's the top post on reddit?".

    Params: ``site`` (a domain such as "reddit.com"). Success: Chrome in front on any page of
    that site (its front page shows what is on it, including the top post).
    """

    name = "website"
    _go = re.compile(r"^(?:go\s+to|visit|browse)\s+(?:the\s+)?(?P<s>.+?)(?:\s+website)?[.?!]*$", _I)
    _open = re.compile(r"^open\s+(?:the\s+)?(?P<s>.+?)(?:\s+website)?[.?!]*$", _I)
    _whats_on = re.compile(
        r"^what'?s\s+(?:new\s+)?on\s+(?P<s>[\w.\-]+)(?:\s+(?:today|now|right\s+now|this\s+"
        r"(?:week|month|morning|evening)))?[.?!]*$",
        _I,
    )
    _top = re.compile(
        r"^what'?s\s+the\s+top\s+(?:post|story|thread)s?\s+on\s+(?P<s>[\w.\-]+)\b", _I
    )

    def match(self, text: str) -> dict[str, str] | None:
        for pattern in (self._go, self._open, self._whats_on, self._top):
            m = pattern.match(text)
            if m is None:
                continue
            name = m.group("s").strip()
            low = name.lower()
            if is_system_app(name) or re.search(r"\bapp$", low) or low in ("my", "the"):
                return None
            dotted = re.fullmatch(r"(?:www\.)?[a-z0-9\-]+(?:\.[a-z0-9\-]+)+", low) is not None
            if pattern is self._open and not (dotted or low in WEB_FIRST):
                return None  # "Open Netflix" is an app
            if " " in low and low not in WEB_FIRST:
                return None
            return {"site": site_domain(name)}
        return None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Chrome shows a page of the site (site pages or a "web" page on its url)."""
        if state.app != CHROME or state.page not in _SITE_PAGES:
            return False
        return _on_site(state, params["site"])


def _on_site(state: SimState, site: str) -> bool:
    if state.page == "web":
        url = state.param("url").lower()
        return re.search(r"(?:^|[/.])" + re.escape(site) + r"(?:$|[/:?#])", url) is not None
    return state.param("site").lower().removeprefix("www.") == site


class ShopSearch(Family):
    """Shopping questions about one shop: "Find a nice sofa on eBay", "Search for X on Sephora".

    Params: ``site`` ("ebay.com"), ``query`` (the item to search, e.g. "iPhone 8") and
    ``terms``. Success: Chrome on that site's results (or a product page reached from them) for
    a query containing the item's key terms; or, for a site without its own search, a Google
    results page whose query names both the item and the shop ("blush sephora").
    """

    name = "shop_search"
    _re = re.compile(r"^(?P<body>.+?)\s+on\s+(?P<shop>[A-Za-z][\w.\-]*)[.?!]*$", _I)
    _noise = re.compile(
        r"^(?:what\s+does|what'?s\s+the\s+price\s+of|how\s+much\s+does|what\s+are|search\s+for|"
        r"find|show\s+me|look\s+for|buy)\s+|\s+(?:look\s+like|cost|price)$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        shop = m.group("shop")
        if is_system_app(shop) or shop.lower() in ("youtube", "reddit"):
            return None
        if not re.fullmatch(r"e[A-Z]\w+|[A-Z]\w+|[\w\-]+\.[a-z]{2,}", shop):
            return None  # shops are proper names ("eBay", "Sephora") or domains
        body = m.group("body")
        prev = None
        while prev != body:
            prev, body = body, self._noise.sub("", body).strip()
        query = content_phrase(re.sub(r"\bby\b", " ", body))
        terms = key_terms(query)
        if not terms:
            return None
        return {"site": site_domain(shop), "query": query, "terms": " ".join(terms)}

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: the site's results/product for the item, or Google results for item + shop."""
        if state.app != CHROME:
            return False
        query = state.param("query")
        if state.page == "serp":
            shop = stem(params["site"].split(".")[0])
            return covers(query, [*params["terms"].split(), shop])
        return (
            state.page in ("site_results", "site_product")
            and _on_site(state, params["site"])
            and covers(query, params["terms"])
        )


class WebShop(Family):
    """The WebShop set: 'Go to X.com', ', search for "q"', ', and select the first entry'.

    Params: ``site``, ``query`` ("" when no search is asked), ``step`` ("home"/"search"/
    "select"). Success, by step: any page of the site; its results page for the query (same
    words, case and punctuation aside); the product page of the first result (item "0") of
    that query.
    """

    name = "webshop"
    task_set = WEBSHOP
    _re = re.compile(
        r"^go\s+to\s+(?P<site>[\w\-]+(?:\.[\w\-]+)+)\s*"
        r"(?:,\s*search\s+for\s+(?P<qt>[\"'])(?P<q>.+?)(?P=qt)\s*"
        r"(?P<sel>,?\s*and\s+select\s+the\s+first\s+(?:entry|item|result))?)?[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        if m is None:
            return None
        query = (m.group("q") or "").strip()
        step = "select" if m.group("sel") else "search" if query else "home"
        return {"site": site_domain(m.group("site")), "query": query, "step": step}

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success per step: on the site / on its results for the query / on result 0."""
        if state.app != CHROME or not _on_site(state, params["site"]):
            return False
        step = params["step"]
        if step == "home":
            return state.page in _SITE_PAGES
        if not same_query(state.param("query"), params["query"]):
            return False
        if step == "search":
            return state.page == "site_results"
        return state.page == "site_product" and state.param("item") == "0"
