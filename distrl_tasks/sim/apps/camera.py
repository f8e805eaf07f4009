"""Camera: a viewfinder, mode chips (Photo, Video, ...), the shutter and a gallery shortcut.

Each photo taken or video recorded is added to the Photos app.
"""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import CAMERA, PHOTOS
from distrl_tasks.sim.apps.photos import Photos
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W
from distrl_tasks.sim.widgets import PAD, view


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
        finder = view(
            (0, CONTENT_TOP, SCREEN_W, CONTENT_BOTTOM - 40),
            cls="android.view.View",
            rid=f"{CAMERA}:id/viewfinder",
            desc="Viewfinder",
            bg="#000000",
        )
        finder.add(  # a simple scene: sky, grass and a cabin
            view((0, CONTENT_TOP + 160, SCREEN_W, 1000), cls="android.view.View", bg="#90caf9"),
            view((0, 1000, SCREEN_W, 1640), cls="android.view.View", bg="#7cb342"),
            view((300, 700, 780, 1300), cls="android.view.View", bg="#8d6e63", radius=30),
        )
        body = [finder]
        if self.recording:
            rec = (SCREEN_W // 2 - 150, CONTENT_TOP + 40, SCREEN_W // 2 + 150, CONTENT_TOP + 120)
            body.append(
                view(rec, "REC", bg="#d93025", fg="#ffffff", size=40, align="center", radius=40)
            )
        width = SCREEN_W // len(self.MODES)
        for i, mode in enumerate(self.MODES):
            on = mode == self.mode
            chip = view(
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
            view(
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
            view(
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
