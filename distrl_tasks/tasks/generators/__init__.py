"""Seeded goal generators: new goals for every task family, never a test-split goal.

Each family has sentence patterns taken from its AitW train goals, with slots filled from the
vocabularies in :mod:`distrl_tasks.tasks.generators.vocab`. A generated goal is kept only when

* the parser reads it as the family it was written for (so the simulator can set it up and the
  oracle judge it),
* some agent can solve it (:func:`solvable`: installing the Play Store is not), and
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
from dataclasses import dataclass

from distrl_tasks.sim.apps import PLAY_STORE
from distrl_tasks.tasks.generators import vocab as V
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GENERAL, TASK_SETS, WEBSHOP, GoalParseError
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
    "this_span": ("today", "this week", "this month"),
    "website": V.WEBSITES,
    "beds": ("1", "2", "3", "4"),
    # phrasings of the slot-free families (their few fixed sentences are nearly all test goals)
    "chrome": ("Chrome", "Google Chrome", "the Chrome app", "the Google Chrome app", "chrome"),
    "tabkind": (
        "tab",
        "window",
        "incognito tab",
        "incognito window",
        "private tab",
        "private window",
    ),
    "mailbox": (
        "email",
        "emails",
        "e-mail",
        "gmail",
        "mail",
        "inbox",
        "email inbox",
        "gmail inbox",
        "mail inbox",
    ),
    "notes_verb": ("Show", "Show me", "Open", "Check", "See"),
    "notes_whose": ("my ", "the ", "all ", "my recent ", "the recent "),
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
            "Open a new {tabkind} in {chrome}",
            "Open a new {tabkind} on {chrome}",
            "Open a new Chrome {tabkind}",
            "Open a new Google Chrome {tabkind}",
        ),
    ),
    "calendar_view": (
        0.02,
        (
            "What's on my calendar for {span}?",
            "Whats on my calendar for {span}",
            "Show me my calendar for {span}",
            "Show my calendar for {span}",
            "Open the calendar and show me {this_span}'s events",
            "Open my calendar and show me {this_span}'s events",
            "Open calendar and show {this_span}'s events",
        ),
    ),
    "check_email": (
        0.02,
        ("Check my {mailbox}", "Read my {mailbox}", "Open my {mailbox}", "Show me my {mailbox}"),
    ),
    "show_notifications": (0.01, ("{notes_verb} {notes_whose}notifications",)),
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
    """The goals generation must avoid: every test goal of both task sets (or the ones given).

    Args:
        goals: the goals to avoid (default: the test goals of both task sets).
        data_dir: where the test goal files are (empty: the packaged ones).
        match_tasks: also avoid other wordings of the same task (``(family, params)``); False
            avoids only the text itself (case, spaces and punctuation ignored).
    """

    def __init__(
        self, goals: Iterable[str] | None = None, data_dir: str = "", *, match_tasks: bool = True
    ) -> None:
        if goals is None:
            goals = [g for ts in TASK_SETS for g in load_goals(ts, "test", data_dir)]
        self.texts: set[str] = set()
        self.keys: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for goal in goals:
            self.texts.add(normalise(goal))
            if not match_tasks:
                continue
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
        if not self.keys:
            return False
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


def solvable(family: str, params: Mapping[str, str]) -> bool:
    """Whether an agent can solve the task at all: installing the Play Store cannot be done
    (the task's setup uninstalls the store the app would be installed from)."""
    return not (family == "install_app" and params.get("package") == PLAY_STORE)


def _parses_as(goal: str, family: str) -> bool:
    """Whether ``goal`` reads as ``family`` and is :func:`solvable`."""
    try:
        task = parse_goal(goal)
    except GoalParseError:
        return False
    return task.family == family and solvable(task.family, task.params)


SEARCH_SHARE = 0.2  # web_search's share of a balanced General corpus (AitW's train file: 66%)


@dataclass(frozen=True)
class Corpus:
    """Goals of one task set for building a base: ``train`` (repeats allowed, family-balanced)
    and ``heldout`` (distinct texts in neither ``train`` nor the test files), by family."""

    train: list[str]
    heldout: list[str]
    families: dict[str, dict[str, int]]  # family -> {"train": goals, "distinct": texts, "heldout"}


def family_shares(task_set: str, search_share: float = SEARCH_SHARE) -> dict[str, float]:
    """Each family's share of a balanced corpus: web search ``search_share`` (when the task set
    has other families), the rest split equally."""
    names = [f for f in PATTERNS if FAMILY_SETS[f] == task_set]
    if not names:
        raise ValueError(f"unknown task set {task_set!r}; expected one of {TASK_SETS}")
    others = [f for f in names if f != "web_search"]
    if len(others) == len(names) or not others:
        return {f: 1.0 / len(names) for f in names}
    if not 0.0 < search_share < 1.0:
        raise ValueError(f"search_share must be in (0, 1), got {search_share}")
    return {f: (search_share if f == "web_search" else (1 - search_share) / len(others))
            for f in names}  # fmt: skip


def balanced_corpus(
    task_set: str,
    n_train: int,
    heldout_per_family: int,
    *,
    seed: int = 0,
    search_share: float = SEARCH_SHARE,
    exclude: HeldOut | None = None,
    extra: Sequence[str] = (),
) -> Corpus:
    """A family-balanced set of training goals and a held-out set, per family.

    Every family gets ``share * n_train`` training goals (:func:`family_shares`). The pool of a
    family is its distinct generated texts plus the goals of ``extra`` that parse as it (e.g. the
    AitW train file); only the *text* of test goals is excluded (``exclude``, default: every
    test goal of both task sets, text only), so a slot-free family such as "open a new Chrome
    tab" keeps the wordings the test file lacks. Up to ``heldout_per_family`` texts of each pool
    (a third of it at most, one of a pool of two) are held out; the rest are repeated as needed
    to fill the family's share, so a family with few wordings still gets its demonstrations.

    Raises:
        ValueError: unknown task set, negative sizes, or a family with no goal left to train on.
    """
    if n_train < 0 or heldout_per_family < 0:
        raise ValueError(f"sizes must be >= 0, got {n_train} and {heldout_per_family}")
    shares = family_shares(task_set, search_share)
    exclude = exclude if exclude is not None else HeldOut(match_tasks=False)
    rng = random.Random(seed)
    pools: dict[str, list[str]] = {f: [] for f in shares}
    seen: set[str] = set()
    for goal in extra:
        try:
            task = parse_goal(goal)
        except GoalParseError:
            continue
        family, key = task.family, normalise(goal)
        fits = family in pools and solvable(family, task.params)
        if fits and key not in seen and goal not in exclude:
            seen.add(key)
            pools[family].append(goal)
    train: list[str] = []
    heldout: list[str] = []
    families: dict[str, dict[str, int]] = {}
    quotas = _quotas(shares, n_train)
    for family in shares:
        quota = quotas[family]
        pool = pools[family]
        want = quota + heldout_per_family
        misses = 0
        while len(pool) < want and misses < 50 * max(want, 1):
            goal = fill(rng.choice(PATTERNS[family][1]), rng)
            key = normalise(goal)
            if key in seen or goal in exclude or not _parses_as(goal, family):
                misses += 1
                continue
            seen.add(key)
            pool.append(goal)
        rng.shuffle(pool)
        n_held = min(heldout_per_family, max(len(pool) // 3, min(len(pool) - 1, 1)))
        held, rest = pool[:n_held], pool[n_held:]
        if quota and not rest:
            raise ValueError(f"family {family}: no goal left to train on (all are test goals)")
        chosen = [rest[i % len(rest)] for i in range(quota)] if rest else []
        train += chosen
        heldout += held
        families[family] = {"train": len(chosen), "distinct": len(set(chosen)), "heldout": n_held}
    rng.shuffle(train)
    return Corpus(train=train, heldout=heldout, families=families)


def _quotas(shares: Mapping[str, float], n: int) -> dict[str, int]:
    """``n`` split by ``shares`` into integers that sum to ``n`` (largest remainders first)."""
    exact = {f: share * n for f, share in shares.items()}
    out = {f: int(v) for f, v in exact.items()}
    by_remainder = sorted(shares, key=lambda f: (out[f] - exact[f], f))
    for family in by_remainder[: n - sum(out.values())]:
        out[family] += 1
    return out
