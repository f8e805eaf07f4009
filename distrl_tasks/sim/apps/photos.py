"""Photos: a gallery grid of captioned pictures and a single-photo view.

The photo list outlives a visit (kept in ``__init__``); the Camera adds pictures to its front.
"""

from __future__ import annotations

from typing import Any

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import PHOTOS
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W
from distrl_tasks.sim.widgets import PAD, photo_tile, plain_app_bar, view


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
                photo_tile(
                    (x + 4, y + 4, x + side - 4, y + side - 4),
                    caption,
                    f"open:photo?index={i}",
                    f"Photo: {caption}, {when}",
                )
            )
        return Screen(header=[plain_app_bar("Photos")], body=body)

    def _photo(self, index_text: str) -> Screen:
        index = int(index_text) if index_text.isdigit() else -1
        if not 0 <= index < len(self.photos):
            raise ValueError(f"no photo at index {index_text!r} (have {len(self.photos)})")
        caption, when = self.photos[index]
        top = CONTENT_TOP
        body = [
            photo_tile((0, top + 300, SCREEN_W, top + 1380), caption, None, f"Photo: {caption}"),
            view((PAD, top + 1420, SCREEN_W - PAD, top + 1520), caption, size=50, bold=True),
            view((PAD, top + 1520, SCREEN_W - PAD, top + 1600), when, size=40, fg="#5f6368"),
        ]
        return Screen(header=[plain_app_bar("Photo", "#000000", "#ffffff")], body=body)
