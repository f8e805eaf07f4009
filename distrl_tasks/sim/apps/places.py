"""Places for the Maps app: made-up restaurants, shops and chains found by any query.

A query is split into what is wanted and where (``"good pizza places in chicago"`` -> pizza,
Chicago). A proper name ("Burger King") lists branches of that chain; a kind of place lists
made-up places of that kind. Every field of a place follows from its name and address through a
stable hash, so a place looks the same wherever it shows up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distrl_tasks.sim.app import seeded, stable_int
from distrl_tasks.sim.apps.text import clean, display_name, is_proper_name, strip_words

# (words in a query, category shown, name endings for made-up places of that kind)
PLACE_KINDS: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("pizza",), "Pizza restaurant", ("Pizzeria", "Pizza Co.", "Slice House")),
    (("burger", "burgers"), "Hamburger restaurant", ("Burgers", "Burger Bar", "Patty Shack")),
    (("sushi",), "Sushi restaurant", ("Sushi", "Sushi Bar", "Omakase")),
    (("seafood", "fish"), "Seafood restaurant", ("Seafood", "Fish House", "Oyster Bar")),
    (("vegetarian", "vegan"), "Vegetarian restaurant", ("Greens", "Veggie Table", "Plant Kitchen")),
    (("italian",), "Italian restaurant", ("Trattoria", "Osteria", "Cucina")),
    (("chinese",), "Chinese restaurant", ("Dumpling House", "Noodle Bar", "Wok")),
    (("indian",), "Indian restaurant", ("Tandoor", "Curry House", "Masala")),
    (("greek",), "Greek restaurant", ("Taverna", "Gyro House", "Estiatorio")),
    (("korean",), "Korean restaurant", ("Korean BBQ", "Tofu House", "Bibimbap")),
    (("french",), "French restaurant", ("Bistro", "Brasserie", "Creperie")),
    (("japanese",), "Japanese restaurant", ("Izakaya", "Ramen", "Teppanyaki")),
    (("mexican",), "Mexican restaurant", ("Taqueria", "Cantina", "Cocina")),
    (("thai",), "Thai restaurant", ("Thai Kitchen", "Thai Basil", "Thai Orchid")),
    (("coffee", "cafe", "cafes"), "Coffee shop", ("Coffee", "Cafe", "Roasters")),
    (("gas", "fuel"), "Gas station", ("Gas", "Fuel Stop", "Service Station")),
    (("grocery", "groceries", "supermarket"), "Grocery store", ("Market", "Grocers", "Foods")),
    (("electronics",), "Electronics store", ("Electronics", "Tech Store", "Digital")),
    (("hotel", "hotels"), "Hotel", ("Hotel", "Inn", "Suites")),
    (("bar", "bars", "pub"), "Bar", ("Tavern", "Taproom", "Pub")),
    (("restaurant", "restaurants", "food", "dinner", "lunch"), "Restaurant", ("Grill", "Eatery")),
)
_CHAINS = {
    "starbucks": "Coffee shop",
    "mcdonald's": "Fast food restaurant",
    "burger king": "Fast food restaurant",
    "subway": "Sandwich shop",
    "chipotle": "Mexican restaurant",
    "walmart": "Department store",
    "target": "Department store",
    "best buy": "Electronics store",
    "home depot": "Home improvement store",
    "lowe's": "Home improvement store",
    "ikea": "Furniture store",
}
_PREFIXES = ("Golden", "Blue Door", "Olive Tree", "Harbor", "Corner", "Little", "Sunset", "Maple")
_PREFIXES += ("Luigi's", "Rosa's", "Mama Lin's", "Kenji's", "Old Town", "Lucky", "Riverside")
_STREETS = ("Main St", "Oak Ave", "Market St", "Broadway", "Elm St", "Pine St", "Mission Blvd")
_STREETS += ("2nd Ave", "Park Rd", "Lake St", "Cedar Ave", "Washington Blvd", "Valencia St")
_RANKED = ("good", "best", "top rated", "top-rated", "5 star", "five star", "highest rated")
_QUERY_FILLER = (
    *_RANKED,
    "find", "search for", "searchfor", "show me", "what's a", "what's", "whats", "how do i get to",
    "directions to", "navigate to", "the nearest", "nearest", "closest", "near me", "nearby",
    "on google maps", "on maps", "google maps", "maps", "a", "the", "some", "place", "places",
    "spot", "spots", "that's open now", "that's open today", "that's open tomorrow", "that's open",
    "open now", "open",
)  # fmt: skip
DEFAULT_CITY = "Mountain View"


@dataclass(frozen=True)
class Place:
    """A place on the map; every field follows from its name and address."""

    name: str
    address: str
    category: str
    rating: float
    reviews: int
    price: str
    distance_mi: float
    open_now: bool
    hour: int  # closing hour if open, opening hour if closed (12-hour clock)

    @property
    def key(self) -> str:
        return f"{self.name}|{self.address}"

    @property
    def status(self) -> str:
        return (
            f"Open · Closes {self.hour} PM" if self.open_now else f"Closed · Opens {self.hour} AM"
        )

    @property
    def distance_text(self) -> str:
        return f"{self.distance_mi} mi"

    @property
    def blurb(self) -> str:
        return f"{self.category} on {self.address.split(',')[0]}, popular with locals for years."


def kind_of_place(name: str) -> str:
    """The category of a place from its name: a known chain, a made-up name's ending, or Store."""
    low = name.lower()
    if low in _CHAINS:
        return _CHAINS[low]
    for _, category, endings in PLACE_KINDS:
        if any(low.endswith(e.lower()) for e in endings):
            return category
    return "Store"


def place_at(name: str, address: str) -> Place:
    """The place called ``name`` at ``address`` (pure: same inputs, same place)."""
    key = f"{name}|{address}"
    h = stable_int("place", key)
    open_now = h % 4 != 0  # three places in four are open at the simulated 12:30
    return Place(
        name=name,
        address=address,
        category=kind_of_place(name),
        rating=round(3.5 + (h >> 8) % 15 / 10, 1),
        reviews=20 + (h >> 16) % 4000,
        price=("$", "$$", "$$$")[(h >> 28) % 3],
        distance_mi=round(0.2 + (h >> 32) % 80 / 10, 1),
        open_now=open_now,
        hour=(9 + (h >> 40) % 3) if open_now else (6 + (h >> 40) % 4),
    )


def parse_place_query(query: str) -> tuple[str, str]:
    """``"good pizza places in chicago"`` -> ``("pizza", "Chicago")``: what, and which city."""
    text = clean(query).rstrip("?!. ")
    city = DEFAULT_CITY
    match = re.search(r"(?i)\b(?:in|near)\s+(?!me\b)([a-z .'-]+)$", text)
    if match:
        city = display_name(match.group(1))
        text = text[: match.start()]
    return strip_words(text, _QUERY_FILLER), city


def search_places(query: str, count: int = 6) -> list[Place]:
    """Places matching ``query``: branches of a named chain, or made-up places of a kind."""
    what, city = parse_place_query(query)
    words = set(what.lower().split())
    # a proper name ("Burger King", "Best Buy") is a chain, even when it contains a category word
    category = (
        None
        if is_proper_name(what)
        else next((kind for kind in PLACE_KINDS if words & set(kind[0])), None)
    )
    rng = seeded("places", what.lower(), city)
    candidates: list[Place] = []
    for i in range(count * 3):
        address = f"{100 + rng.randrange(8900)} {rng.choice(_STREETS)}, {city}"
        if category is None and what:
            name = display_name(what)
        else:
            endings = category[2] if category else PLACE_KINDS[-1][2]
            prefix = _PREFIXES[(stable_int(what, city) + i) % len(_PREFIXES)]
            name = f"{prefix} {endings[i % len(endings)]}"
        candidates.append(place_at(name, address))
    if "open" in query.lower():
        candidates = [p for p in candidates if p.open_now]
    chosen = candidates[:count]
    if any(word in query.lower() for word in _RANKED):
        return sorted(chosen, key=lambda p: (-p.rating, p.distance_mi))
    return sorted(chosen, key=lambda p: p.distance_mi)
