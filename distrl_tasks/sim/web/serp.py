"""Google search result pages for arbitrary queries.

The page (``serp_body``) shows the Google logo, a search box holding the query
(``com.android.chrome:id/serp_search``), tabs, the answer card for the query's kind (see
:mod:`~distrl_tasks.sim.web.intent` and :mod:`~distrl_tasks.sim.web.cards`) and organic results
whose titles are clickable (``com.android.chrome:id/result_link``). A result on a shop or reddit
opens that site; others open a ``web`` page. A query that names a site lists it first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distrl_tasks.sim.app import make_action, pick, shuffled, stable_int
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import RESULT_ID, SERP_SEARCH_ID, Ctx
from distrl_tasks.sim.web.cards import answer_card
from distrl_tasks.sim.web.intent import (
    LOCAL_CITY,
    SHOP_WORDS,
    Intent,
    drop_words,
    intent_for,
    mentioned_site,
)
from distrl_tasks.sim.web.shops import SHOPS, search_url
from distrl_tasks.sim.web.sites import REDDIT, result_title_for, site_results_target
from distrl_tasks.sim.web.text import smart_title
from distrl_tasks.sim.web.widgets import Column, google_search

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
            bare = drop_words(query.lower(), rf"{SHOP_WORDS}|reddit|\.com|go to|open|site")
            if host == REDDIT or not bare or (host == named and bare == ""):
                url = f"https://www.{host}/"
                title = f"{'Reddit - Dive into anything' if host == REDDIT else _shop_title(host)}"
                action = "open:" + make_action("site_home", site=host)
            else:
                wanted = intent.slots.get("product") or drop_words(
                    intent.subject, rf"{SHOP_WORDS}|\.com|on|at|from"
                )
                name, params = site_results_target(host, wanted or bare)
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


def serp_body(ctx: Ctx, query: str, kind: str = "", tab: str = "all") -> list[Node]:
    """The Google results page for ``query`` (``kind`` overrides the classified kind).

    ``tab`` is the highlighted tab ("all" unless the user picked News, Images, ...).
    """
    intent = intent_for(query, kind)
    col = Column(ctx.top + 10)
    google_search(col, ctx, SERP_SEARCH_ID, "Search Google", logo=72, gap=20, margin=40, height=130)
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
