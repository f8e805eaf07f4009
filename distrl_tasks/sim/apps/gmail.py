"""Simulated Gmail: an inbox of emails, reading a message, search, star and delete.

Pages: ``inbox`` (the home page), ``message`` (subject) and ``search`` (query). The mailbox is the
same on every device; opening a message marks it read and deleting one removes it until reset.
"""

from __future__ import annotations

from dataclasses import dataclass

from distrl_tasks.sim.app import App, Page, Screen, make_action, parse_action
from distrl_tasks.sim.apps.packages import GMAIL
from distrl_tasks.sim.apps.text import clean, wrap
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import (
    PAD,
    UP_ACTION,
    app_bar,
    button,
    chip,
    color_for,
    search_field,
    section_header,
)

SEARCH_ID = f"{GMAIL}:id/open_search"
TO_ID = f"{GMAIL}:id/to"
SUBJECT_ID = f"{GMAIL}:id/subject"
BODY_ID = f"{GMAIL}:id/body"
RED = "#d93025"
ROW_H = 230


@dataclass(frozen=True)
class Email:
    """One message in the mailbox."""

    sender: str
    subject: str
    snippet: str
    time: str
    unread: bool = False

    def matches(self, query: str) -> bool:
        low = query.lower()
        return any(low in part.lower() for part in (self.sender, self.subject, self.snippet))


# time | * if unread | sender | subject | snippet, one message a line, newest first
_MAIL_TABLE = """
11:42 AM | * | Alex Rivera | Lunch on Friday? | Are you free at noon? There's a new ramen place
10:05 AM | * | Priya Shah | Slides for Monday | Attached the draft deck, tell me what you think
9:30 AM | * | The Team | Weekly sync notes | Action items: finish the report, book the venue
8:12 AM | | Google | Security alert | A new sign-in on Pixel was detected. If this was you
Yesterday | | Amazon.com | Your order has shipped | Your package is on the way, arrives Tuesday
Yesterday | | Mom | Photos from the weekend | Pictures from grandpa's birthday, so much fun
Nov 19 | | Netflix | New arrivals this week | Three new series we think you'll love
Nov 18 | | City Library | Your hold is ready | The book you reserved is ready for pickup
Nov 17 | | Bank Alerts | Your statement is ready | Your November statement is now available
Nov 16 | | Jordan Lee | Hiking trip plan | Trailhead at 7, bring water, the weather looks good
Nov 15 | | Coursera | Keep up the good work | You are 60% through Machine Learning, keep going
Nov 14 | | Airline Updates | Check in for your flight | Your flight to Seattle departs tomorrow
"""


def _parse_mail(table: str) -> tuple[Email, ...]:
    emails = []
    for line in table.strip().splitlines():
        time, flag, sender, subject, snippet = (part.strip() for part in line.split("|"))
        emails.append(Email(sender, subject, snippet, time, unread=flag == "*"))
    return tuple(emails)


MAILBOX: tuple[Email, ...] = _parse_mail(_MAIL_TABLE)


def email_by_subject(subject: str) -> Email | None:
    for email in MAILBOX:
        if email.subject == subject:
            return email
    return None


def body_of(email: Email) -> list[str]:
    """The message text: the snippet continued into a short letter."""
    first = email.sender.split()[0]
    text = (
        f"Hi, {email.snippet}. Let me know what works for you and I will plan around it. "
        f"Thanks so much, and talk soon. Best, {first}"
    )
    return wrap(text, 40, lines=8)


class Gmail(App):
    """Gmail's inbox and message view."""

    package = GMAIL
    label = "Gmail"
    color = RED
    home_page = "inbox"

    def reset(self) -> None:
        super().reset()
        self.read: set[str] = set()
        self.starred: set[str] = set()
        self.deleted: set[str] = set()
        self.sent: list[tuple[str, str, str]] = []  # (to, subject, body) of sent messages

    def build(self, page: Page) -> Screen:
        if page.name == "message":
            return self._message(page.get("subject"))
        if page.name == "search":
            return self._list(page.get("query"))
        if page.name == "compose":
            return self._compose()
        return self._list("")

    def _compose(self) -> Screen:
        bar = app_bar("Compose")
        bar.add(
            button(
                (SCREEN_W - 260, CONTENT_TOP + 30, SCREEN_W - PAD, CONTENT_TOP + 130),
                "Send",
                "send",
                rid=f"{GMAIL}:id/send",
                bg="#0b57d0",
            )
        )
        body: list[Node] = []
        y = CONTENT_TOP + 200
        for rid, hint, height in (
            (TO_ID, "To", 130),
            (SUBJECT_ID, "Subject", 130),
            (BODY_ID, "Compose email", 400),
        ):
            field = search_field(self, rid, hint, y=y, height=height, bg="#ffffff")
            field.style = Style(size=42, border="#dadce0", radius=16)
            body.append(field)
            y += height + 30
        return Screen(header=[bar], body=body)

    def _visible(self, query: str) -> list[Email]:
        return [
            e for e in MAILBOX if e.subject not in self.deleted and (not query or e.matches(query))
        ]

    def _list(self, query: str) -> Screen:
        box = search_field(self, SEARCH_ID, "Search in mail", y=CONTENT_TOP + 20)
        box.style = Style(bg="#eaf1fb", size=44, radius=64, icon="@menu", icon_bg="#444746")
        header = [
            Node(
                cls="android.view.ViewGroup",
                bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 170),
                style=Style(bg="#ffffff"),
            ),
            box,
        ]
        body: list[Node] = []
        y = CONTENT_TOP + 180
        title = f'Results for "{query}"' if query else "Primary"
        body.append(section_header(y, title, "#444746"))
        y += 100
        emails = self._visible(query)
        if not emails:
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 120),
                    text="No results in mail",
                    style=Style(size=42, fg="#5f6368", align="center"),
                )
            )
        for email in emails:
            body.append(self._row(y, email))
            y += ROW_H
        body.append(
            button(
                (SCREEN_W - PAD - 360, y + 40, SCREEN_W - PAD, y + 190),
                "Compose",
                "compose",
                rid=f"{GMAIL}:id/compose_button",
                bg="#c2e7ff",
                fg="#001d35",
            )
        )
        return Screen(header=header, body=body)

    def _row(self, y: int, email: Email) -> Node:
        unread = email.unread and email.subject not in self.read
        row = Node(
            cls="android.view.ViewGroup",
            bounds=(0, y, SCREEN_W, y + ROW_H),
            resource_id=f"{GMAIL}:id/viewified_conversation_item_view",
            content_desc=f"{'Unread, ' if unread else ''}{email.sender}, {email.subject}, "
            f"{email.snippet}, {email.time}",
            clickable=True,
            action="open:" + make_action("message", subject=email.subject),
        )
        tx = PAD + 150
        fg = "#1f1f1f" if unread else "#444746"
        row.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(PAD - 16, y + 30, PAD + 120, y + 150),
                style=Style(icon=email.sender, icon_bg=color_for(email.sender), size=60),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(tx, y + 20, SCREEN_W - 260, y + 85),
                text=email.sender,
                resource_id=f"{GMAIL}:id/senders",
                style=Style(size=42, fg=fg, bold=unread),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(SCREEN_W - 260, y + 20, SCREEN_W - PAD, y + 85),
                text=email.time,
                style=Style(size=32, fg=fg, bold=unread, align="right"),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(tx, y + 85, SCREEN_W - PAD, y + 145),
                text=email.subject,
                resource_id=f"{GMAIL}:id/subject",
                style=Style(size=38, fg=fg, bold=unread),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(tx, y + 145, SCREEN_W - PAD, y + 205),
                text=email.snippet,
                resource_id=f"{GMAIL}:id/snippet",
                style=Style(size=36, fg="#5f6368"),
            ),
        )
        return row

    def _message(self, subject: str) -> Screen:
        email = email_by_subject(subject)
        starred = subject in self.starred
        bar = app_bar("")
        bar.add(
            chip(
                (SCREEN_W - 560, CONTENT_TOP + 35, SCREEN_W - 300, CONTENT_TOP + 125),
                "Starred" if starred else "Star",
                "star",
                selected=starred,
            ),
            chip(
                (SCREEN_W - 280, CONTENT_TOP + 35, SCREEN_W - PAD, CONTENT_TOP + 125),
                "Delete",
                "delete",
            ),
        )
        body: list[Node] = []
        y = CONTENT_TOP + 180
        for line in wrap(subject, 30):
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 80),
                    text=line,
                    resource_id=f"{GMAIL}:id/subject_and_folder_view",
                    style=Style(size=54, fg="#1f1f1f"),
                )
            )
            y += 80
        if email is None:
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y + 40, SCREEN_W - PAD, y + 140),
                    text="This conversation could not be found.",
                    style=Style(size=40, fg="#5f6368"),
                )
            )
            return Screen(header=[bar], body=body)
        y += 30
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD - 16, y, SCREEN_W - PAD, y + 140),
                text=f"{email.sender}  ·  {email.time}",
                resource_id=f"{GMAIL}:id/sender_name",
                style=Style(size=40, bold=True, icon=email.sender, icon_bg=color_for(email.sender)),
            )
        )
        y += 160
        for line in body_of(email):
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 66),
                    text=line,
                    style=Style(size=40, fg="#1f1f1f"),
                )
            )
            y += 66
        y += 60
        half = (SCREEN_W - 2 * PAD - 40) // 2
        body.append(
            button((PAD, y, PAD + half, y + 120), "Reply", "reply", bg="#ffffff", fg="#444746")
        )
        body.append(
            button(
                (SCREEN_W - PAD - half, y, SCREEN_W - PAD, y + 120),
                "Forward",
                "forward",
                bg="#ffffff",
                fg="#444746",
            )
        )
        return Screen(header=[bar], body=body)

    def on_tap(self, action: str) -> None:
        subject = self.page.get("subject")
        if action == UP_ACTION:
            self.phone.back()
        elif action == "star" and subject:
            self.starred ^= {subject}
        elif action == "delete" and subject:
            self.deleted.add(subject)
            self.phone.back()
        elif action in ("reply", "forward") and subject:
            email = email_by_subject(subject)
            reply = action == "reply" and email is not None
            self.set_field(TO_ID, email.sender if reply and email else "")
            self.set_field(SUBJECT_ID, ("Re: " if reply else "Fwd: ") + subject)
            self.set_field(BODY_ID, "")
            self.push("compose")
        elif action == "compose":
            for rid in (TO_ID, SUBJECT_ID, BODY_ID):
                self.set_field(rid, "")
            self.push("compose")
        elif action == "send":
            to = clean(self.field_text(TO_ID))
            if to:
                self.sent.append((to, self.field_text(SUBJECT_ID), self.field_text(BODY_ID)))
                self.phone.back()
        else:
            if action.startswith("open:message"):
                self.read.add(parse_action(action[len("open:") :])[1].get("subject", ""))
            super().on_tap(action)

    def on_submit(self, rid: str, text: str) -> None:
        query = clean(text)
        if rid != SEARCH_ID or not query:
            return
        self.show_results("search", query=query)
