"""Success predicates on hand-built SimState values: a positive and negative case per family."""

from __future__ import annotations

import pytest

from distrl_tasks.sim.apps import (
    APP_CLASSES,
    CALENDAR,
    CHROME,
    CLOCK,
    FILES,
    GENERIC,
    GMAIL,
    LAUNCHER,
    MAPS,
    SETTINGS,
    YOUTUBE,
)
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.state import SimState
from distrl_tasks.tasks import parse_goal
from distrl_tasks.tasks.families.names import SYSTEM_LABELS


def chrome(page: str, **params: str) -> SimState:
    return SimState(app=CHROME, app_label="Chrome", page=page, params={"incognito": "0", **params})


CASES: list[tuple[str, SimState, bool]] = [
    # information questions: a Google results page whose query has the key terms
    ("What's the weather like in Seoul?", chrome("serp", query="weather seoul"), True),
    (
        "What's the weather like in Seoul?",
        chrome("serp", query="What's the weather like in Seoul"),
        True,
    ),
    ("What's the weather like in Seoul?", chrome("serp", query="weather tokyo"), False),
    ("What's the weather like in Seoul?", chrome("home"), False),
    (
        "What's the weather like in Seoul?",
        SimState(app=MAPS, page="search", params={"query": "weather seoul"}),
        False,
    ),
    ("Search for top rated sushi restaurant", chrome("serp", query="sushi restaurants"), True),
    ("How much does the Samsung TV cost?", chrome("serp", query="samsung tv price"), True),
    ("How much does the Samsung TV cost?", chrome("serp", query="samsung tv"), False),
    (
        "Search for flights from NYC to Paris",
        chrome("serp", query="flights from NYC to Paris"),
        True,
    ),
    ("Search for flights from NYC to Paris", chrome("serp", query="flights Paris to NYC"), False),
    (
        "What's the news in the Dominican Republic?",
        chrome("serp", query="dominican republic news"),
        True,
    ),
    # web sites
    ("Go to Reddit", chrome("site_home", site="reddit.com"), True),
    (
        "What's the top post on reddit today?",
        chrome("web", url="https://www.reddit.com/r/all"),
        True,
    ),
    ("Open Reddit", chrome("serp", query="reddit"), False),
    ("Open Reddit", chrome("web", url="https://notreddit.com/"), False),
    # shopping on one site
    ("Find a nice sofa on eBay", chrome("site_results", site="ebay.com", query="sofa"), True),
    ("Find a nice sofa on eBay", chrome("site_results", site="walmart.com", query="sofa"), False),
    (
        "What does the iPhone 8 look like on eBay?",
        chrome("site_product", site="ebay.com", query="iphone 8", item="2"),
        True,
    ),
    (
        "What does the iPhone 8 look like on eBay?",
        chrome("site_results", site="ebay.com", query="iphone"),
        False,
    ),
    # webshop
    ("Go to newegg.com", chrome("site_home", site="newegg.com"), True),
    ("Go to newegg.com", chrome("site_home", site="ebay.com"), False),
    (
        'Go to ebay.com, search for "razer kraken"',
        chrome("site_results", site="ebay.com", query="Razer  Kraken"),
        True,
    ),
    (
        'Go to ebay.com, search for "razer kraken"',
        chrome("site_results", site="ebay.com", query="razer"),
        False,
    ),
    (
        'Go to ebay.com, search for "razer kraken"',
        chrome("site_home", site="ebay.com", query="razer kraken"),
        False,
    ),
    (
        "Go to costco.com, search for 'usb-c to usb-b', and select the first entry",
        chrome("site_product", site="costco.com", query="usb-c to usb-b", item="0"),
        True,
    ),
    (
        "Go to costco.com, search for 'usb-c to usb-b', and select the first entry",
        chrome("site_product", site="costco.com", query="usb-c to usb-b", item="1"),
        False,
    ),
    # maps
    (
        "How do I get to the nearest Verizon Store?",
        SimState(app=MAPS, page="directions", params={"destination": "Verizon Store - 5th Ave"}),
        True,
    ),
    (
        "How do I get to the nearest Verizon Store?",
        SimState(app=MAPS, page="search", params={"query": "verizon store"}),
        False,
    ),
    (
        "Find the nearest grocery store",
        SimState(app=MAPS, page="search", params={"query": "grocery store"}),
        True,
    ),
    (
        "Find the nearest grocery store",
        SimState(app=MAPS, page="place", params={"name": "FreshCo Grocery Store"}),
        True,
    ),
    ("Find the nearest grocery store", SimState(app=MAPS, page="home"), False),
    (
        "Search for 5 star sushi restaurants on Maps",
        SimState(app=MAPS, page="search", params={"query": "sushi restaurants"}),
        True,
    ),
    (
        "Search for 5 star sushi restaurants on Maps",
        chrome("serp", query="5 star sushi restaurants"),
        False,
    ),
    # youtube
    (
        "Play the new Bruno Mars video on YouTube",
        SimState(
            app=YOUTUBE,
            page="video",
            params={
                "title": "Bruno Mars - Gold (Official Video)",
                "channel": "Bruno Mars",
                "query": "bruno mars",
            },
            playing="x",
        ),
        True,
    ),
    (
        "Play the new Bruno Mars video on YouTube",
        SimState(
            app=YOUTUBE,
            page="video",
            params={"title": "Bruno Mars - Gold", "channel": "Bruno Mars"},
            playing="",
        ),
        False,
    ),
    (
        "Play the new Bruno Mars video on YouTube",
        SimState(app=YOUTUBE, page="search", params={"query": "bruno mars"}),
        False,
    ),
    (
        "What's the latest video from GameSpot Reviews?",
        SimState(app=YOUTUBE, page="video", params={"title": "T", "channel": "GameSpot Reviews"}),
        True,
    ),
    (
        "What's the latest video from GameSpot Reviews?",
        SimState(
            app=YOUTUBE,
            page="video",
            params={"title": "GameSpot Reviews reaction", "channel": "Music Reacts"},
        ),
        False,
    ),
    (
        "Play some music on YouTube",
        SimState(
            app=YOUTUBE,
            page="video",
            params={"title": "Adele - Hello", "channel": "Adele", "query": "music"},
            playing="Adele - Hello",
        ),
        True,
    ),
    # device
    ("Set an alarm for 6pm", SimState(app=CLOCK, alarms=("07:00", "18:00")), True),
    ("Set an alarm for 6pm", SimState(app=CLOCK, alarms=("06:00",)), False),
    (
        "Open a new incognito tab in Chrome",
        SimState(
            app=CHROME, params={"incognito": "1"}, chrome_incognito_tabs=1, initial_chrome=(1, 0, 1)
        ),
        True,
    ),
    (
        "Open a new incognito tab in Chrome",
        SimState(app=CHROME, params={"incognito": "0"}, chrome_tabs=2, initial_chrome=(1, 0, 1)),
        False,
    ),
    (
        "Open a new Chrome window",
        SimState(app=CHROME, params={"incognito": "0"}, chrome_windows=2, initial_chrome=(1, 0, 1)),
        True,
    ),
    (
        "Open a new tab in Chrome",
        SimState(app=CHROME, params={"incognito": "0"}, chrome_tabs=3, initial_chrome=(2, 0, 1)),
        True,
    ),
    (
        "Open a new tab in Chrome",
        SimState(app=LAUNCHER, chrome_tabs=3, initial_chrome=(2, 0, 1)),
        False,
    ),
    (
        "Open a new tab in Chrome",
        SimState(app=CHROME, params={"incognito": "0"}, chrome_tabs=2, initial_chrome=(2, 0, 1)),
        False,
    ),
    (
        "Toggle notifications for the Google Maps app",
        SimState(notifications={"Maps": False}, initial_notifications={"Maps": True}),
        True,
    ),
    (
        "Toggle notifications for the Google Maps app",
        SimState(notifications={"Maps": True}, initial_notifications={"Maps": True}),
        False,
    ),
    (
        "Turn off notifications for the Google Maps app",
        SimState(notifications={"Maps": False}),
        True,
    ),
    (
        "Turn on notifications for the Google Maps app",
        SimState(notifications={"Maps": False}),
        False,
    ),
    (
        "Check the settings for the Pandora app",
        SimState(app=SETTINGS, page="app_info", params={"app": "Pandora"}),
        True,
    ),
    ("Check the settings for the Pandora app", SimState(app=SETTINGS, page="apps"), False),
    (
        "Check the settings for the Google Maps app",
        SimState(app=SETTINGS, page="app_info", params={"app": "Maps"}),
        True,
    ),
    ("Install the Pandora app", SimState(installed=frozenset({"Chrome", "Pandora"})), True),
    ("Install the Pandora app", SimState(installed=frozenset({"Chrome"})), False),
    ("Open the SMS app", SimState(app="com.google.android.apps.messaging"), True),
    ("Open the SMS app", SimState(app=GMAIL), False),
    ("Open the downloads", SimState(app=FILES, page="downloads"), True),
    ("Open the downloads", SimState(app=FILES, page="home"), False),
    ("Open Netflix", SimState(app=GENERIC, params={"label": "Netflix"}), True),
    ("Open Netflix", SimState(app=GENERIC, params={"label": "WhatsApp"}), False),
    (
        "What's on my calendar for the rest of the month?",
        SimState(app=CALENDAR, page="month"),
        True,
    ),
    (
        "What's on my calendar for the rest of the month?",
        SimState(app=CALENDAR, page="week"),
        False,
    ),
    ("Check my gmail inbox", SimState(app=GMAIL, page="inbox"), True),
    ("Check my gmail inbox", SimState(app=GMAIL, page="message"), False),
    ("Show me my notifications", SimState(shade_open=True), True),
    ("Show me my notifications", SimState(), False),
]


@pytest.mark.parametrize(("goal", "state", "expected"), CASES)
def test_predicate(goal: str, state: SimState, expected: bool) -> None:
    assert parse_goal(goal).check(state) is expected


def test_every_family_has_a_positive_and_a_negative_case() -> None:
    seen: dict[str, set[bool]] = {}
    for goal, _, expected in CASES:
        seen.setdefault(parse_goal(goal).family, set()).add(expected)
    from distrl_tasks.tasks.families import FAMILY_NAMES

    assert {name: {True, False} for name in FAMILY_NAMES} == seen


def test_setup_preconditions_on_a_real_phone() -> None:
    phone = Phone()
    phone.set_task(parse_goal("Install the Calendar app"))
    assert "Calendar" not in phone.installed
    assert phone.check_task()["success"] is False
    phone.set_task(parse_goal("Check the settings for the Pandora app"))
    assert "Pandora" in phone.installed
    phone.set_task(parse_goal("Turn on notifications for the Google Maps app"))
    assert phone.notifications["Maps"] is False
    phone.set_task(parse_goal("Turn off notifications for the Google Maps app"))
    assert phone.notifications["Maps"] is True
    phone.set_task(parse_goal("Set an alarm for 7am"))
    assert phone.alarms.get("07:00") is False
    phone.alarms["07:00"] = True
    assert phone.check_task()["success"] is True
    assert phone.check_task()["family"] == "set_alarm"


def test_system_labels_agree_with_the_app_classes() -> None:
    labels = {cls.package: cls.label for cls in APP_CLASSES}
    for package, label in SYSTEM_LABELS.items():
        if package in labels:  # apps are added one module at a time
            assert labels[package] == label, package
