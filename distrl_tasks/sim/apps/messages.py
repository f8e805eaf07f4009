"""Messages (SMS): conversation threads and sending a text in a conversation.

Texts sent outlive a visit (they are kept in ``__init__``, not ``reset``): an app that is backed
out of forgets its pages, not its content; a phone reset rebuilds every app anyway.
"""

from __future__ import annotations

from typing import Any

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import MESSAGES
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W
from distrl_tasks.sim.widgets import (
    PAD,
    button,
    plain_app_bar,
    search_field,
    tile_color,
    two_line_row,
    view,
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
            self.push_page(Page("conversation", {"name": action[len("thread:") :]}))
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
            color = tile_color(name)
            y = CONTENT_TOP + 200 + i * 190
            body.append(two_line_row(y, name, text, f"thread:{name}", name, color))
        fab = (SCREEN_W - 460, CONTENT_BOTTOM - 220, SCREEN_W - PAD, CONTENT_BOTTOM - 60)
        body.append(
            view(
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
        return Screen(header=[plain_app_bar("Messages")], body=body)

    def _conversation(self, name: str) -> Screen:
        incoming = dict(self.THREADS).get(name)
        bubbles = [(incoming, False)] if incoming else []
        bubbles += [(text, True) for text in self.sent.get(name, [])]
        body = []
        for i, (text, mine) in enumerate(bubbles):
            y = CONTENT_TOP + 220 + i * 150
            x1, x2 = (SCREEN_W // 3, SCREEN_W - PAD) if mine else (PAD, SCREEN_W * 2 // 3 + 100)
            body.append(
                view(
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
        body.append(
            button(
                send,
                "Send",
                "send",
                desc="Send SMS",
                size=40,
                radius=64,  # a pill: half the field's height
                cls="android.widget.ImageButton",
            )
        )
        return Screen(header=[plain_app_bar(name)], body=body)
