"""Views of the Maps app: the drawn map canvas with pins, and the card of a place in a list."""

from __future__ import annotations

from urllib.parse import urlencode

from distrl_tasks.sim.app import seeded
from distrl_tasks.sim.apps.packages import MAPS
from distrl_tasks.sim.apps.places import Place
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD

BLUE = "#1a73e8"


def map_canvas(bounds: tuple[int, int, int, int], seed: str, pins: int = 0) -> Node:
    """A stylised street map: blocks, a park, water, roads and lettered pins, all from ``seed``."""
    x1, y1, x2, y2 = bounds
    rng = seeded("map", seed)
    canvas = Node(
        cls="android.view.View",
        bounds=bounds,
        content_desc="Map",
        style=Style(bg="#f1efe9"),
    )
    px, py = rng.randrange(x1, x2 - 300), rng.randrange(y1, max(y1 + 1, y2 - 260))
    canvas.add(
        Node(
            cls="android.view.View", bounds=(px, py, px + 300, py + 240), style=Style(bg="#c8e6c9")
        )
    )
    canvas.add(
        Node(cls="android.view.View", bounds=(x1, y2 - 90, x2, y2), style=Style(bg="#aadaff"))
    )
    for i in range(4):  # avenues
        x = x1 + 80 + i * 260 + rng.randrange(0, 60)
        canvas.add(
            Node(
                cls="android.view.View", bounds=(x, y1, x + 22, y2 - 90), style=Style(bg="#ffffff")
            )
        )
    for j in range((y2 - y1) // 300 + 1):  # streets
        y = y1 + 120 + j * 300 + rng.randrange(0, 50)
        if y + 22 < y2 - 90:
            canvas.add(
                Node(cls="android.view.View", bounds=(x1, y, x2, y + 22), style=Style(bg="#ffffff"))
            )
    hy = y1 + (y2 - y1) // 2 + rng.randrange(-40, 40)
    canvas.add(
        Node(cls="android.view.View", bounds=(x1, hy, x2, hy + 34), style=Style(bg="#fde293"))
    )
    for k in range(pins):
        x = rng.randrange(x1 + 40, x2 - 120)
        y = rng.randrange(y1 + 30, max(y1 + 31, y2 - 200))
        canvas.add(
            Node(
                cls="android.view.View",
                bounds=(x, y, x + 80, y + 80),
                style=Style(icon=chr(ord("A") + k), icon_bg="#ea4335", size=50),
            )
        )
    return canvas


def _place_action(place: Place) -> str:
    # App.push/make_action take the page name as their first argument, so a ``name`` param
    # cannot go through them; Maps opens place pages itself (see Maps.on_tap).
    return "place:" + urlencode({"name": place.name, "address": place.address})


def place_card(y: int, place: Place, index: int) -> Node:
    """A search result: name, rating, kind and distance, open/closed, address."""
    card = Node(
        cls="android.view.ViewGroup",
        bounds=(0, y, SCREEN_W, y + 300),
        content_desc=f"{place.name}, {place.rating} stars, {place.distance_text}, {place.status}",
        clickable=True,
        action=_place_action(place),
    )
    tx = PAD + 130
    card.add(
        Node(
            cls="android.view.View",
            bounds=(PAD - 16, y + 30, PAD + 100, y + 130),
            style=Style(icon=chr(ord("A") + index), icon_bg="#ea4335", size=60),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 20, SCREEN_W - PAD, y + 90),
            text=place.name,
            resource_id=f"{MAPS}:id/title",
            style=Style(size=46, bold=True),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 90, SCREEN_W - PAD, y + 150),
            text=f"{place.rating}  ({place.reviews:,})  ·  {place.category}  ·  {place.price}",
            style=Style(size=36, fg="#5f6368"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 150, SCREEN_W - PAD, y + 210),
            text=f"{place.distance_text}  ·  {place.address}",
            style=Style(size=36, fg="#5f6368"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(tx, y + 210, SCREEN_W - PAD, y + 270),
            text=place.status,
            resource_id=f"{MAPS}:id/open_hours",
            style=Style(size=36, fg="#188038" if place.open_now else "#d93025"),
        ),
        Node(
            cls="android.view.View",
            bounds=(0, y + 296, SCREEN_W, y + 298),
            style=Style(bg="#e0e0e0"),
        ),
    )
    return card
