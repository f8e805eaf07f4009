"""The Contacts app: an alphabetical list with live search, and a detail page per contact.

Phone numbers and e-mail addresses are derived from a stable hash of the name, so the detail page
works for any name (tasks may open contacts that are not in the default list).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from distrl_tasks.sim.app import App, Page, Screen, parse_action
from distrl_tasks.sim.apps.packages import CONTACTS, MESSAGES
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD, search_field

SEARCH_ID = f"{CONTACTS}:id/search_view"
ACCENT = "#1a73e8"
NAMES = (
    "Aaron Brooks",
    "Alex Kim",
    "Amelia Clarke",
    "Ben Carter",
    "Carlos Diaz",
    "Chloe Martin",
    "Daniel Lee",
    "Emma Wilson",
    "Fatima Khan",
    "Grace Hall",
    "Hiro Tanaka",
    "Isabella Rossi",
    "Jack Turner",
    "Liam Murphy",
    "Maria Garcia",
    "Mom",
    "Noah Evans",
    "Olivia Scott",
    "Priya Patel",
    "Sam Taylor",
    "Sophia Nguyen",
    "Tom Baker",
    "Zoe Adams",
)
AVATAR_COLORS = ("#e8710a", "#1e8e3e", "#d93025", "#9334e6", "#1a73e8", "#e52592", "#12b5cb")


def _digest(name: str) -> bytes:
    return hashlib.blake2b(name.strip().lower().encode(), digest_size=8).digest()


def phone_number(name: str) -> str:
    """A stable US number in the 555-01xx fictional range."""
    d = _digest(name)
    area = (650, 415, 408, 212, 310, 617)[d[0] % 6]
    return f"({area}) 555-01{d[1] % 100:02d}"


def email(name: str) -> str:
    """``"Priya Patel"`` -> ``"priya.patel@gmail.com"``."""
    local = ".".join(re.sub(r"[^a-z0-9]", "", w) for w in name.lower().split())
    return f"{local.strip('.') or 'contact'}@gmail.com"


def avatar_color(name: str) -> str:
    return AVATAR_COLORS[_digest(name)[2] % len(AVATAR_COLORS)]


def matches(name: str, query: str) -> bool:
    """Google Contacts matches the start of any word of the name, or digits of the number."""
    q = query.strip().lower()
    if not q:
        return True
    if any(word.startswith(q) for word in name.lower().split()) or name.lower().startswith(q):
        return True
    digits = re.sub(r"\D", "", q)
    return bool(digits) and digits in re.sub(r"\D", "", phone_number(name))


class Contacts(App):
    package = CONTACTS
    label = "Contacts"
    color = ACCENT
    home_page = "list"

    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        if kind == "end_call":
            self.back()
        elif kind == "message":
            # "Text" hands over to the SMS app, opened on this person's conversation
            if self.phone.launch(MESSAGES):
                self.phone.front.push_page(Page("conversation", {"name": arg}))
        elif kind == "open":
            # not App.push(): its first parameter is called ``name``, like this page's param
            page_name, params = parse_action(arg)
            self.push_page(Page(page_name, params))
        else:
            super().on_tap(action)

    def visible_names(self) -> list[str]:
        query = self.field_text(SEARCH_ID)
        return sorted((n for n in NAMES if matches(n, query)), key=str.lower)

    def build(self, page: Page) -> Screen:
        if page.name in ("contact", "call"):
            name = page.get("name").strip()
            if not name:
                raise ValueError(f"contacts page {page.name!r} needs a non-empty name param")
            return (
                self._call(name, page.get("video") == "1")
                if page.name == "call"
                else (self._detail(name))
            )
        return self._list()

    def _call(self, name: str, video: bool) -> Screen:
        top = CONTENT_TOP
        screen = Node(
            cls="android.view.ViewGroup",
            bounds=(0, top, SCREEN_W, top + 2100),
            style=Style(bg="#1f1f1f"),
        )
        screen.add(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 200, SCREEN_W - PAD, top + 300),
                text="Video calling..." if video else "Calling...",
                resource_id=f"{CONTACTS}:id/call_status",
                style=Style(size=44, fg="#c4c7c5", align="center"),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 320, SCREEN_W - PAD, top + 460),
                text=name,
                style=Style(size=80, fg="#ffffff", align="center"),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 470, SCREEN_W - PAD, top + 560),
                text=phone_number(name),
                style=Style(size=44, fg="#c4c7c5", align="center"),
            ),
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W // 2 - 110, top + 1700, SCREEN_W // 2 + 110, top + 1920),
                text="End",
                content_desc="End call",
                clickable=True,
                action="end_call",
                style=Style(bg="#d93025", fg="#ffffff", size=48, align="center", radius=110),
            ),
        )
        return Screen(header=[], body=[screen])

    def _list(self) -> Screen:
        header = [
            Node(
                cls="android.view.ViewGroup",
                bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 200),
                style=Style(bg="#ffffff"),
            ).add(search_field(self, SEARCH_ID, "Search contacts", y=CONTENT_TOP + 30))
        ]
        body: list[Node] = []
        y = CONTENT_TOP + 220
        names = self.visible_names()
        if not names:
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y + 100, SCREEN_W - PAD, y + 200),
                    text="No contacts found",
                    style=Style(size=44, fg="#5f6368", align="center"),
                )
            )
        letter = ""
        for name in names:
            first = name[0].upper()
            if first != letter:
                letter = first
                body.append(
                    Node(
                        cls="android.widget.TextView",
                        bounds=(PAD, y, 200, y + 80),
                        text=letter,
                        style=Style(size=40, fg=ACCENT, bold=True),
                    )
                )
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(140, y, SCREEN_W, y + 140),
                    text=name,
                    resource_id=f"{CONTACTS}:id/cliv_name_textview",
                    content_desc=name,
                    clickable=True,
                    action=f"open:contact?name={_quote(name)}",
                    style=Style(size=46, icon=name, icon_bg=avatar_color(name)),
                )
            )
            y += 150
        return Screen(header=header, body=body)

    def _detail(self, name: str) -> Screen:
        top = CONTENT_TOP
        body = [
            Node(
                cls="android.widget.ImageView",
                bounds=(SCREEN_W // 2 - 140, top + 80, SCREEN_W // 2 + 140, top + 360),
                content_desc=f"Photo of {name}",
                style=Style(icon=name, icon_bg=avatar_color(name), size=175),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 380, SCREEN_W - PAD, top + 500),
                text=name,
                resource_id=f"{CONTACTS}:id/large_title",
                style=Style(size=68, align="center"),
            ),
        ]
        number, mail = phone_number(name), email(name)
        actions = (
            ("Call", "open:" + f"call?name={_quote(name)}"),
            ("Text", f"message:{name}"),
            ("Video", "open:" + f"call?name={_quote(name)}&video=1"),
        )
        width = (SCREEN_W - 2 * PAD) // len(actions)
        for i, (label, action) in enumerate(actions):
            x = PAD + i * width
            cell = Node(
                cls="android.widget.Button",
                bounds=(x + 10, top + 560, x + width - 10, top + 760),
                content_desc=f"{label} {name}",
                clickable=True,
                action=action,
                style=Style(bg="#e8f0fe", radius=40),
            )
            cell.add(
                Node(
                    cls="android.widget.ImageView",
                    bounds=(x + width // 2 - 50, top + 580, x + width // 2 + 50, top + 680),
                    style=Style(icon=label, icon_bg=ACCENT, size=44),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(x + 10, top + 680, x + width - 10, top + 750),
                    text=label,
                    style=Style(size=36, fg=ACCENT, align="center"),
                ),
            )
            body.append(cell)
        card = Node(
            cls="android.view.ViewGroup",
            bounds=(PAD, top + 820, SCREEN_W - PAD, top + 1220),
            style=Style(bg="#f1f3f4", radius=40),
        )
        card.add(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD + 30, top + 840, SCREEN_W - PAD, top + 900),
                text="Contact info",
                style=Style(size=40, bold=True),
            ),
            _info_row(top + 920, number, "Mobile", f"{CONTACTS}:id/phone_number"),
            _info_row(top + 1070, mail, "Personal", f"{CONTACTS}:id/email"),
        )
        body.append(card)
        return Screen(header=[], body=body)

    def state_params(self) -> dict[str, str]:
        if self.page.name == "contact":
            name = self.page.get("name")
            return {"phone": phone_number(name), "email": email(name)}
        if self.page.name == "list":
            return {"query": self.field_text(SEARCH_ID)}
        return {}


def _info_row(y: int, value: str, kind: str, rid: str) -> Node:
    row = Node(
        cls="android.view.ViewGroup",
        bounds=(PAD + 10, y, SCREEN_W - PAD - 10, y + 140),
        content_desc=f"{kind} {value}",
    )
    return row.add(
        Node(
            cls="android.widget.TextView",
            bounds=(PAD + 30, y, SCREEN_W - PAD - 10, y + 85),
            text=value,
            resource_id=rid,
            style=Style(size=44),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(PAD + 30, y + 85, SCREEN_W - PAD - 10, y + 135),
            text=kind,
            style=Style(size=34, fg="#5f6368"),
        ),
    )


def _quote(text: str) -> str:
    return quote(text, safe="")
