"""Goal parsing: every AitW line parses, new phrasings and entities parse, bad text is refused."""

from __future__ import annotations

import pytest

from distrl_tasks.sim.apps import FILES, MAPS, MESSAGES, PHOTOS, PLAY_STORE
from distrl_tasks.tasks import GoalParseError, load_goals, parse_goal, unique_goals
from distrl_tasks.tasks.families.names import parse_time, resolve_app, site_domain
from distrl_tasks.tasks.families.text import clean_goal, covers, key_terms
from distrl_tasks.tasks.taskset import goal_file


@pytest.mark.parametrize("task_set", ["general", "webshop"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_every_aitw_line_parses(task_set: str, split: str) -> None:
    goals = load_goals(task_set, split)
    for goal in unique_goals(goals):
        task = parse_goal(goal)
        assert task.goal == goal
        assert task.task_set == task_set, goal


def test_task_set_sizes_match_the_papers() -> None:
    assert len(load_goals("general", "train")) == 545
    assert len(load_goals("general", "test")) == 432
    assert len(load_goals("webshop", "train")) == 438
    assert len(load_goals("webshop", "test")) == 360


def test_load_goals_errors(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown task set 'shopping'"):
        load_goals("shopping", "train")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        load_goals("general", "dev")
    with pytest.raises(FileNotFoundError, match="general/test"):
        load_goals("general", "test", data_dir=tmp_path)
    (tmp_path / "general_test.txt").write_text("\n  \n")
    with pytest.raises(ValueError, match="holds no goals"):
        load_goals("general", "test", data_dir=tmp_path)
    (tmp_path / "general_test.txt").write_text("Open the clock\n\nOpen the camera\n")
    assert load_goals("general", "test", data_dir=str(tmp_path)) == [
        "Open the clock",
        "Open the camera",
    ]
    assert goal_file("webshop", "train").name == "webshop_train.txt"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Searchfor good French restaurants", "Search for good French restaurants"),
        ("Set an alarmfor 5pm", "Set an alarm for 5pm"),
        ("What's US dollar exchange rateagainst the Mexican Peso?", "rate against the"),
        ("How much does a3 bedroom apartment rent for in Portland?", "a 3 bedroom"),
        ("What's the weather like inToronto?", "in Toronto"),
        ("What's the news in theFalkland Islands?", "the Falkland"),
        ("How much does the HisenseTV cost?", "Hisense TV"),
        ("Checkthe settings for the Amazon Prime Music app", "Check the settings"),
        ("What's a goodrestaurant in Austin?", "good restaurant"),
        ("What is the speed of a bicycle?Search for hotels in Washington DC", "bicycle?"),
    ],
)
def test_clean_goal_repairs_typos(raw: str, clean: str) -> None:
    assert clean in clean_goal(raw)


def test_clean_goal_leaves_real_words_alone() -> None:
    text = "Go into the GameSpot page of McDonalds on eBay with an iPhone"
    assert clean_goal(text) == text


@pytest.mark.parametrize(
    ("goal", "family", "params"),
    [
        # new entities and phrasings, not in the AitW files
        ("What's the weather like in Reykjavik?", "web_search", {"terms": "weather reykjavik"}),
        ("WHAT IS THE CAPITAL OF PERU", "web_search", {"topic": "capitals"}),
        ("Search for flights from Oslo to Lima", "web_search", {"src": "oslo", "dst": "lima"}),
        ("Set an alarm for 7:45 am", "set_alarm", {"time": "07:45"}),
        ("Set an alarm for 12am", "set_alarm", {"time": "00:00"}),
        ("Install the Duolingo app", "install_app", {"app": "Duolingo", "package": ""}),
        ("Open the gallery app", "open_app", {"app": "Photos", "package": PHOTOS}),
        ("Open the text messages app", "open_app", {"package": MESSAGES}),
        ("Open the downloads", "open_app", {"package": FILES, "page": "downloads"}),
        ("Open Netflix", "open_app", {"app": "Netflix", "package": ""}),
        ("Open the Google Play Store", "open_app", {"package": PLAY_STORE}),
        ("Check the settings for the Waze app", "app_settings", {"app": "Waze"}),
        ("Disable notifications for the Gmail app", "app_notifications", {"mode": "off"}),
        ("Turn on notifications for Google Maps", "app_notifications", {"package": MAPS}),
        ("Open a new private window in Chrome", "chrome_new", {"kind": "window", "incognito": "1"}),
        ("Open a new tab in Google Chrome", "chrome_new", {"kind": "tab", "incognito": "0"}),
        ("How do I get to the nearest Costco?", "directions", {"mode": "route", "query": "Costco"}),
        ("Find the nearest pharmacy that's open now", "directions", {"query": "pharmacy"}),
        ("Search for ramen shops on Google Maps", "maps_search", {"terms": "ramen shop"}),
        ("Play the new Adele video on YouTube", "youtube_video", {"mode": "query"}),
        ("What's the latest video from Vox?", "youtube_video", {"mode": "channel", "query": "Vox"}),
        ("Find a used bicycle on Craigslist", "shop_search", {"site": "craigslist.org"}),
        ("Search for a new moisturizer on Ulta", "shop_search", {"site": "ulta.com"}),
        ("Go to Wikipedia", "website", {"site": "wikipedia.org"}),
        ("What's on Hackaday today", "website", {"site": "hackaday.com"}),
        ("What's on my calendar for today?", "calendar_view", {"view": "day"}),
        ("Check my e-mail", "check_email", {}),
        ("Show my notifications", "show_notifications", {}),
        ("Who is the chancellor of Germany?", "web_search", {"topic": "people"}),
        ("Go to target.com, search for 'lego star wars'", "webshop", {"step": "search"}),
        (
            'Go to amazon.com, search for "kindle", and select the first entry',
            "webshop",
            {"site": "amazon.com", "query": "kindle", "step": "select"},
        ),
        ("Go to etsy.com", "webshop", {"site": "etsy.com", "step": "home", "query": ""}),
    ],
)
def test_new_phrasings_and_entities(goal: str, family: str, params: dict[str, str]) -> None:
    task = parse_goal(goal)
    assert task.family == family
    for key, value in params.items():
        assert task.params[key] == value, (goal, key, dict(task.params))


@pytest.mark.parametrize("bad", ["", "   ", "Blorp the frobnicator", "Set an alarm for 25pm"])
def test_unparseable_goals_raise_a_clear_error(bad: str) -> None:
    with pytest.raises(GoalParseError, match=r"goal is empty|cannot parse goal"):
        parse_goal(bad)


def test_non_string_goal_is_refused() -> None:
    with pytest.raises(GoalParseError, match="must be a string"):
        parse_goal(42)  # type: ignore[arg-type]


def test_task_is_frozen_with_read_only_params() -> None:
    task = parse_goal("Set an alarm for 6pm")
    assert task.params["time"] == "18:00" and task.max_steps == 10
    with pytest.raises(TypeError):
        task.params["time"] = "07:00"  # type: ignore[index]
    assert parse_goal("Go to ebay.com").max_steps == 20


def test_vocabularies() -> None:
    assert resolve_app("the SMS app").package == MESSAGES
    assert resolve_app("Google Maps").label == "Maps"
    assert resolve_app("the Pandora app").label == "Pandora"
    assert resolve_app("spotify").label == "Spotify"
    assert site_domain("eBay") == "ebay.com" and site_domain("www.Newegg.com") == "newegg.com"
    assert parse_time("6pm") == "18:00" and parse_time("noon") == "12:00"
    assert parse_time("18:30") == "18:30"
    with pytest.raises(ValueError, match="not a time"):
        parse_time("soon")
    with pytest.raises(ValueError, match="does not fit"):
        parse_time("13pm")


def test_key_terms_keep_names_and_drop_qualifiers() -> None:
    assert key_terms("Search for top rated sushi restaurants") == ["sushi", "restaurant"]
    assert key_terms("5 star sushi restaurants") == ["sushi", "restaurant"]
    assert key_terms("hotels in New York") == ["hotel", "new", "york"]
    assert key_terms("the nearest Best Buy") == ["nearest", "best", "buy"]
    assert key_terms("What's the news today?") == ["new"]  # "news" stems, "today" is soft
    assert covers("Samsung TV price", "samsung tv price")
    assert covers("how much does the samsung tv cost", "samsung tv price")  # cost ~ price
    assert not covers("samsung phone", "samsung tv")
    assert not covers("", [])
