"""Simulated YouTube: a home feed, search with results for any query, and a video player.

Pages: ``home``, ``search_box`` (typing a query), ``search`` (query) and ``video`` (title, channel,
query). While a video page is in front and not paused, ``state_params()`` reports
``playing=<title>``. Results are derived from the query: the channel or artist named in it comes
first with its newest upload, so "Bruno Mars new video" leads with a Bruno Mars upload and
"latest video from GameSpot Reviews" with the "GameSpot Reviews" channel.
"""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, Screen, pick, stable_int
from distrl_tasks.sim.apps.packages import YOUTUBE
from distrl_tasks.sim.apps.text import clean, count_text, wrap
from distrl_tasks.sim.apps.youtube_videos import (
    AGES,
    FEED_CHANNELS,
    ROW_H,
    Video,
    channel_videos,
    search_videos,
    thumbnail,
    video_row,
    views_text,
)
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import (
    PAD,
    UP_ACTION,
    button,
    chip,
    color_for,
    list_item,
    search_field,
    up_button,
)

SEARCH_ID = f"{YOUTUBE}:id/search_edit_text"
RED = "#ff0000"
BAR_H = 150
PLAYER_H = 608  # 16:9 at full width


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
        channels = sorted(FEED_CHANNELS, key=lambda c: stable_int("feed", self.topic, c))
        for channel in channels:
            video = channel_videos(channel, 1, start=stable_int("n", self.topic, channel) % 3)[0]
            body.append(thumbnail((0, y, SCREEN_W, y + PLAYER_H), video))
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
        video = Video(title, channel, "", views_text(title))
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
                text=f"{video.views} · {pick(AGES, 'age', title)}",
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
