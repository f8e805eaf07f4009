"""Families answered in Maps and YouTube: directions, nearest places, map searches, videos."""

from __future__ import annotations

import re
from collections.abc import Mapping

from distrl_tasks.sim.apps import MAPS, YOUTUBE
from distrl_tasks.sim.apps.places import search_places
from distrl_tasks.sim.state import SimState
from distrl_tasks.tasks.families.text import covers, key_terms, strip_article
from distrl_tasks.tasks.task import Family

_I = re.IGNORECASE


def _terms_or_none(phrase: str, **extra: str) -> dict[str, str] | None:
    terms = key_terms(phrase)
    if not terms:
        return None
    return {**extra, "query": phrase, "terms": " ".join(terms)}


class Directions(Family):
    """ "How do I get to the nearest Verizon Store?", "Find the nearest grocery store".

    Params: ``mode`` ("route" for how-do-I-get-to, "find" for find-the-nearest), ``query`` (the
    place, e.g. "Verizon Store") and its ``terms``. Success for "route": Maps in front on
    "directions" to a destination covering the terms (for a kind of place such as "grocery
    store": to any place Maps lists for it). For "find": Maps showing search results
    for such a query, a place page whose name or query covers them, or directions to it.
    """

    name = "directions"
    _route = re.compile(
        r"^(?:how\s+do\s+i\s+get\s+to|(?:get\s+|show\s+(?:me\s+)?)?directions\s+to|navigate\s+to|"
        r"take\s+me\s+to|how\s+can\s+i\s+get\s+to)\s+(?P<p>.+?)[.?!]*$",
        _I,
    )
    _find = re.compile(
        r"^(?:find|where\s+is|show\s+me)\s+(?:the\s+)?(?P<p>(?:nearest|closest)\s+.+?)"
        r"(?:\s+(?:that'?s|that\s+is|which\s+is)\s+open(?:\s+\w+)?)?[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._route.match(text)
        if m is not None:
            return _terms_or_none(_place(m.group("p")), mode="route")
        m = self._find.match(text)
        if m is not None:
            return _terms_or_none(_place(m.group("p")), mode="find")
        return None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Maps directions to the place (route), or Maps results/place for it (find)."""
        if state.app != MAPS:
            return False
        terms = params["terms"]
        if state.page == "directions":
            return _is_destination(state.param("destination"), params["query"], terms)
        if params["mode"] == "route":
            return False
        if state.page == "search":
            return covers(state.param("query"), terms)
        if state.page == "place":
            return covers(state.param("name"), terms) or covers(state.param("query"), terms)
        return False


def _is_destination(name: str, query: str, terms: str) -> bool:
    """Whether a route to ``name`` answers "get to the nearest <query>".

    A named place (a capitalised query such as "Verizon Store") needs its name in the
    destination. A kind of place ("grocery store") is answered by any place Maps lists for it:
    the simulated map's listing is a pure function of the query, so this stays a pure check.
    """
    if covers(name, terms):
        return True
    if query != query.lower():
        return False
    return any(place.name == name for place in search_places(query))


def _place(phrase: str) -> str:
    """``"the nearest Verizon Store"`` -> ``"Verizon Store"``."""
    phrase = strip_article(phrase)
    return re.sub(r"^(?:nearest|closest)\s+", "", phrase, flags=_I).strip()


class MapsSearch(Family):
    """ "Search for 5 star sushi restaurants on Maps", "Find coffee shops on Google Maps".

    Params: ``query`` (what to search, e.g. "5 star sushi restaurants") and ``terms`` (its key
    terms without qualifiers such as "5 star", "top rated", "good"). Success: Maps in front on
    "search" with a covering query, or on a place opened from such a search.
    """

    name = "maps_search"
    _re = re.compile(
        r"^(?:search\s+for|find|show\s+(?:me\s+)?|look\s+for|look\s+up)\s+(?P<q>.+?)\s+"
        r"(?:on|in|using)\s+(?:the\s+)?(?:google\s+)?maps?(?:\s+app)?[.?!]*$",
        _I,
    )

    def match(self, text: str) -> dict[str, str] | None:
        m = self._re.match(text)
        return None if m is None else _terms_or_none(strip_article(m.group("q")))

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: Maps "search" (or a "place" from it) for a query covering the terms."""
        if state.app != MAPS or state.page not in ("search", "place"):
            return False
        return covers(state.param("query"), params["terms"])


class YouTubeVideo(Family):
    """ "Play the new Drake video on YouTube", "Play the latest video from the BBC", "What's the
    latest video from IGN?", "Play some music on YouTube".

    Params: ``mode`` ("channel" when the goal names who published it, else "query"), ``query``
    (the artist, channel or topic), ``terms`` and ``play`` ("1" when the goal says play/watch,
    then the video must be playing). Success: YouTube in front on a "video" page;
    for "channel" its channel covers the terms, otherwise its title, channel or the search that
    led there does.
    """

    name = "youtube_video"
    _channel = re.compile(
        r"^(?:play|watch|show\s+me|what'?s|what\s+is|find)\s+the\s+(?:latest|newest|new|most\s+"
        r"recent)\s+video\s+(?:from|by|of)\s+(?P<q>.+?)(?:\s+on\s+youtube)?[.?!]*$",
        _I,
    )
    _artist = re.compile(
        r"^(?:play|watch|show\s+me)\s+the\s+(?:new|latest|newest)\s+(?P<q>.+?)\s+"
        r"(?:music\s+)?video\s+on\s+youtube[.?!]*$",
        _I,
    )
    _any = re.compile(
        r"^(?:play|watch)\s+(?:some\s+|a\s+|an\s+|the\s+)?(?P<q>.+?)\s+on\s+youtube[.?!]*$", _I
    )

    def match(self, text: str) -> dict[str, str] | None:
        play = "1" if re.match(r"^(?:play|watch)\b", text, _I) else "0"
        m = self._channel.match(text)
        if m is not None:
            return _terms_or_none(strip_article(m.group("q")), mode="channel", play=play)
        for pattern in (self._artist, self._any):
            m = pattern.match(text)
            if m is not None:
                return _terms_or_none(strip_article(m.group("q")), mode="query", play=play)
        return None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Success: YouTube "video" page from the channel / matching title, channel or search."""
        if state.app != YOUTUBE or state.page != "video":
            return False
        if params["play"] == "1" and not state.playing:
            return False  # "Play ..." needs the video playing, not paused
        terms = params["terms"]
        if params["mode"] == "channel":
            return covers(state.param("channel"), terms)
        seen = " ".join(state.param(k) for k in ("title", "channel", "query"))
        return covers(seen, terms)
