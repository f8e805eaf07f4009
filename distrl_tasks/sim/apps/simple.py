"""Small system apps: Messages (SMS), Camera, Photos (gallery), Files and YouTube Music.

Each shows a believable home screen and a page or two behind it. Data that outlives a visit
(photos taken, messages sent) is set up in ``__init__`` rather than ``reset``: an app that is
backed out of forgets its pages, not its content; a phone reset rebuilds every app anyway.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

from distrl_tasks.sim.app import PAD, App, Page, Screen, search_field
from distrl_tasks.sim.apps import CAMERA, FILES, MESSAGES, MUSIC, PHOTOS
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style

HEADER_H = 170
TILE_COLORS = ("#5c6bc0", "#26a69a", "#ef6c00", "#8d6e63", "#42a5f5", "#ab47bc", "#66bb6a")
Box = tuple[int, int, int, int]
KIND_COLORS = {"image": "#f4b400", "video": "#db4437", "audio": "#ab47bc", "doc": "#4285f4"}


def _h(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _node(
    bounds: Box,
    text: str = "",
    *,
    cls: str = "android.widget.TextView",
    rid: str = "",
    desc: str = "",
    action: str | None = None,
    **style: Any,
) -> Node:
    """One view; clickable exactly when it has an action. ``style`` are :class:`Style` fields."""
    return Node(
        cls=cls,
        bounds=bounds,
        text=text,
        resource_id=rid,
        content_desc=desc,
        clickable=action is not None,
        action=action,
        style=Style(**style),
    )


def app_bar(title: str, bg: str = "#ffffff", fg: str = "#202124") -> Node:
    bounds = (0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + HEADER_H)
    return _node(bounds, title, rid="android:id/title", bg=bg, fg=fg, size=58, bold=True)


def two_line_row(
    y: int, title: str, subtitle: str, action: str, icon: str, color: str, dark: bool = False
) -> Node:
    """A clickable list row with a letter avatar, a bold title and a grey second line."""
    row = _node((0, y, SCREEN_W, y + 180), cls="android.view.ViewGroup", desc=title, action=action)
    return row.add(
        _node(
            (PAD - 16, y + 30, PAD + 124, y + 150),
            cls="android.widget.ImageView",
            icon=icon,
            icon_bg=color,
            size=72,
        ),
        _node(
            (PAD + 150, y + 25, SCREEN_W - PAD, y + 95),
            title,
            size=46,
            bold=True,
            fg="#ffffff" if dark else "#202124",
        ),
        _node(
            (PAD + 150, y + 95, SCREEN_W - PAD, y + 160),
            subtitle,
            size=38,
            fg="#aaaaaa" if dark else "#5f6368",
        ),
    )


def open_page(app: App, name: str, params: dict[str, str]) -> None:
    """Push a page whose params may include ``name`` (``App.push`` reserves that keyword)."""
    page = Page(name, params)
    if page != app.page:
        app.stack.append(page)
        app.phone.on_navigate(app)


def _tile(bounds: Box, caption: str, action: str | None, desc: str) -> Node:
    """A photo-like tile: a colored picture with a darker band, captioned at the bottom."""
    x1, y1, x2, y2 = bounds
    d = _h(caption)
    tile = _node(
        bounds, cls="android.widget.ImageView", desc=desc, action=action, bg=TILE_COLORS[d[0] % 7]
    )
    band = y1 + (y2 - y1) * (50 + d[1] % 30) // 100
    return tile.add(
        _node((x1, band, x2, y2), cls="android.view.View", bg=TILE_COLORS[d[2] % 7]),
        _node((x1, y2 - 70, x2, y2), caption, fg="#ffffff", size=28 if x2 - x1 < 500 else 44),
    )


def _round_button(
    bounds: Box, text: str, desc: str, action: str, bg: str, fg: str = "#ffffff", rid: str = ""
) -> Node:
    radius = (bounds[3] - bounds[1]) // 2
    return _node(
        bounds,
        text,
        cls="android.widget.ImageButton",
        rid=rid,
        desc=desc,
        action=action,
        bg=bg,
        fg=fg,
        size=40,
        bold=True,
        align="center",
        radius=radius,
    )


class Messages(App):
    package = MESSAGES
    label = "Messages"
    color = "#1a73e8"
    COMPOSE_ID = f"{MESSAGES}:id/compose_message_text"
    THREADS = (
        ("Mom", "call me when you land"),
        ("Alex Kim", "See you at 7?"),
        ("Priya Patel", "Thanks for lunch!"),
        ("Bank Alerts", "Your one-time code is 482913"),
        ("Sam Taylor", "Did you watch the game?"),
        ("Pharmacy", "Your prescription is ready for pickup"),
    )

    def __init__(self, phone: Any) -> None:
        self.sent: dict[str, list[str]] = {}  # conversation name -> texts sent, oldest first
        super().__init__(phone)

    def on_tap(self, action: str) -> None:
        if action.startswith("thread:"):
            open_page(self, "conversation", {"name": action[len("thread:") :]})
        elif action == "send":
            self.on_submit(self.COMPOSE_ID, self.field_text(self.COMPOSE_ID))
        else:
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        if rid == self.COMPOSE_ID and text.strip() and self.page.name == "conversation":
            self.sent.setdefault(self.page.get("name"), []).append(text.strip())
            self.set_field(rid, "")

    def state_params(self) -> dict[str, str]:
        if self.page.name == "conversation":
            return {"last_sent": (self.sent.get(self.page.get("name")) or [""])[-1]}
        return {}

    def build(self, page: Page) -> Screen:
        if page.name == "conversation":
            return self._conversation(page.get("name"))
        threads = dict(self.THREADS)
        for name, texts in self.sent.items():
            threads[name] = f"You: {texts[-1]}"
        body = []
        for i, (name, text) in enumerate(threads.items()):
            color = TILE_COLORS[_h(name)[0] % len(TILE_COLORS)]
            y = CONTENT_TOP + 200 + i * 190
            body.append(two_line_row(y, name, text, f"thread:{name}", name, color))
        fab = (SCREEN_W - 460, CONTENT_BOTTOM - 220, SCREEN_W - PAD, CONTENT_BOTTOM - 60)
        body.append(
            _node(
                fab,
                "Start chat",
                cls="android.widget.Button",
                desc="Start chat",
                action="thread:New conversation",
                bg="#c2e7ff",
                fg="#001d35",
                size=44,
                bold=True,
                align="center",
                radius=50,
                icon="@plus",
                icon_bg="#001d35",
            )
        )
        return Screen(header=[app_bar("Messages")], body=body)

    def _conversation(self, name: str) -> Screen:
        incoming = dict(self.THREADS).get(name)
        bubbles = [(incoming, False)] if incoming else []
        bubbles += [(text, True) for text in self.sent.get(name, [])]
        body = []
        for i, (text, mine) in enumerate(bubbles):
            y = CONTENT_TOP + 220 + i * 150
            x1, x2 = (SCREEN_W // 3, SCREEN_W - PAD) if mine else (PAD, SCREEN_W * 2 // 3 + 100)
            body.append(
                _node(
                    (x1, y, x2, y + 120),
                    text,
                    rid=f"{MESSAGES}:id/message_text",
                    bg="#1a73e8" if mine else "#e8eaed",
                    fg="#ffffff" if mine else "#202124",
                    size=40,
                    radius=50,
                )
            )
        y = CONTENT_BOTTOM - 190
        body.append(search_field(self, self.COMPOSE_ID, "Text message", y=y, x2=SCREEN_W - 200))
        send = (SCREEN_W - 180, y, SCREEN_W - PAD, y + 128)
        body.append(_round_button(send, "Send", "Send SMS", "send", "#1a73e8"))
        return Screen(header=[app_bar(name)], body=body)


class Photos(App):
    package = PHOTOS
    label = "Photos"
    color = "#fbbc04"
    CAPTIONS = (
        "Sunset at the beach",
        "Birthday cake",
        "Golden Gate Bridge",
        "Coffee art",
        "Hiking trail",
        "Cat on the sofa",
        "City at night",
        "Farmers market",
        "Snowy mountains",
        "Family dinner",
        "Autumn leaves",
        "Road trip",
    )

    def __init__(self, phone: Any) -> None:
        # (caption, date), newest first; the camera inserts at the front
        self.photos = [(c, f"Nov {20 - i // 2}") for i, c in enumerate(self.CAPTIONS)]
        super().__init__(phone)

    def add_photo(self, caption: str) -> None:
        self.photos.insert(0, (caption, "Today"))

    def state_params(self) -> dict[str, str]:
        return {"count": str(len(self.photos))}

    def build(self, page: Page) -> Screen:
        if page.name == "photo":
            return self._photo(page.get("index", "0"))
        side = SCREEN_W // 3
        body = []
        for i, (caption, when) in enumerate(self.photos):
            row, col = divmod(i, 3)
            x, y = col * side, CONTENT_TOP + 200 + row * side
            body.append(
                _tile(
                    (x + 4, y + 4, x + side - 4, y + side - 4),
                    caption,
                    f"open:photo?index={i}",
                    f"Photo: {caption}, {when}",
                )
            )
        return Screen(header=[app_bar("Photos")], body=body)

    def _photo(self, index_text: str) -> Screen:
        index = int(index_text) if index_text.isdigit() else -1
        if not 0 <= index < len(self.photos):
            raise ValueError(f"no photo at index {index_text!r} (have {len(self.photos)})")
        caption, when = self.photos[index]
        top = CONTENT_TOP
        body = [
            _tile((0, top + 300, SCREEN_W, top + 1380), caption, None, f"Photo: {caption}"),
            _node((PAD, top + 1420, SCREEN_W - PAD, top + 1520), caption, size=50, bold=True),
            _node((PAD, top + 1520, SCREEN_W - PAD, top + 1600), when, size=40, fg="#5f6368"),
        ]
        return Screen(header=[app_bar("Photo", "#000000", "#ffffff")], body=body)


class Camera(App):
    package = CAMERA
    label = "Camera"
    color = "#5f6368"
    MODES = ("Night", "Portrait", "Photo", "Video", "Panorama")

    def reset(self) -> None:
        super().reset()
        self.mode = "Photo"
        self.recording = False
        self.shots = 0

    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        photos = self.phone.apps.get(PHOTOS)
        if kind == "mode" and not self.recording:
            self.mode = arg
        elif kind == "shutter" and isinstance(photos, Photos):
            if self.mode != "Video":
                self.shots += 1
                photos.add_photo(f"{self.mode} shot {self.shots}")
            else:
                self.recording = not self.recording
                if not self.recording:
                    photos.add_photo("Video recording")
        elif kind == "gallery" and self.phone.launch(PHOTOS):
            self.phone.front.push("photo", index="0")
        else:
            super().on_tap(action)

    def state_params(self) -> dict[str, str]:
        return {"mode": self.mode, "recording": "1" if self.recording else "0"}

    def build(self, page: Page) -> Screen:
        view = _node(
            (0, CONTENT_TOP, SCREEN_W, CONTENT_BOTTOM - 40),
            cls="android.view.View",
            rid=f"{CAMERA}:id/viewfinder",
            desc="Viewfinder",
            bg="#000000",
        )
        view.add(  # a simple scene: sky, grass and a cabin
            _node((0, CONTENT_TOP + 160, SCREEN_W, 1000), cls="android.view.View", bg="#90caf9"),
            _node((0, 1000, SCREEN_W, 1640), cls="android.view.View", bg="#7cb342"),
            _node((300, 700, 780, 1300), cls="android.view.View", bg="#8d6e63", radius=30),
        )
        body = [view]
        if self.recording:
            rec = (SCREEN_W // 2 - 150, CONTENT_TOP + 40, SCREEN_W // 2 + 150, CONTENT_TOP + 120)
            body.append(
                _node(rec, "REC", bg="#d93025", fg="#ffffff", size=40, align="center", radius=40)
            )
        width = SCREEN_W // len(self.MODES)
        for i, mode in enumerate(self.MODES):
            on = mode == self.mode
            chip = _node(
                (i * width + 6, 1680, (i + 1) * width - 6, 1780),
                mode,
                desc=f"{mode} mode",
                action=f"mode:{mode}",
                bg="#fbbc04" if on else None,
                fg="#202124" if on else "#ffffff",
                size=34,
                align="center",
                radius=50,
            )
            chip.checkable, chip.checked = True, on
            body.append(chip)
        video = self.mode == "Video"
        desc = "Take photo"
        if video:
            desc = "Stop video recording" if self.recording else "Start video recording"
        shutter = (SCREEN_W // 2 - 120, 1880, SCREEN_W // 2 + 120, 2120)
        body.append(
            _node(
                shutter,
                cls="android.widget.ImageButton",
                rid=f"{CAMERA}:id/shutter_button",
                desc=desc,
                action="shutter",
                bg="#d93025" if video else "#ffffff",
                border="#bdc1c6",
                radius=120,
            )
        )
        body.append(
            _node(
                (PAD + 40, 1920, PAD + 200, 2080),
                cls="android.widget.ImageButton",
                rid=f"{CAMERA}:id/thumbnail_button",
                desc="Open gallery",
                action="gallery",
                bg="#5c6bc0",
                border="#ffffff",
                radius=80,
            )
        )
        return Screen(header=[], body=body)


class Files(App):
    package = FILES
    label = "Files"
    color = "#1a73e8"
    CATEGORIES = (
        ("Downloads", "downloads"),
        ("Images", "image"),
        ("Videos", "video"),
        ("Audio", "audio"),
        ("Documents", "doc"),
    )
    # (name, kind, size, date, in Downloads)
    FILES = (
        ("boarding_pass.pdf", "doc", "212 kB", "Nov 20", True),
        ("IMG_20201119_183012.jpg", "image", "3.1 MB", "Nov 19", True),
        ("resume_final.docx", "doc", "48 kB", "Nov 18", True),
        ("podcast_episode_12.mp3", "audio", "54 MB", "Nov 16", True),
        ("vacation_clip.mp4", "video", "121 MB", "Nov 14", True),
        ("tax_return_2019.pdf", "doc", "1.2 MB", "Nov 9", True),
        ("Screenshot_20201117.png", "image", "820 kB", "Nov 17", False),
        ("voice_note_0412.m4a", "audio", "2.4 MB", "Nov 12", False),
        ("birthday_party.mp4", "video", "88 MB", "Nov 2", False),
        ("meeting_notes.txt", "doc", "6 kB", "Nov 10", False),
    )

    def files_in(self, category: str) -> list[tuple[str, str, str, str, bool]]:
        """Files of a category key (``downloads`` or a kind such as ``image``)."""
        if category == "downloads":
            return [f for f in self.FILES if f[4]]
        if category not in KIND_COLORS:
            raise ValueError(f"unknown Files category {category!r}")
        return [f for f in self.FILES if f[1] == category]

    def on_tap(self, action: str) -> None:
        if action.startswith("file:"):
            open_page(self, "file", {"name": action[len("file:") :]})
        else:
            super().on_tap(action)

    def build(self, page: Page) -> Screen:
        if page.name in ("downloads", "category"):
            kind = "downloads" if page.name == "downloads" else page.get("kind")
            files = self.files_in(kind)
            rows = [
                two_line_row(
                    CONTENT_TOP + 200 + i * 190,
                    f[0],
                    f"{f[2]} · {f[3]}",
                    f"file:{f[0]}",
                    f[1].upper(),
                    KIND_COLORS[f[1]],
                )
                for i, f in enumerate(files)
            ]
            title = next(label for label, key in self.CATEGORIES if key == kind)
            return Screen(header=[app_bar(title)], body=rows)
        if page.name == "file":
            return self._file(page.get("name"))
        top = CONTENT_TOP
        body = [
            _node((PAD, top + 200, SCREEN_W - PAD, top + 300), "Categories", size=42, bold=True)
        ]
        for i, (label, kind) in enumerate(self.CATEGORIES):
            row, col = divmod(i, 2)
            x, y = PAD + col * 510, top + 320 + row * 220
            action = "open:downloads" if kind == "downloads" else f"open:category?kind={kind}"
            body.append(
                _node(
                    (x, y, x + 490, y + 190),
                    label,
                    cls="android.widget.Button",
                    desc=label,
                    action=action,
                    bg="#e8f0fe",
                    size=44,
                    radius=40,
                    icon=label,
                    icon_bg=KIND_COLORS.get(kind, "#0f9d58"),
                )
            )
        body.append(
            _node(
                (PAD, top + 1040, SCREEN_W - PAD, top + 1200),
                "Internal storage · 23.4 GB free of 64 GB",
                desc="Internal storage",
                bg="#f1f3f4",
                size=40,
                radius=40,
                icon="Storage",
                icon_bg="#5f6368",
            )
        )
        return Screen(header=[app_bar("Files")], body=body)

    def _file(self, name: str) -> Screen:
        entry = next((f for f in self.FILES if f[0] == name), None)
        if entry is None:
            raise ValueError(f"no file named {name!r}")
        top = CONTENT_TOP
        body = [
            _tile((PAD, top + 260, SCREEN_W - PAD, top + 1200), name, None, f"Preview of {name}"),
            _node(
                (PAD, top + 1240, SCREEN_W - PAD, top + 1320),
                f"{entry[2]} · {entry[3]}",
                size=40,
                fg="#5f6368",
            ),
        ]
        return Screen(header=[app_bar(name)], body=body)


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
        d, word = _h(key.strip().lower()), key.strip().title()
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
            open_page(self, "playing", {"title": title, "artist": artist})
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
        y = CONTENT_TOP + HEADER_H + 20
        if page.name == "home":
            body.append(
                search_field(self, self.SEARCH_ID, "Search songs, artists", y=y, bg="#3c4043")
            )
            y += 160
            for i, name in enumerate(self.PLAYLISTS):
                body.append(
                    _node(
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
            _node((PAD, y, SCREEN_W - PAD, y + 100), title, size=48, bold=True, fg="#ffffff")
        )
        y += 110
        for song, artist in songs:
            color = TILE_COLORS[_h(song)[0] % len(TILE_COLORS)]
            body.append(two_line_row(y, song, artist, f"play:{song}|{artist}", song, color, True))
            y += 190
        backdrop = _node(
            (0, CONTENT_TOP, SCREEN_W, max(y, CONTENT_BOTTOM - 40)),
            cls="android.view.View",
            bg="#030303",
        )
        return Screen(
            header=[app_bar("YouTube Music", "#030303", "#ffffff")], body=[backdrop, *body]
        )

    def _playing(self, page: Page) -> Screen:
        title, artist, top = page.get("title"), page.get("artist"), CONTENT_TOP
        label = "Play" if self.paused else "Pause"
        body = [
            _node((0, top, SCREEN_W, CONTENT_BOTTOM - 40), cls="android.view.View", bg="#202124"),
            _tile(
                (120, top + 200, SCREEN_W - 120, top + 1040), title, None, f"Album art for {title}"
            ),
            _node(
                (PAD, top + 1100, SCREEN_W - PAD, top + 1200),
                title,
                rid=f"{MUSIC}:id/title",
                size=58,
                bold=True,
                fg="#ffffff",
            ),
            _node((PAD, top + 1200, SCREEN_W - PAD, top + 1280), artist, size=42, fg="#aaaaaa"),
            _node(
                (PAD, top + 1340, SCREEN_W - PAD, top + 1352),
                cls="android.widget.SeekBar",
                bg="#5f6368",
            ),
            _node((PAD, top + 1340, PAD + 300, top + 1352), cls="android.view.View", bg="#ffffff"),
            _round_button(
                (SCREEN_W // 2 - 120, top + 1450, SCREEN_W // 2 + 120, top + 1690),
                label,
                label,
                "toggle",
                "#ffffff",
                fg="#202124",
                rid=f"{MUSIC}:id/play_pause_replay_button",
            ),
        ]
        return Screen(header=[], body=body)
