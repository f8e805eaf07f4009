"""Files: storage categories, the Downloads list and a file preview."""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import FILES
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W
from distrl_tasks.sim.widgets import PAD, photo_tile, plain_app_bar, two_line_row, view

KIND_COLORS = {"image": "#f4b400", "video": "#db4437", "audio": "#ab47bc", "doc": "#4285f4"}


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
            self.push_page(Page("file", {"name": action[len("file:") :]}))
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
            return Screen(header=[plain_app_bar(title)], body=rows)
        if page.name == "file":
            return self._file(page.get("name"))
        top = CONTENT_TOP
        body = [view((PAD, top + 200, SCREEN_W - PAD, top + 300), "Categories", size=42, bold=True)]
        for i, (label, kind) in enumerate(self.CATEGORIES):
            row, col = divmod(i, 2)
            x, y = PAD + col * 510, top + 320 + row * 220
            action = "open:downloads" if kind == "downloads" else f"open:category?kind={kind}"
            body.append(
                view(
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
            view(
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
        return Screen(header=[plain_app_bar("Files")], body=body)

    def _file(self, name: str) -> Screen:
        entry = next((f for f in self.FILES if f[0] == name), None)
        if entry is None:
            raise ValueError(f"no file named {name!r}")
        top = CONTENT_TOP
        body = [
            photo_tile(
                (PAD, top + 260, SCREEN_W - PAD, top + 1200), name, None, f"Preview of {name}"
            ),
            view(
                (PAD, top + 1240, SCREEN_W - PAD, top + 1320),
                f"{entry[2]} · {entry[3]}",
                size=40,
                fg="#5f6368",
            ),
        ]
        return Screen(header=[plain_app_bar(name)], body=body)
