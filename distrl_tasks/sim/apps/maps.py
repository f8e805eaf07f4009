"""Simulated Google Maps: search places for any query, open a place, get directions.

Pages: ``home``, ``search`` (query), ``place`` (name, address), ``directions`` (destination,
address) and ``navigation`` (destination). Places come from :mod:`.places`: a query naming a
chain ("nearest Starbucks") lists branches of it, a query naming a kind of place ("good pizza
restaurants in Chicago") lists made-up places of that kind in that city.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from distrl_tasks.sim.app import App, Page, Screen, seeded
from distrl_tasks.sim.apps.maps_views import BLUE, map_canvas, place_card
from distrl_tasks.sim.apps.packages import MAPS
from distrl_tasks.sim.apps.places import Place, place_at, search_places
from distrl_tasks.sim.apps.text import clean, wrap
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD, UP_ACTION, app_bar, button, chip, search_field, up_button

SEARCH_ID = f"{MAPS}:id/search_omnibox_text_box"
CATEGORIES = ("Restaurants", "Coffee", "Gas", "Groceries")
MODES = ("Drive", "Transit", "Walk", "Bike")
_SPEED_MPH = {"Drive": 24.0, "Transit": 14.0, "Walk": 3.0, "Bike": 10.0}


class Maps(App):
    """Google Maps with search, place sheets and route planning."""

    package = MAPS
    label = "Maps"
    color = "#34a853"

    def reset(self) -> None:
        super().reset()
        self.mode = MODES[0]
        self.saved: set[str] = set()

    # ----- pages -------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        if page.name == "search":
            return self._results(page.get("query"))
        if page.name == "place":
            return self._place(place_at(page.get("name"), page.get("address")))
        if page.name == "directions":
            return self._directions(place_at(page.get("destination"), page.get("address")))
        if page.name == "navigation":
            return self._navigation(place_at(page.get("destination"), page.get("address")))
        return self._home()

    def _search_header(self, with_up: bool) -> list[Node]:
        x1 = 150 if with_up else PAD
        box = search_field(self, SEARCH_ID, "Search here", y=CONTENT_TOP + 30, x1=x1)
        box.style = Style(
            bg="#ffffff", size=44, radius=64, border="#dadce0", icon="@search", icon_bg="#5f6368"
        )
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 300),
            style=Style(bg="#ffffff"),
        )
        if with_up:
            bar.add(up_button(CONTENT_TOP + 10, CONTENT_TOP + 170))
        x = PAD
        for name in CATEGORIES:
            w = 60 + len(name) * 24
            bar.add(
                chip((x, CONTENT_TOP + 185, x + w, CONTENT_TOP + 275), name, f"category:{name}")
            )
            x += w + 20
        return [bar, box]

    def _home(self) -> Screen:
        header = self._search_header(False)
        top = CONTENT_TOP + 300
        body = [map_canvas((0, top, SCREEN_W, top + 1250), "home", pins=3)]
        y = top + 1250
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y + 20, SCREEN_W - PAD, y + 110),
                text="Explore nearby",
                style=Style(size=44, bold=True),
            )
        )
        y += 120
        for i, place in enumerate(search_places("restaurants")[:3]):
            body.append(place_card(y, place, i))
            y += 300
        return Screen(header=header, body=body)

    def _results(self, query: str) -> Screen:
        header = self._search_header(True)
        top = CONTENT_TOP + 300
        places = search_places(query)
        body = [map_canvas((0, top, SCREEN_W, top + 520), query, pins=min(len(places), 5))]
        y = top + 540
        for i, place in enumerate(places):
            body.append(place_card(y, place, i))
            y += 300
        return Screen(header=header, body=body, loads=True)

    def _place(self, place: Place) -> Screen:
        saved = place.key in self.saved
        header = [app_bar(place.name)]
        top = CONTENT_TOP + 160
        body: list[Node] = [map_canvas((0, top, SCREEN_W, top + 480), place.key, pins=1)]
        y = top + 500
        lines = [
            (place.name, 56, True, "#202124"),
            (
                f"{place.rating} stars  ({place.reviews:,} reviews)  ·  {place.price}",
                38,
                False,
                "#5f6368",
            ),
            (f"{place.category}  ·  {place.distance_text}", 38, False, "#5f6368"),
            (place.status, 38, False, "#188038" if place.open_now else "#d93025"),
        ]
        for text, size, bold, fg in lines:
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + size + 30),
                    text=text,
                    resource_id=f"{MAPS}:id/title" if bold else "",
                    style=Style(size=size, bold=bold, fg=fg),
                )
            )
            y += size + 30
        y += 20
        body.append(
            button(
                (PAD, y, PAD + 400, y + 120),
                "Directions",
                "directions",
                rid=f"{MAPS}:id/directions_button",
            )
        )
        body.append(
            button(
                (PAD + 430, y, PAD + 700, y + 120),
                "Saved" if saved else "Save",
                "save",
                bg="#e8f0fe",
                fg=BLUE,
            )
        )
        y += 160
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD - 16, y, SCREEN_W - PAD, y + 110),
                text=place.address,
                content_desc=f"Address: {place.address}",
                style=Style(size=40, icon="@home", icon_bg=BLUE),
            )
        )
        y += 120
        for line in wrap(place.blurb, 44, lines=3):
            body.append(
                Node(
                    cls="android.widget.TextView",
                    bounds=(PAD, y, SCREEN_W - PAD, y + 64),
                    text=line,
                    style=Style(size=38, fg="#3c4043"),
                )
            )
            y += 64
        return Screen(header=header, body=body, loads=True)

    def _directions(self, place: Place) -> Screen:
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 420),
            style=Style(bg="#ffffff"),
        )
        bar.add(up_button(CONTENT_TOP, CONTENT_TOP + 150))
        for i, (text, rid) in enumerate((("Your location", "start"), (place.name, "destination"))):
            y = CONTENT_TOP + 30 + i * 130
            bar.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(160, y, SCREEN_W - PAD, y + 110),
                    text=text,
                    resource_id=f"{MAPS}:id/directions_{rid}",
                    style=Style(size=42, radius=16, border="#dadce0"),
                )
            )
        x = PAD
        for mode in MODES:
            bar.add(
                chip(
                    (x, CONTENT_TOP + 310, x + 230, CONTENT_TOP + 400),
                    mode,
                    f"mode:{mode}",
                    selected=mode == self.mode,
                )
            )
            x += 250
        top = CONTENT_TOP + 420
        body: list[Node] = [map_canvas((0, top, SCREEN_W, top + 900), "route" + place.key, pins=2)]
        y = top + 930
        minutes = max(1, round(place.distance_mi / _SPEED_MPH[self.mode] * 60))
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y, SCREEN_W - PAD, y + 90),
                text=f"{minutes} min ({place.distance_mi} mi)",
                resource_id=f"{MAPS}:id/route_summary",
                style=Style(size=52, bold=True, fg="#188038"),
            )
        )
        y += 90
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, y, SCREEN_W - PAD, y + 70),
                text=f"Fastest route by {self.mode.lower()} to {place.address}",
                style=Style(size=36, fg="#5f6368"),
            )
        )
        y += 100
        body.append(
            button((PAD, y, PAD + 360, y + 120), "Start", "start", rid=f"{MAPS}:id/start_button")
        )
        return Screen(header=[bar], body=body, loads=True)

    def _navigation(self, place: Place) -> Screen:
        rng = seeded("nav", place.key)
        street = place.address.split(",")[0].split(" ", 1)[-1]
        banner = Node(
            cls="android.widget.TextView",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 260),
            text=f"Head {rng.choice(('north', 'south', 'east', 'west'))} toward {street}",
            resource_id=f"{MAPS}:id/navigation_banner",
            style=Style(bg="#0b8043", fg="#ffffff", size=50, bold=True),
        )
        top = CONTENT_TOP + 260
        body: list[Node] = [map_canvas((0, top, SCREEN_W, top + 1500), "nav" + place.key, pins=1)]
        body.append(
            button(
                (SCREEN_W - PAD - 300, top + 1520, SCREEN_W - PAD, top + 1640),
                "Exit",
                "exit",
                bg="#d93025",
            )
        )
        body.append(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, top + 1520, SCREEN_W - PAD - 320, top + 1640),
                text=f"{place.distance_mi} mi · arriving at {place.name}",
                style=Style(size=40, bold=True),
            )
        )
        return Screen(header=[banner], body=body)

    # ----- events ------------------------------------------------------------------------
    def on_tap(self, action: str) -> None:
        kind, _, arg = action.partition(":")
        page = self.page
        if action == UP_ACTION:
            self.phone.back()
        elif kind == "place":
            params = dict(parse_qsl(arg))
            page = Page(
                "place", {"name": params.get("name", ""), "address": params.get("address", "")}
            )
            if page != self.page:
                self.stack.append(page)
                self.phone.on_navigate(self)
        elif kind == "category":
            self._search(arg)
        elif kind == "mode" and arg in MODES:
            self.mode = arg
        elif action == "directions" and page.name == "place":
            self.push("directions", destination=page.get("name"), address=page.get("address"))
        elif action == "start" and page.name == "directions":
            self.push(
                "navigation", destination=page.get("destination"), address=page.get("address")
            )
        elif action == "exit" and page.name == "navigation":
            self.phone.back()
        elif action == "save" and page.name == "place":
            self.saved ^= {place_at(page.get("name"), page.get("address")).key}
        else:
            super().on_tap(action)

    def _search(self, query: str) -> None:
        self.set_field(SEARCH_ID, query)
        self.show_results("search", query=query)

    def on_submit(self, rid: str, text: str) -> None:
        if rid == SEARCH_ID and clean(text):
            self._search(clean(text))

    def back(self) -> bool:
        moved = super().back()
        if moved:
            self.set_field(SEARCH_ID, self.page.get("query") if self.page.name == "search" else "")
        return moved

    def state_params(self) -> dict[str, str]:
        if self.page.name in ("directions", "navigation"):
            return {"mode": self.mode}
        return {}
