"""Simulated YouTube: a home feed, search with results for any query, and a video player.

Pages: ``home``, ``search_box`` (typing a query), ``search`` (query) and ``video`` (title, channel,
query). While a video page is in front and not paused, ``state_params()`` reports
``playing=<title>``. Results are derived from the query: the channel or artist named in it comes
first with its newest upload, so "Bruno Mars new video" leads with a Bruno Mars upload and
"latest video from GameSpot Reviews" with the "GameSpot Reviews" channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from distrl_tasks.sim.app import PAD, App, Page, Screen, button, make_action, search_field
from distrl_tasks.sim.apps import YOUTUBE
from distrl_tasks.sim.apps.content import (
    UP_ACTION,
    chip,
    clean,
    color_for,
    count_text,
    display_name,
    list_item,
    pick,
    stable_int,
    strip_words,
    up_button,
    wrap,
)
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style

SEARCH_ID = f"{YOUTUBE}:id/search_edit_text"
RED = "#ff0000"
BAR_H = 150
PLAYER_H = 608  # 16:9 at full width
ROW_H = 300

# Words that say how to find a video rather than which one.
_FILLER = (
    "play",
    "watch",
    "show me",
    "what's",
    "whats",
    "what is",
    "the",
    "a",
    "some",
    "new",
    "newest",
    "latest",
    "recent",
    "most recent",
    "video",
    "videos",
    "music video",
    "official",
    "official video",
    "from",
    "by",
    "channel",
    "on youtube",
    "youtube",
    "on",
)
_SONG_A = ("Golden", "Midnight", "Electric", "Paper", "Summer", "Neon", "Wild", "Silver", "Broken")
_SONG_B = ("Hearts", "Drive", "Skies", "Dreams", "Lights", "Roads", "Fire", "Waves", "Echoes")
_GAMES = ("Starfall", "Iron Legion", "Neon Drift", "Hollow Crown", "Skyforge", "Last Harbor")
_NEWS = (
    "Markets rally as inflation cools",
    "What to know about the election",
    "Inside the race to build better batteries",
    "Storm season: how cities are preparing",
    "The week in review",
    "Why housing costs keep rising",
)
_OTHERS = ("Music Reacts", "Top Tens Daily", "Late Night Live", "Pop Culture Today")
_FEED_CHANNELS = ("Taylor Swift", "GameSpot", "BBC News", "Ed Sheeran", "Dua Lipa", "GameTrailers")
_MUSIC_ARTISTS = ("Taylor Swift", "Ed Sheeran", "Dua Lipa", "The Weeknd", "Adele", "Coldplay")
_AGES = ("2 hours ago", "1 day ago", "4 days ago", "2 weeks ago", "1 month ago", "5 months ago")


@dataclass(frozen=True)
class Video:
    """One video as listed: title, channel, how old it is and its view count."""

    title: str
    channel: str
    age: str
    views: str

    def action(self, query: str) -> str:
        return "open:" + make_action("video", title=self.title, channel=self.channel, query=query)


def entity_of(query: str) -> str:
    """The channel, artist or topic a query names: ``"the new Bruno Mars video"`` -> Bruno Mars."""
    return display_name(strip_words(query, _FILLER))


def _kind(channel: str) -> str:
    low = channel.lower()
    if any(w in low for w in ("news", "post", "times", "journal", "bbc", "cnn", "report")):
        return "news"
    if "game" in low:
        return "gaming"
    return "music"


def _title(channel: str, i: int) -> str:
    kind = _kind(channel)
    if kind == "news":
        return f"{pick(_NEWS, 'news', channel, str(i))} | {channel}"
    if kind == "gaming":
        game = pick(_GAMES, "game", channel, str(i))
        return f"{game} {('Review', 'Official Trailer', 'Gameplay Walkthrough', 'Preview')[i % 4]}"
    song = f"{pick(_SONG_A, 'a', channel, str(i))} {pick(_SONG_B, 'b', channel, str(i))}"
    style = ("Official Music Video", "Official Video", "Lyric Video", "Live Performance")[i % 4]
    return f"{channel} - {song} ({style})"


def _views(title: str) -> str:
    return count_text(20_000 + stable_int("views", title) % 90_000_000) + " views"


def channel_videos(channel: str, count: int, start: int = 0) -> list[Video]:
    """The newest ``count`` uploads of ``channel`` (newest first)."""
    titles = [
        (_title(channel, i), _AGES[min(i, len(_AGES) - 1)]) for i in range(start, start + count)
    ]
    return [Video(title, channel, age, _views(title)) for title, age in titles]


def search_videos(query: str) -> list[Video]:
    """Results for ``query``: the named channel's newest uploads, mixed with videos about it."""
    entity = entity_of(query)
    if not entity or entity.lower() in ("music", "songs", "song", "some music", "a song"):
        return [channel_videos(artist, 1)[0] for artist in _MUSIC_ARTISTS]
    own = channel_videos(entity, 4)
    about = [
        Video(f"{entity} reaction - first listen", _OTHERS[0], "3 days ago", _views(entity + "r")),
        Video(f"Top 10 {entity} moments", _OTHERS[1], "2 weeks ago", _views(entity + "t")),
        Video(f"{entity} interview: the full story", _OTHERS[2], "1 month ago", _views(entity)),
    ]
    return [own[0], own[1], about[0], own[2], about[1], own[3], about[2]]


def _thumbnail(bounds: tuple[int, int, int, int], video: Video) -> Node:
    _, _, x2, y2 = bounds
    thumb = Node(
        cls="android.widget.ImageView",
        bounds=bounds,
        style=Style(bg=color_for(video.title), radius=24),
    )
    minutes = 2 + stable_int("len", video.title) % 12
    thumb.add(
        Node(
            cls="android.widget.TextView",
            bounds=(bounds[0] + 20, bounds[1] + 20, x2 - 20, y2 - 70),
            text=video.channel.upper(),
            style=Style(
                fg="#ffffff", size=44 if x2 - bounds[0] > 600 else 30, bold=True, align="center"
            ),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(x2 - 130, y2 - 64, x2 - 12, y2 - 12),
            text=f"{minutes}:{stable_int('s', video.title) % 60:02d}",
            style=Style(bg="#000000", fg="#ffffff", size=30, radius=8, align="center"),
        ),
    )
    return thumb


def video_row(y: int, video: Video, query: str) -> Node:
    """A result row: thumbnail on the left, title, channel and views on the right."""
    row = Node(
        cls="android.view.ViewGroup",
        bounds=(0, y, SCREEN_W, y + ROW_H),
        content_desc=f"{video.title} - {video.channel} - {video.views} - {video.age} - play video",
        clickable=True,
        action=video.action(query),
    )
    row.add(_thumbnail((PAD, y + 20, PAD + 460, y + 280), video))
    tx = PAD + 490
    lines = wrap(video.title, 24)
    for i, line in enumerate(lines):
        row.add(
            Node(
                cls="android.widget.TextView",
                bounds=(tx, y + 24 + i * 60, SCREEN_W - PAD, y + 84 + i * 60),
                text=line,
                resource_id=f"{YOUTUBE}:id/title" if i == 0 else "",
                style=Style(size=38, fg="#0f0f0f"),
            )
        )
    row.add(
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 160, SCREEN_W - PAD, y + 210),
            text=video.channel,
            resource_id=f"{YOUTUBE}:id/channel",
            style=Style(size=32, fg="#606060"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 210, SCREEN_W - PAD, y + 260),
            text=f"{video.views} · {video.age}",
            style=Style(size=32, fg="#606060"),
        ),
    )
    return row


class YouTube(App):
    """YouTube with a searchable catalog that has a channel for every name."""

    package = YOUTUBE
    label = "YouTube"
    color = RED

    def reset(self) -> None:
        super().reset()
        self.paused = False
        self.topic = "All"
        self.subscribed: set[str] = set()
        self.reactions: set[tuple[str, str]] = set()  # (Like|Dislike|Save, video title)

    # ----- pages -------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        if page.name == "search_box":
            return self._search_box()
        if page.name == "search":
            return self._results(page.get("query"))
        if page.name == "video":
            return self._video(page)
        return self._home()

    def _home(self) -> Screen:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + BAR_H),
            style=Style(bg="#ffffff"),
        )
        bar.add(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP + 45, PAD + 100, CONTENT_TOP + 110),
                content_desc="YouTube",
                style=Style(bg=RED, radius=20),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD + 150, CONTENT_TOP, 600, CONTENT_TOP + BAR_H),
                text="YouTube",
                style=Style(size=56, bold=True, fg="#0f0f0f"),
            ),
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W - 180, CONTENT_TOP + 20, SCREEN_W - 40, CONTENT_TOP + 130),
                content_desc="Search",
                resource_id=f"{YOUTUBE}:id/menu_item_1",
                clickable=True,
                action="search_box",
                style=Style(icon="@search", icon_bg="#0f0f0f", size=50),
            ),
        )
        body: list[Node] = []
        y = CONTENT_TOP + BAR_H + 20
        for i, name in enumerate(("All", "Music", "Gaming", "News", "Live")):
            x = PAD + i * 200
            body.append(
                chip((x, y, x + 180, y + 90), name, f"topic:{name}", selected=name == self.topic)
            )
        y += 130
        channels = sorted(_FEED_CHANNELS, key=lambda c: stable_int("feed", self.topic, c))
        for channel in channels:
            video = channel_videos(channel, 1, start=stable_int("n", self.topic, channel) % 3)[0]
            body.append(_thumbnail((0, y, SCREEN_W, y + PLAYER_H), video))
            row = list_item(
                y + PLAYER_H,
                wrap(video.title, 40, 1)[0],
                f"{video.channel} · {video.views} · {video.age}",
                action=video.action(""),
                icon=video.channel,
                icon_bg=color_for(video.channel),
                height=180,
            )
            body.append(row)
            y += PLAYER_H + 220
        return Screen(header=[bar], body=body)

    def _query_header(self, editable: bool, query: str) -> list[Node]:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + BAR_H),
            style=Style(bg="#ffffff"),
        )
        bar.add(up_button(CONTENT_TOP, CONTENT_TOP + BAR_H, "#0f0f0f"))
        right = SCREEN_W - PAD - (130 if editable and self.field_text(SEARCH_ID) else 0)
        if editable:
            box = search_field(
                self, SEARCH_ID, "Search YouTube", y=CONTENT_TOP + 15, x1=160, x2=right, height=120
            )
            nodes = [bar, box]
            if self.field_text(SEARCH_ID):
                nodes.append(
                    Node(
                        cls="android.widget.ImageView",
                        bounds=(right + 10, CONTENT_TOP + 20, SCREEN_W - 20, CONTENT_TOP + 130),
                        text="X",
                        content_desc="Clear search query",
                        clickable=True,
                        action="clear",
                        style=Style(size=64, align="center", fg="#0f0f0f"),
                    )
                )
            return nodes
        box = Node(
            cls="android.widget.TextView",
            bounds=(160, CONTENT_TOP + 15, SCREEN_W - PAD, CONTENT_TOP + 135),
            text=query,
            resource_id=f"{YOUTUBE}:id/search_query",
            content_desc=f"Search YouTube: {query}",
            clickable=True,
            action="search_box",
            style=Style(bg="#f2f2f2", radius=60, size=44),
        )
        return [bar, box]

    def _search_box(self) -> Screen:
        header = self._query_header(True, "")
        typed = clean(self.field_text(SEARCH_ID))
        body: list[Node] = []
        if typed:
            y = CONTENT_TOP + BAR_H + 20
            for extra in ("", " official video", " live", " latest"):
                suggestion = typed + extra
                body.append(
                    list_item(
                        y,
                        suggestion.lower(),
                        action="suggest:" + suggestion,
                        icon="@search",
                        icon_bg="#606060",
                        height=140,
                    )
                )
                y += 140
        return Screen(header=header, body=body)

    def _results(self, query: str) -> Screen:
        header = self._query_header(False, query)
        body: list[Node] = []
        y = CONTENT_TOP + BAR_H + 10
        for video in search_videos(query):
            body.append(video_row(y, video, query))
            y += ROW_H + 10
        return Screen(header=header, body=body, loads=True)

    def _video(self, page: Page) -> Screen:
        title, channel, query = page.get("title"), page.get("channel"), page.get("query")
        video = Video(title, channel, "", _views(title))
        player = Node(
            cls="android.widget.FrameLayout",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + PLAYER_H),
            resource_id=f"{YOUTUBE}:id/player_view",
            content_desc=f"Video player: {title}",
            style=Style(bg="#000000"),
        )
        mid = CONTENT_TOP + PLAYER_H // 2
        played = 0.1 + (stable_int("pos", title) % 60) / 100
        player.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(120, CONTENT_TOP + 80, SCREEN_W - 120, CONTENT_TOP + PLAYER_H - 80),
                style=Style(bg=color_for(title), radius=12),
            ),
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W // 2 - 90, mid - 90, SCREEN_W // 2 + 90, mid + 90),
                text="Play" if self.paused else "II",
                content_desc="Play video" if self.paused else "Pause video",
                resource_id=f"{YOUTUBE}:id/player_control_play_pause_replay_button",
                clickable=True,
                action="toggle_play",
                style=Style(
                    bg="#3c4043", fg="#ffffff", radius=90, size=48, bold=True, align="center"
                ),
            ),
            Node(
                cls="android.widget.SeekBar",
                bounds=(
                    0,
                    CONTENT_TOP + PLAYER_H - 12,
                    round(SCREEN_W * played),
                    CONTENT_TOP + PLAYER_H,
                ),
                content_desc="Playback progress",
                style=Style(bg=RED),
            ),
        )
        body: list[Node] = []
        y = CONTENT_TOP + PLAYER_H + 30
        for i, line in enumerate(wrap(title, 34)):
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 70),
                    text=line,
                    resource_id=f"{YOUTUBE}:id/video_title" if i == 0 else "",
                    style=Style(size=46, bold=True, fg="#0f0f0f"),
                )
            )
            y += 70
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y, SCREEN_W - PAD, y + 60),
                text=f"{video.views} · {pick(_AGES, 'age', title)}",
                style=Style(size=34, fg="#606060"),
            )
        )
        y += 90
        subs = count_text(10_000 + stable_int("subs", channel) % 50_000_000) + " subscribers"
        body.append(
            list_item(
                y,
                channel,
                subs,
                icon=channel,
                icon_bg=color_for(channel),
                height=150,
                rid=f"{YOUTUBE}:id/channel_name",
            )
        )
        subscribed = channel in self.subscribed
        body.append(
            button(
                (SCREEN_W - PAD - 320, y + 25, SCREEN_W - PAD, y + 125),
                "Subscribed" if subscribed else "Subscribe",
                f"subscribe:{channel}",
                bg="#f2f2f2" if subscribed else "#0f0f0f",
                fg="#0f0f0f" if subscribed else "#ffffff",
            )
        )
        y += 170
        for i, name in enumerate(("Like", "Dislike", "Save")):
            x = PAD + i * 250
            on = (name, title) in self.reactions
            body.append(chip((x, y, x + 230, y + 90), name, f"react:{name}", selected=on))
        y += 140
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y, SCREEN_W - PAD, y + 80),
                text="Up next",
                style=Style(size=40, bold=True),
            )
        )
        y += 90
        for other in channel_videos(channel, 3, start=1 + stable_int("next", title) % 3):
            if other.title != title:
                body.append(video_row(y, other, query))
                y += ROW_H + 10
        return Screen(header=[player], body=body, loads=True)

    # ----- events ------------------------------------------------------------------------
    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if action == UP_ACTION:
            self.phone.back()
        elif action == "search_box":
            query = self.page.get("query") if self.page.name == "search" else ""
            self.set_field(SEARCH_ID, query)
            self.push("search_box")
            self.phone.focus = SEARCH_ID  # the keyboard comes up in the search box
        elif action == "clear":
            self.set_field(SEARCH_ID, "")
            self.phone.focus = SEARCH_ID
        elif kind == "suggest":
            self.on_submit(SEARCH_ID, arg)
        elif kind == "topic":
            self.topic = arg
        elif action == "toggle_play":
            self.paused = not self.paused
        elif kind == "subscribe":
            self.subscribed ^= {arg}
        elif kind == "react":
            self.reactions ^= {(arg, self.page.get("title"))}
        else:
            if action.startswith("open:video"):
                self.paused = False
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        query = clean(text)
        if rid != SEARCH_ID or not query:
            return
        self.paused = False
        if self.page.name == "search_box":
            self.replace("search", query=query)
        else:
            self.push("search", query=query)

    def state_params(self) -> dict[str, str]:
        if self.page.name == "video" and not self.paused:
            return {"playing": self.page.get("title")}
        return {}
