"""Seeded goal generators: new goals for every task family, never a test-split goal.

Each family has sentence patterns taken from its AitW train goals, with slots filled from the
vocabularies in :mod:`distrl_tasks.tasks.generators.vocab`. A generated goal is kept only when

* the parser reads it as the family it was written for (so the simulator can set it up and the
  oracle judge it), and
* it is not a test goal of either task set, compared on normalised text (case, spaces and
  punctuation ignored) *and* on ``(family, params)`` (so "Whats the news in Peru" cannot stand in
  for the test goal "What's the news in Peru?").

Usage::

    goals = generate_goals(1000, seed=0)               # both task sets
    goals = generate_goals(200, seed=1, task_set="webshop")
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence

from distrl_tasks.tasks.base import GENERAL, TASK_SETS, WEBSHOP, GoalParseError
from distrl_tasks.tasks.generators import vocab as V
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.taskset import load_goals

_TIMES = ("today", "tomorrow", "this weekend", "right now", "this week")
_SPANS = ("today", "this week", "the rest of the week", "the rest of the month", "this month")
_SLOTS: dict[str, Sequence[str]] = {
    "city": V.CITIES,
    "country": V.COUNTRIES,
    "currency": V.CURRENCIES,
    "person": V.PEOPLE,
    "channel": V.CHANNELS,
    "product": V.PRODUCTS,
    "item": V.ITEMS,
    "shop": V.SHOPS,
    "site": V.WEBSHOP_SITES,
    "app": V.APPS,
    "place": V.PLACES,
    "cuisine": V.CUISINES,
    "restaurant": V.RESTAURANTS,
    "news": V.NEWS_TOPICS,
    "thing": V.THINGS,
    "wall": V.WALLPAPER_KINDS,
    "device": V.DEVICES,
    "hour": V.HOURS + V.HALF_HOURS,
    "when": _TIMES,
    "span": _SPANS,
    "website": V.WEBSITES,
    "beds": ("1", "2", "3", "4"),
}

# family -> (weight, patterns). Weights follow the AitW general train mix loosely, with the
# question family halved so the rarer families get enough demonstrations to be learnt.
PATTERNS: dict[str, tuple[float, tuple[str, ...]]] = {
    "web_search": (
        0.34,
        (
            "What's the news in {country}?",
            "What's the latest news in {city}?",
            "What's the latest news about {news}?",
            "What's the weather like in {city}?",
            "What's the weather in {city} {when}?",
            "What's a good restaurant in {city}?",
            "What are the best {cuisine} restaurants in {city}?",
            "Find a good {cuisine} restaurant in {city}",
            "What's on the menu at {restaurant}?",
            "Search for hotels in {city}",
            "What are the best hotels in {city}?",
            "How much does a {beds} bedroom apartment rent for in {city}?",
            "Search for flights from {city} to {city}",
            "What's the US dollar exchange rate against the {currency}?",
            "What time is it in {city}?",
            "Show me some nice {wall} wallpapers for my {device}",
            "How much does the {product} cost?",
            "What's the price of the {product}?",
            "Where can I buy a nice {item}?",
            "Who is {person}?",
            "What's the capital of {country}?",
            "Google the capital of {country}",
            "How tall is {thing}?",
            "How old is {thing}?",
            "What is the population of {city}?",
            "Search for {person}",
            "Google {product} reviews",
        ),
    ),
    "youtube_video": (
        0.07,
        (
            "Play the new {person} video on YouTube",
            "What's the latest video from {channel}?",
            "Play the latest video from {channel}",
            "Watch the newest video by {channel} on YouTube",
            "Play {person} songs on YouTube",
        ),
    ),
    "directions": (
        0.06,
        (
            "How do I get to the nearest {place}?",
            "Navigate to the closest {place}",
            "Show me directions to the nearest {place}",
            "Find the nearest {place}",
        ),
    ),
    "maps_search": (
        0.05,
        (
            "Search for {cuisine} restaurants on Maps",
            "Find good {cuisine} restaurants on Google Maps",
            "Look for {cuisine} food on Maps",
        ),
    ),
    "shop_search": (
        0.05,
        (
            "What's the price of the {product} on {shop}?",
            "Search for a new {item} on {shop}",
            "Find a nice {item} on {shop}",
        ),
    ),
    "website": (0.03, ("Go to {website}", "Open {website}", "Visit {website}")),
    "install_app": (0.05, ("Install the {app} app", "Download the {app} app", "Get {app}")),
    "app_settings": (
        0.05,
        ("Check the settings for the {app} app", "Open the settings for {app}"),
    ),
    "open_app": (0.04, ("Open the {app} app", "Launch {app}", "Open {app}")),
    "app_notifications": (
        0.03,
        (
            "Turn off notifications for the {app} app",
            "Turn on notifications for the {app} app",
            "Toggle notifications for the {app} app",
        ),
    ),
    "set_alarm": (
        0.04,
        ("Set an alarm for {hour}", "Set alarm at {hour}", "Add an alarm for {hour}"),
    ),
    "chrome_new": (
        0.02,
        (
            "Open a new tab in Chrome",
            "Open a new window in Chrome",
            "Open a new incognito tab in Google Chrome",
            "Open a new private window in Chrome",
            "Open a new Chrome tab",
            "Open a new incognito window in the Chrome app",
            "Open a new private tab in Google Chrome",
        ),
    ),
    "calendar_view": (
        0.02,
        ("What's on my calendar for {span}?", "Show me my calendar for {span}"),
    ),
    "check_email": (0.02, ("Check my email", "Read my email", "Open my inbox", "Show me my mail")),
    "show_notifications": (
        0.01,
        ("Show my notifications", "Check my notifications", "Show me the recent notifications"),
    ),
    "webshop": (
        1.0,
        (
            "Go to {site}",
            "Go to {site}, search for '{product}'",
            "Go to {site}, search for '{product}', and select the first entry",
            'Go to {site}, search for "{product}"',
            'Go to {site}, search for "{product}", and select the first entry',
        ),
    ),
}
FAMILY_SETS = {f: (WEBSHOP if f == "webshop" else GENERAL) for f in PATTERNS}
_SLOT = re.compile(r"\{(\w+)\}")


def normalise(goal: str) -> str:
    """Lower case, letters and digits only, single spaces ("What's  up?" -> "what s up")."""
    return " ".join(re.findall(r"[a-z0-9]+", goal.lower()))


def task_key(family: str, params: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The identity of a task regardless of wording: family and params, case-folded."""
    return family, tuple(sorted((k, str(v).lower()) for k, v in params.items()))


class HeldOut:
    """The goals generation must avoid: every test goal of both task sets (or the ones given)."""

    def __init__(self, goals: Iterable[str] | None = None, data_dir: str = "") -> None:
        if goals is None:
            goals = [g for ts in TASK_SETS for g in load_goals(ts, "test", data_dir)]
        self.texts: set[str] = set()
        self.keys: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for goal in goals:
            self.texts.add(normalise(goal))
            try:
                task = parse_goal(goal)
            except GoalParseError:
                continue
            self.keys.add(task_key(task.family, task.params))

    def __contains__(self, goal: object) -> bool:
        if not isinstance(goal, str):
            return False
        if normalise(goal) in self.texts:
            return True
        try:
            task = parse_goal(goal)
        except GoalParseError:
            return False
        return task_key(task.family, task.params) in self.keys


def fill(pattern: str, rng: random.Random) -> str:
    """``pattern`` with each ``{slot}`` replaced by a random word of its vocabulary."""

    def pick(m: re.Match[str]) -> str:
        slot = m.group(1)
        if slot not in _SLOTS:
            raise KeyError(f"pattern {pattern!r}: unknown slot {slot!r}")
        return rng.choice(_SLOTS[slot])

    return _SLOT.sub(pick, pattern)


def generate_goals(
    n: int,
    *,
    seed: int = 0,
    task_set: str | None = None,
    families: Sequence[str] | None = None,
    exclude: HeldOut | None = None,
    max_tries: int = 50,
) -> list[str]:
    """``n`` distinct new goals, deterministic for a given ``seed``.

    Args:
        n: how many goals.
        seed: seeds the choice of family, pattern and words.
        task_set: only this task set's families ("general" or "webshop"); None = both, with
            webshop goals at ``1 / (1 + general weight)`` of the mix.
        families: only these families (names of :data:`PATTERNS`).
        exclude: goals never to produce (default: all test goals of both task sets).
        max_tries: attempts per goal before giving up (small families run out of new goals).

    Raises:
        ValueError: unknown task set or family, n < 0, or too few new goals can be written.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if task_set is not None and task_set not in TASK_SETS:
        raise ValueError(f"unknown task set {task_set!r}; expected one of {TASK_SETS}")
    names = list(families) if families is not None else list(PATTERNS)
    unknown = [f for f in names if f not in PATTERNS]
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {', '.join(PATTERNS)}")
    if task_set is not None:
        names = [f for f in names if FAMILY_SETS[f] == task_set]
    if not names:
        raise ValueError(f"no family left to generate (task_set={task_set}, families={families})")
    exclude = exclude if exclude is not None else HeldOut()
    rng = random.Random(seed)
    weights = [PATTERNS[f][0] for f in names]
    out: list[str] = []
    seen: set[str] = set()
    misses = 0
    while len(out) < n:
        family = rng.choices(names, weights)[0]
        goal = fill(rng.choice(PATTERNS[family][1]), rng)
        key = normalise(goal)
        ok = key not in seen and goal not in exclude and _parses_as(goal, family)
        if not ok:
            misses += 1
            if misses > max_tries * max(n, 1):
                raise ValueError(
                    f"generated only {len(out)} of {n} new goals: the patterns of "
                    f"{', '.join(names)} run out of goals that are not test goals"
                )
            continue
        seen.add(key)
        out.append(goal)
    return out


def _parses_as(goal: str, family: str) -> bool:
    try:
        return parse_goal(goal).family == family
    except GoalParseError:
        return False
