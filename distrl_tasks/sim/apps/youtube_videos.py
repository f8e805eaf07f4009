"""YouTube's videos: a channel for every name, its newest uploads, search results, list rows.

Titles, ages and view counts follow from the channel name through a stable hash, so a query
lists the same videos on every device. The channel or artist a query names comes first: "Bruno
Mars new video" leads with a Bruno Mars upload.
"""

from __future__ import annotations

from dataclasses import dataclass

from distrl_tasks.sim.app import make_action, pick, stable_int
from distrl_tasks.sim.apps.packages import YOUTUBE
from distrl_tasks.sim.apps.text import count_text, display_name, strip_words, wrap
from distrl_tasks.sim.ui import SCREEN_W, Bounds, Node, Style
from distrl_tasks.sim.widgets import PAD, color_for

ROW_H = 300  # height of a result row

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
FEED_CHANNELS = ("Taylor Swift", "GameSpot", "BBC News", "Ed Sheeran", "Dua Lipa", "GameTrailers")
_MUSIC_ARTISTS = ("Taylor Swift", "Ed Sheeran", "Dua Lipa", "The Weeknd", "Adele", "Coldplay")
# upload ages, newest first
AGES = ("2 hours ago", "1 day ago", "4 days ago", "2 weeks ago", "1 month ago", "5 months ago")


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


def views_text(title: str) -> str:
    """``"1.2M views"``: a stable view count for a video title."""
    return count_text(20_000 + stable_int("views", title) % 90_000_000) + " views"


def channel_videos(channel: str, count: int, start: int = 0) -> list[Video]:
    """The newest ``count`` uploads of ``channel`` (newest first)."""
    titles = [
        (_title(channel, i), AGES[min(i, len(AGES) - 1)]) for i in range(start, start + count)
    ]
    return [Video(title, channel, age, views_text(title)) for title, age in titles]


def search_videos(query: str) -> list[Video]:
    """Results for ``query``: the named channel's newest uploads, mixed with videos about it."""
    entity = entity_of(query)
    if not entity or entity.lower() in ("music", "songs", "song", "some music", "a song"):
        return [channel_videos(artist, 1)[0] for artist in _MUSIC_ARTISTS]
    own = channel_videos(entity, 4)
    about = [
        Video(
            f"{entity} reaction - first listen", _OTHERS[0], "3 days ago", views_text(entity + "r")
        ),
        Video(f"Top 10 {entity} moments", _OTHERS[1], "2 weeks ago", views_text(entity + "t")),
        Video(f"{entity} interview: the full story", _OTHERS[2], "1 month ago", views_text(entity)),
    ]
    return [own[0], own[1], about[0], own[2], about[1], own[3], about[2]]


def thumbnail(bounds: Bounds, video: Video) -> Node:
    """A video thumbnail: the channel name on a stable color, with the duration in a corner."""
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
    row.add(thumbnail((PAD, y + 20, PAD + 460, y + 280), video))
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
