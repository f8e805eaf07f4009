"""URL handling and the sites that are not shops: reddit, Google's home page, any other domain.

:func:`resolve` turns what a user typed into the address bar into a Chrome page:

- a shop domain -> ``site_home`` (or ``site_results`` for a shop search URL), see ``shops``
- ``reddit.com`` -> ``site_home`` with ``site="reddit.com"`` (top posts); its search box gives
  ``site_results`` with the matching posts; a post opens ``web``
- ``google.com/search?q=...`` -> ``serp``; any other page (``google.com`` too) -> ``web`` with
  params ``url`` (normalized ``https://host/path``) and ``title``
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote_plus, urlsplit

from distrl_tasks.sim.app import make_action, pick, shuffled, stable_int
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import SERP_SEARCH_ID, SITE_SEARCH_ID, Ctx
from distrl_tasks.sim.web.shops import SHOPS, parse_shop_url, product_url, search_url
from distrl_tasks.sim.web.text import smart_title
from distrl_tasks.sim.web.widgets import Column, google_search, input_box, text_at

REDDIT = "reddit.com"
_DOMAIN = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(:\d+)?([/?#].*)?$", re.IGNORECASE)
_KNOWN_NAMES = {
    "wikipedia.org": "Wikipedia",
    "youtube.com": "YouTube",
    "nytimes.com": "The New York Times",
    "bbc.com": "BBC",
    "cnn.com": "CNN",
    "weather.com": "The Weather Channel",
    "tripadvisor.com": "Tripadvisor",
    "timeanddate.com": "timeanddate.com",
    "xe.com": "Xe",
    "reddit.com": "Reddit",
    "google.com": "Google",
    "amazon.com": "Amazon",
    "yelp.com": "Yelp",
}
_SUBREDDITS = (
    "news",
    "worldnews",
    "technology",
    "pics",
    "science",
    "gaming",
    "space",
    "todayilearned",
    "movies",
    "aww",
)
_POST_TEMPLATES = (
    "TIL {t} has a surprisingly long history",
    "What is your unpopular opinion about {t}?",
    "I finally tried {t} and here is what happened",
    "{T}: a thread for everything this week",
    "Scientists publish new findings about {t}",
    "My grandfather's collection of {t} photos",
    "Is {t} worth it in 2020? Honest answers please",
    "The best {t} moments of the year",
)
_TOP_TOPICS = (
    "the moon landing",
    "mechanical keyboards",
    "sourdough bread",
    "the Mars rover",
    "retro games",
    "national parks",
    "coffee",
    "city skylines",
    "old maps",
    "cats",
)


def looks_like_url(text: str) -> bool:
    """True for ``ebay.com``, ``www.newegg.com``, ``https://bestbuy.com/...``; False for words."""
    t = text.strip()
    if not t or any(c.isspace() for c in t):
        return False
    if re.match(r"^[a-z][a-z0-9+.-]*://", t, re.IGNORECASE):
        return True
    return bool(_DOMAIN.match(t))


def canonical_host(host: str) -> str:
    """Lower-case host without ``www.``/``m.``/``old.`` (``www.eBay.com`` -> ``ebay.com``)."""
    host = host.lower().split(":")[0].rstrip(".")
    for prefix in ("www.", "m.", "old.", "en."):
        if host.startswith(prefix) and host.count(".") >= 2:
            host = host[len(prefix) :]
    return host


def site_name(host: str) -> str:
    """A display name for a host: known brands, else the capitalized second-level label."""
    host = canonical_host(host)
    if host in SHOPS:
        return SHOPS[host].name
    if host in _KNOWN_NAMES:
        return _KNOWN_NAMES[host]
    labels = host.split(".")
    core = labels[-2] if len(labels) >= 2 else labels[0]
    return core.replace("-", " ").title()


def resolve(text: str) -> tuple[str, dict[str, str]]:
    """The page a typed URL leads to, as ``(page_name, params)``.

    Raises:
        ValueError: if ``text`` does not look like a URL (callers search for it instead).
    """
    if not looks_like_url(text):
        raise ValueError(f"not a URL: {text!r}")
    t = text.strip()
    parts = urlsplit(t if "://" in t else "https://" + t)
    host = canonical_host(parts.hostname or "")
    path = parts.path or "/"
    if host in SHOPS:
        return parse_shop_url(host, path, parts.query)
    if host == REDDIT:
        terms = parse_qs(parts.query).get("q", [""])[0].strip()
        if path.rstrip("/") == "/search" and terms:
            return "site_results", {"site": REDDIT, "query": terms}
        return "site_home", {"site": REDDIT}
    if host == "google.com" and path.rstrip("/") == "/search":
        terms = parse_qs(parts.query).get("q", [""])[0].strip()
        if terms:
            return "serp", {"query": terms}
    url = f"https://{parts.hostname.lower() if parts.hostname else host}{path}"
    if parts.query:
        url += "?" + parts.query
    return "web", {"url": url, "title": site_name(host)}


def serp_url(query: str) -> str:
    return f"https://www.google.com/search?q={quote_plus(query)}"


def page_url(name: str, params: dict[str, str]) -> str:
    """The URL Chrome shows for a web page (``""`` for pages that are not web pages)."""
    site, query = params.get("site", ""), params.get("query", "")
    if name == "serp":
        return serp_url(query)
    if name == "web":
        return params.get("url", "")
    if site == REDDIT:
        if name == "site_results":
            return f"https://www.reddit.com/search/?q={quote_plus(query)}"
        return "https://www.reddit.com/"
    if site in SHOPS:
        if name == "site_results":
            return search_url(site, query)
        if name == "site_product":
            return product_url(site, query, int(params.get("item", "0") or 0))
        return f"https://www.{site}/"
    return ""


def display_url(url: str) -> str:
    """What the address bar shows when not editing: the host without ``www.``."""
    parts = urlsplit(url)
    return canonical_host(parts.hostname or "") if parts.hostname else url


# ----- reddit ------------------------------------------------------------------------------
def reddit_posts(query: str = "", n: int = 10) -> list[tuple[str, str, str]]:
    """``(subreddit, title, post_url)`` of the top posts, or of posts matching ``query``."""
    posts = []
    topics = [query.strip()] * n if query.strip() else shuffled(_TOP_TOPICS, "reddit-top")
    for i in range(n):
        topic = topics[i % len(topics)]
        key = (query.lower(), str(i))
        template = pick(_POST_TEMPLATES, "post", *key)
        title = template.format(t=topic, T=topic[:1].upper() + topic[1:])
        sub = pick(_SUBREDDITS, "sub", *key)
        pid = format(stable_int("pid", *key) % 36**6, "x")
        posts.append((sub, title, f"https://www.reddit.com/r/{sub}/comments/{pid}/"))
    return posts


def reddit_body(ctx: Ctx, query: str = "") -> list[Node]:
    """reddit.com: header with search, then top posts (or search results for ``query``)."""
    y = ctx.top
    col = Column(y)
    bar = col.add(
        Node(cls="android.view.View", bounds=(0, y, SCREEN_W, y + 280), style=Style(bg="#ffffff"))
    )
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(40, y + 20, 500, y + 120),
            text="reddit",
            content_desc="Reddit home",
            style=Style(fg="#ff4500", size=64, bold=True, icon="r", icon_bg="#ff4500"),
        ),
        *input_box(
            ctx.value(SITE_SEARCH_ID),
            ctx.focused(SITE_SEARCH_ID),
            SITE_SEARCH_ID,
            "Search Reddit",
            (40, y + 140, SCREEN_W - 40, y + 260),
            bg="#f6f7f8",
        ),
    )
    col.gap(20)
    heading = f'Results for "{query.strip()}"' if query.strip() else "Popular posts · Top today"
    col.text(heading, size=40, bold=True, height=90)
    for i, (sub, title, url) in enumerate(reddit_posts(query)):
        top = col.y + 10
        votes = 200 + stable_int("votes", query.lower(), str(i)) % 40000
        comments = 10 + stable_int("comments", query.lower(), str(i)) % 3000
        card = Node(
            cls="android.view.ViewGroup",
            bounds=(20, top, SCREEN_W - 20, top + 300),
            content_desc=title,
            clickable=True,
            action="open:" + make_action("web", url=url, title=title),
            style=Style(bg="#ffffff", border="#dadce0", radius=20),
        )
        card.add(
            _text(
                60,
                top + 20,
                f"r/{sub} · Posted by u/{pick(_USERS, 'user', title)} · {i + 2}h",
                32,
                "#787c7e",
            ),
            _text(60, top + 80, title, 40, "#1c1c1c", bold=True),
            _text(60, top + 200, f"{votes:,} upvotes · {comments:,} comments", 32, "#787c7e"),
        )
        col.add(card)
    return col.nodes


_USERS = ("quiet_otter", "mapmaker42", "blue_kettle", "pixelpilot", "late_night_dev", "ferngully")


# ----- any other page -----------------------------------------------------------------------
def web_body(ctx: Ctx, url: str, title: str) -> list[Node]:
    """A readable page for any URL: Google's home, a video page, or an article."""
    host = canonical_host(urlsplit(url).hostname or "")
    if host == "google.com" and urlsplit(url).path.rstrip("/") in ("", "/webhp"):
        return google_home_body(ctx)
    name = site_name(host)
    color = pick(("#1a73e8", "#c5221f", "#188038", "#a142f4", "#e37400", "#00796b"), host)
    if host == REDDIT:
        color = "#ff4500"
    col = Column(ctx.top)
    col.add(
        Node(
            cls="android.widget.TextView",
            bounds=(0, ctx.top, SCREEN_W, ctx.top + 150),
            text=name,
            style=Style(bg=color, fg="#ffffff", size=50, bold=True, icon=name, icon_bg="#00000040"),
        )
    )
    col.gap(40)
    col.paragraph(title or name, size=54, fg="#202124", lines=4)
    col.gap(10)
    if host == "youtube.com":
        col.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(0, col.y, SCREEN_W, col.y + 610),
                content_desc=f"Video player: {title}",
                text="Playing",
                style=Style(bg="#000000", fg="#ffffff", size=48, align="center"),
            )
        )
        col.gap(20)
    author = pick(("Staff writer", "Alex Morgan", "Priya Shah", "Sam Lee", "J. Rivera"), url)
    col.text(f"By {author} · Nov 21, 2020 · {3 + stable_int(url) % 9} min read", fg="#5f6368")
    col.gap(20)
    subject = title or name
    for i, sentence in enumerate(_ARTICLE):
        col.paragraph(sentence.format(s=subject, site=name), size=40, fg="#202124", lines=6)
        col.gap(30 if i % 2 else 10)
    return col.nodes


_ARTICLE = (
    "{s}. This page from {site} collects what you need to know, updated regularly by our team.",
    "Here is an overview of the key facts, a short history and answers to the questions "
    "readers ask most often, with links to sources for further reading.",
    "Experts we spoke with recommend comparing several sources; details can change over time, "
    "so check the date at the top of this page.",
    "Related coverage: more stories, guides and reviews about {s} are listed below.",
)


def google_home_body(ctx: Ctx) -> list[Node]:
    """www.google.com: the logo and the search box (it searches like the results page box)."""
    col = Column(ctx.top + 160)
    google_search(
        col, ctx, SERP_SEARCH_ID, "Search Google", logo=150, gap=60, margin=60, height=140
    )
    col.gap(40)
    col.text("Google offered in: Español  Français  Deutsch", size=34, fg="#5f6368", align="center")
    return col.nodes


def site_results_target(site: str, query: str) -> tuple[str, dict[str, str]]:
    """The page a site search box submits to (shops and reddit)."""
    if site != REDDIT and site not in SHOPS:
        raise ValueError(f"site {site!r} has no search box")
    return "site_results", {"site": site, "query": " ".join(query.split())}


def result_title_for(host: str, subject: str) -> str:
    """A plausible page title on ``host`` about ``subject`` (for Google result links)."""
    name = site_name(host)
    return pick(
        (
            f"{smart_title(subject)} - {name}",
            f"{name}: {smart_title(subject)}",
            f"{smart_title(subject)} | {name}",
        ),
        "title",
        host,
        subject,
    )


def _text(x: int, y: int, text: str, size: int, fg: str, bold: bool = False) -> Node:
    return text_at(x, y, text, size, fg, bold, x2=SCREEN_W - 60, spacing=1.7)
