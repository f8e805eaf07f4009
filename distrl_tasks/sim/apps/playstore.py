"""Simulated Google Play Store: search any app name, open its listing, install/uninstall/open it.

Pages (see :mod:`distrl_tasks.sim.state`): ``home``, ``search`` (query), ``app`` (app = label).
Listings exist for every name: the catalog below gives well-known apps their real spelling and
category, and any other name gets a deterministic made-up listing.
"""

from __future__ import annotations

from dataclasses import replace

from distrl_tasks.sim.app import App, Page, Screen, make_action, pick, seeded, stable_int
from distrl_tasks.sim.apps.launcher import open_installed_app
from distrl_tasks.sim.apps.packages import PLAY_STORE
from distrl_tasks.sim.apps.text import clean, count_text, display_name, strip_words, wrap
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import (
    PAD,
    UP_ACTION,
    button,
    chip,
    color_for,
    list_item,
    search_field,
    section_header,
    up_button,
)

SEARCH_ID = f"{PLAY_STORE}:id/search_bar"
GREEN = "#01875f"
RESULTS = 8  # listings on a results page
HOME_TABS = ("For you", "Top charts", "Kids", "Categories")

# label -> (developer, category) for apps people commonly search for
CATALOG: dict[str, tuple[str, str]] = {
    "Pandora": ("Pandora", "Music & Audio"),
    "Spotify": ("Spotify AB", "Music & Audio"),
    "SoundCloud": ("SoundCloud", "Music & Audio"),
    "Shazam": ("Apple, Inc.", "Music & Audio"),
    "Amazon Music": ("Amazon Mobile LLC", "Music & Audio"),
    "Amazon Prime Music": ("Amazon Mobile LLC", "Music & Audio"),
    "Facebook": ("Meta Platforms, Inc.", "Social"),
    "Instagram": ("Instagram", "Social"),
    "Twitter": ("Twitter, Inc.", "News & Magazines"),
    "Reddit": ("reddit Inc.", "Social"),
    "Snapchat": ("Snap Inc", "Communication"),
    "WhatsApp": ("WhatsApp LLC", "Communication"),
    "Messenger": ("Meta Platforms, Inc.", "Communication"),
    "TikTok": ("TikTok Pte. Ltd.", "Social"),
    "Pinterest": ("Pinterest", "Lifestyle"),
    "CNN": ("CNN", "News & Magazines"),
    "BBC News": ("BBC Media App Technologies", "News & Magazines"),
    "Google News": ("Google LLC", "News & Magazines"),
    "Yahoo": ("Yahoo", "News & Magazines"),
    "ESPN": ("ESPN", "Sports"),
    "Wikipedia": ("Wikimedia Foundation", "Books & Reference"),
    "Weather": ("Weather Forecast Studio", "Weather"),
    "AccuWeather": ("AccuWeather", "Weather"),
    "eBay": ("eBay Mobile", "Shopping"),
    "Amazon Shopping": ("Amazon Mobile LLC", "Shopping"),
    "Walmart": ("Walmart", "Shopping"),
    "Target": ("Target Corporation", "Shopping"),
    "Uber": ("Uber Technologies, Inc.", "Maps & Navigation"),
    "Lyft": ("Lyft, Inc.", "Maps & Navigation"),
    "Waze": ("Waze", "Maps & Navigation"),
    "Yelp": ("Yelp Inc.", "Food & Drink"),
    "Starbucks": ("Starbucks Coffee Company", "Food & Drink"),
    "DoorDash": ("DoorDash", "Food & Drink"),
    "Netflix": ("Netflix, Inc.", "Entertainment"),
    "Amazon Prime Video": ("Amazon Mobile LLC", "Entertainment"),
    "Google Play Movies": ("Google LLC", "Entertainment"),
    "Amazon Alexa": ("Amazon Mobile LLC", "Lifestyle"),
    "Google": ("Google LLC", "Tools"),
    "Google Play Books": ("Google LLC", "Books & Reference"),
    "Calendar": ("Google LLC", "Productivity"),
    "Zoom": ("zoom.us", "Business"),
    "Duolingo": ("Duolingo", "Education"),
    "Airbnb": ("Airbnb", "Travel & Local"),
    "Expedia": ("Expedia, Inc.", "Travel & Local"),
    "PayPal": ("PayPal Mobile", "Finance"),
    "Venmo": ("PayPal, Inc.", "Finance"),
}
_KEYWORD_CATEGORY = (
    ("news", "News & Magazines"),
    ("weather", "Weather"),
    ("music", "Music & Audio"),
    ("radio", "Music & Audio"),
    ("game", "Games"),
    ("shop", "Shopping"),
    ("bank", "Finance"),
    ("pay", "Finance"),
    ("food", "Food & Drink"),
    ("map", "Maps & Navigation"),
    ("photo", "Photography"),
    ("video", "Video Players & Editors"),
    ("fit", "Health & Fitness"),
)
_CATEGORIES = sorted({c for _, c in CATALOG.values()})
_CATEGORY_TEXT = {
    "Music & Audio": "stream the songs, artists and podcasts you love",
    "Social": "share moments and keep up with friends",
    "Communication": "message and call the people who matter",
    "News & Magazines": "follow breaking news and the stories you care about",
    "Shopping": "find great deals and track your orders",
    "Maps & Navigation": "get where you are going, fast",
    "Food & Drink": "discover places to eat and order ahead",
    "Entertainment": "watch movies and shows anywhere",
    "Weather": "check hourly and 10-day forecasts",
}


def normalize_query(text: str) -> str:
    """What a Play Store search is about: ``"the Pandora app"`` -> ``"Pandora"``."""
    core = strip_words(text, ("the", "app", "apps", "application", "install", "download"))
    return core or clean(text)


def best_match(query: str) -> str:
    """The listing a search ranks first: the catalog spelling of the name, else the name itself."""
    core = normalize_query(query)
    for label in CATALOG:
        if label.lower() == core.lower():
            return label
    return display_name(core)


def category_of(label: str) -> str:
    if label in CATALOG:
        return CATALOG[label][1]
    low = label.lower()
    for word, category in _KEYWORD_CATEGORY:
        if word in low:
            return category
    return pick(_CATEGORIES, "category", low)


def developer_of(label: str) -> str:
    if label in CATALOG:
        return CATALOG[label][0]
    return pick((f"{label} Inc.", f"{label} Labs", f"{label} Mobile", f"{label} LLC"), "dev", label)


def search_results(query: str) -> list[str]:
    """Listings for ``query``: the best match, then apps sharing its words, then its category."""
    top = best_match(query)
    words = [w for w in top.lower().split() if len(w) > 2]
    rest = [lab for lab in CATALOG if lab != top]
    rest.sort(key=lambda lab: stable_int("rank", top.lower(), lab))
    sharing = [lab for lab in rest if any(w in lab.lower().split() for w in words)]
    same_cat = [lab for lab in rest if category_of(lab) == category_of(top)]
    ordered: list[str] = [top]
    for lab in sharing + same_cat + rest:
        if lab not in ordered:
            ordered.append(lab)
    return ordered[:RESULTS]


def rating_of(label: str) -> float:
    return round(3.6 + (stable_int("rating", label) % 13) / 10, 1)


def _downloads(label: str) -> str:
    return pick(("1M+", "10M+", "50M+", "100M+", "500M+", "1B+"), "downloads", label)


def _outlined(node: Node) -> Node:
    node.style = replace(node.style, border="#dadce0")
    return node


class PlayStore(App):
    """Google Play: search, listings, install/uninstall."""

    package = PLAY_STORE
    label = "Play Store"
    color = GREEN

    def reset(self) -> None:
        super().reset()
        self.tab = HOME_TABS[0]

    def build(self, page: Page) -> Screen:
        if page.name == "search":
            return self._search(page.get("query"))
        if page.name == "app":
            return self._listing(page.get("app"))
        return self._home()

    # ----- pages -------------------------------------------------------------------------
    def _search_header(self, with_up: bool = False) -> list[Node]:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 176),
            style=Style(bg="#ffffff"),
        )
        if with_up:
            bar.add(up_button(CONTENT_TOP + 8, CONTENT_TOP + 168))
        x1 = 150 if with_up else PAD
        field = search_field(self, SEARCH_ID, "Search for apps & games", y=CONTENT_TOP + 24, x1=x1)
        field.style = Style(bg="#f1f3f4", size=44, radius=64, icon="@search", icon_bg="#5f6368")
        return [bar, field]

    def _home(self) -> Screen:
        header = self._search_header()
        body: list[Node] = []
        y = CONTENT_TOP + 200
        for i, name in enumerate(HOME_TABS):
            x = PAD + i * 250
            body.append(
                chip((x, y, x + 230, y + 96), name, f"tab:{name}", selected=name == self.tab)
            )
        y += 140
        heading = "Recommended for you" if self.tab == HOME_TABS[0] else self.tab
        body.append(section_header(y, heading, GREEN))
        y += 110
        labels = sorted(CATALOG, key=lambda lab: stable_int("home", self.tab, lab))[:7]
        for label in labels:
            body.append(self._app_row(y, label))
            y += 190
        return Screen(header=header, body=body)

    def _app_row(self, y: int, label: str) -> Node:
        mark = "  ·  Installed" if label in self.phone.installed else ""
        return list_item(
            y,
            label,
            f"{developer_of(label)}  ·  {rating_of(label)} stars{mark}",
            action=f"open:{make_action('app', app=label)}",
            icon=label,
            icon_bg=color_for(label),
            height=180,
        )

    def _search(self, query: str) -> Screen:
        header = self._search_header(with_up=True)
        body: list[Node] = []
        y = CONTENT_TOP + 200
        for label in search_results(query):
            body.append(self._app_row(y, label))
            y += 190
        return Screen(header=header, body=body)

    def _listing(self, label: str) -> Screen:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 150),
            style=Style(bg="#ffffff"),
        )
        bar.add(up_button(CONTENT_TOP, CONTENT_TOP + 150))
        top = CONTENT_TOP + 170
        body: list[Node] = [
            Node(
                cls="android.widget.ImageView",
                bounds=(PAD, top, PAD + 220, top + 220),
                text=label[:1].upper(),
                content_desc=f"{label} icon",
                style=Style(bg=color_for(label), radius=48, fg="#ffffff", size=120, align="center"),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD + 260, top + 10, SCREEN_W - PAD, top + 110),
                text=label,
                resource_id=f"{PLAY_STORE}:id/title",
                style=Style(size=60, bold=True),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD + 260, top + 110, SCREEN_W - PAD, top + 180),
                text=developer_of(label),
                style=Style(size=40, fg=GREEN, bold=True),
            ),
        ]
        y = top + 260
        reviews = count_text(1000 + stable_int("reviews", label) % 40_000_000)
        stats = (
            (f"{rating_of(label)} stars", f"{reviews} reviews"),
            (_downloads(label), "Downloads"),
            (pick(("Everyone", "Teen", "Everyone 10+"), "pegi", label), "Rated"),
        )
        for i, (value, caption) in enumerate(stats):
            x = PAD + i * 333
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(x, y, x + 320, y + 70),
                    text=value,
                    style=Style(size=42, bold=True, align="center"),
                )
            )
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(x, y + 70, x + 320, y + 130),
                    text=caption,
                    style=Style(size=34, fg="#5f6368", align="center"),
                )
            )
        y += 180
        body.extend(self._buttons(label, y))
        y += 180
        rng = seeded("shots", label)
        for i in range(3):
            x = PAD + i * 340
            shade = f"#{rng.randrange(0xC0, 0xF0):02x}{rng.randrange(0xC0, 0xF0):02x}ee"
            body.append(
                Node(
                    cls="android.widget.ImageView",
                    bounds=(x, y, x + 310, y + 560),
                    content_desc=f"Screenshot {i + 1}",
                    style=Style(bg=shade, radius=24),
                )
            )
        y += 600
        body.append(section_header(y, "About this app", "#202124"))
        what = _CATEGORY_TEXT.get(category_of(label), "get more done every day")
        lines = (
            *wrap(f"With {label} you can {what}.", 44),
            f"Category: {category_of(label)}",
            f"Offered by {developer_of(label)}",
        )
        for line in lines:
            y += 90
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 90),
                    text=line,
                    resource_id=f"{PLAY_STORE}:id/description",
                    style=Style(size=38, fg="#3c4043"),
                )
            )
        return Screen(header=[bar], body=body, loads=True)

    def _buttons(self, label: str, y: int) -> list[Node]:
        wide = (PAD, y, SCREEN_W - PAD, y + 130)
        if label not in self.phone.installed:
            return [
                button(
                    wide, "Install", f"install:{label}", bg=GREEN, rid=f"{PLAY_STORE}:id/install"
                )
            ]
        open_btn = f"launch:{label}"
        app = self.phone.app_by_label(label)
        if app is not None and app.system:
            return [button(wide, "Open", open_btn, bg=GREEN)]
        half = (SCREEN_W - 2 * PAD - 40) // 2
        return [
            _outlined(
                button(
                    (PAD, y, PAD + half, y + 130),
                    "Uninstall",
                    f"uninstall:{label}",
                    bg="#ffffff",
                    fg=GREEN,
                )
            ),
            button((SCREEN_W - PAD - half, y, SCREEN_W - PAD, y + 130), "Open", open_btn, bg=GREEN),
        ]

    # ----- events ------------------------------------------------------------------------
    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if action == UP_ACTION:
            self.phone.back()
        elif kind == "install" and arg:
            self.phone.installed.add(arg)
            self.phone.notifications[arg] = True
        elif kind == "uninstall" and arg:
            self.phone.installed.discard(arg)
            self.phone.notifications.pop(arg, None)
        elif kind == "launch" and arg:
            open_installed_app(self.phone, arg)
        elif kind == "tab" and arg in HOME_TABS:
            self.tab = arg
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        query = clean(text)
        if rid != SEARCH_ID or not query:
            return
        self.set_field(SEARCH_ID, query)
        self.show_results("search", query=query)

    def back(self) -> bool:
        moved = super().back()
        if moved and self.page.name == "home":
            self.set_field(SEARCH_ID, "")
        elif moved and self.page.name == "search":
            self.set_field(SEARCH_ID, self.page.get("query"))
        return moved
