"""YouTube Music: quick picks, playlists, search for any query and a now-playing screen."""

from __future__ import annotations

from urllib.parse import quote

from distrl_tasks.sim.app import App, Page, Screen, stable_bytes
from distrl_tasks.sim.apps.packages import MUSIC
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node
from distrl_tasks.sim.widgets import (
    PAD,
    PLAIN_BAR_H,
    TILE_COLORS,
    button,
    photo_tile,
    plain_app_bar,
    search_field,
    tile_color,
    two_line_row,
    view,
)


class Music(App):
    package = MUSIC
    label = "YouTube Music"
    color = "#ff0000"
    SEARCH_ID = f"{MUSIC}:id/search_edit_text"
    SONGS = (
        ("Blinding Lights", "The Weeknd"),
        ("Levitating", "Dua Lipa"),
        ("Watermelon Sugar", "Harry Styles"),
        ("Dynamite", "BTS"),
        ("Circles", "Post Malone"),
        ("Someone You Loved", "Lewis Capaldi"),
    )
    PLAYLISTS = ("Liked music", "Chill mix", "Workout", "Focus", "Road trip")
    ARTISTS = ("Nova Lane", "The Midnight Owls", "Kai Rivers", "Luna Park", "Echo Bay")

    def reset(self) -> None:
        super().reset()
        self.paused = False

    def songs_for(self, key: str) -> list[tuple[str, str]]:
        """Deterministic (title, artist) songs for a playlist name or a search query."""
        if not key.strip():
            raise ValueError("songs_for needs a non-empty playlist name or query")
        d, word = stable_bytes(key.strip().lower()), key.strip().title()
        forms = (
            word,
            f"{word} (Live)",
            f"Best of {word}",
            f"{word} Nights",
            f"{word} (Acoustic)",
            f"Lost in {word}",
        )
        return [
            (form, self.ARTISTS[(d[i] + i) % len(self.ARTISTS)]) for i, form in enumerate(forms)
        ]

    def on_tap(self, action: str) -> None:
        if action.startswith("play:"):
            title, _, artist = action[len("play:") :].partition("|")
            self.paused = False
            self.push_page(Page("playing", {"title": title, "artist": artist}))
        elif action == "toggle":
            self.paused = not self.paused
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        if rid == self.SEARCH_ID and text.strip():
            self.push("search", query=text.strip())

    def state_params(self) -> dict[str, str]:
        if self.page.name == "playing" and not self.paused:
            return {"playing": self.page.get("title")}
        return {}

    def build(self, page: Page) -> Screen:
        if page.name == "playing":
            return self._playing(page)
        if page.name == "playlist":
            songs, title = self.songs_for(page.get("playlist")), page.get("playlist")
        elif page.name == "search":
            songs, title = self.songs_for(page.get("query")), f'Results for "{page.get("query")}"'
        else:
            songs, title = list(self.SONGS), "Quick picks"
        body: list[Node] = []
        y = CONTENT_TOP + PLAIN_BAR_H + 20
        if page.name == "home":
            body.append(
                search_field(self, self.SEARCH_ID, "Search songs, artists", y=y, bg="#3c4043")
            )
            y += 160
            for i, name in enumerate(self.PLAYLISTS):
                body.append(
                    view(
                        (PAD + i * 200, y, PAD + i * 200 + 190, y + 190),
                        name,
                        cls="android.widget.Button",
                        desc=f"Playlist {name}",
                        action=f"open:playlist?playlist={quote(name)}",
                        bg=TILE_COLORS[i],
                        fg="#ffffff",
                        size=30,
                        align="center",
                        radius=20,
                    )
                )
            y += 230
        body.append(
            view((PAD, y, SCREEN_W - PAD, y + 100), title, size=48, bold=True, fg="#ffffff")
        )
        y += 110
        for song, artist in songs:
            color = tile_color(song)
            body.append(two_line_row(y, song, artist, f"play:{song}|{artist}", song, color, True))
            y += 190
        backdrop = view(
            (0, CONTENT_TOP, SCREEN_W, max(y, CONTENT_BOTTOM - 40)),
            cls="android.view.View",
            bg="#030303",
        )
        return Screen(
            header=[plain_app_bar("YouTube Music", "#030303", "#ffffff")], body=[backdrop, *body]
        )

    def _playing(self, page: Page) -> Screen:
        title, artist, top = page.get("title"), page.get("artist"), CONTENT_TOP
        label = "Play" if self.paused else "Pause"
        body = [
            view((0, top, SCREEN_W, CONTENT_BOTTOM - 40), cls="android.view.View", bg="#202124"),
            photo_tile(
                (120, top + 200, SCREEN_W - 120, top + 1040), title, None, f"Album art for {title}"
            ),
            view(
                (PAD, top + 1100, SCREEN_W - PAD, top + 1200),
                title,
                rid=f"{MUSIC}:id/title",
                size=58,
                bold=True,
                fg="#ffffff",
            ),
            view((PAD, top + 1200, SCREEN_W - PAD, top + 1280), artist, size=42, fg="#aaaaaa"),
            view(
                (PAD, top + 1340, SCREEN_W - PAD, top + 1352),
                cls="android.widget.SeekBar",
                bg="#5f6368",
            ),
            view((PAD, top + 1340, PAD + 300, top + 1352), cls="android.view.View", bg="#ffffff"),
            button(
                (SCREEN_W // 2 - 120, top + 1450, SCREEN_W // 2 + 120, top + 1690),
                label,
                "toggle",
                rid=f"{MUSIC}:id/play_pause_replay_button",
                bg="#ffffff",
                fg="#202124",
                size=40,
                radius=120,  # a circle
                cls="android.widget.ImageButton",
            ),
        ]
        return Screen(header=[], body=body)
