"""Play Store, YouTube, Gmail, Maps and Settings driven through a real Phone: taps, text, keys."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from distrl_tasks.sim.app import stable_int
from distrl_tasks.sim.apps import GMAIL, MAPS, PLAY_STORE, SETTINGS, YOUTUBE
from distrl_tasks.sim.apps.places import search_places
from distrl_tasks.sim.apps.playstore import best_match, search_results
from distrl_tasks.sim.apps.text import display_name, strip_words
from distrl_tasks.sim.apps.youtube_videos import entity_of, search_videos
from distrl_tasks.sim.phone import KEYCODE_BACK, KEYCODE_ENTER, Phone
from distrl_tasks.sim.ui import Node


def find(phone: Phone, key: str) -> Node:
    """The first on-screen node whose text, content-desc or resource-id is ``key``."""
    for node in phone.compose().walk():
        if key in (node.text, node.content_desc, node.resource_id):
            return node
    raise AssertionError(f"no node {key!r} on screen {phone.state().page}")


def tap(phone: Phone, key: str) -> None:
    x1, y1, x2, y2 = find(phone, key).bounds
    phone.tap((x1 + x2) / 2, (y1 + y2) / 2)


def search(phone: Phone, field: str, text: str) -> None:
    tap(phone, field)
    phone.input_text(text)
    phone.keyevent(KEYCODE_ENTER)


@pytest.fixture
def phone() -> Phone:
    return Phone()


# ----- Play Store --------------------------------------------------------------------------------
def test_play_store_installs_an_arbitrary_app(phone: Phone) -> None:
    assert phone.launch(PLAY_STORE)
    search(phone, f"{PLAY_STORE}:id/search_bar", "zorblax notes")
    state = phone.state()
    assert (state.page, state.param("query")) == ("search", "zorblax notes")
    tap(phone, "Zorblax Notes")  # the best match is listed first, in display case
    assert (phone.state().page, phone.state().param("app")) == ("app", "Zorblax Notes")
    assert "Zorblax Notes" not in phone.installed
    tap(phone, "Install")
    assert "Zorblax Notes" in phone.state().installed
    assert phone.notifications["Zorblax Notes"] is True
    find(phone, "Uninstall")
    tap(phone, "Open")  # no simulated screens: the launcher's generic app shows it
    assert phone.state().params.get("label") == "Zorblax Notes"


def test_play_store_uninstall_and_catalog_spelling(phone: Phone) -> None:
    assert best_match("the ebay app") == "eBay"
    assert best_match("pandora") == "Pandora"
    results = search_results("amazon")
    assert results[0] == "Amazon" and "Amazon Shopping" in results[1:4]
    assert len(results) == len(set(results)) == 8
    phone.launch(PLAY_STORE)
    search(phone, f"{PLAY_STORE}:id/search_bar", "netflix")
    tap(phone, "Netflix")
    tap(phone, "Uninstall")
    assert "Netflix" not in phone.installed and "Netflix" not in phone.notifications
    find(phone, "Install")


def test_play_store_back_returns_through_results_to_home(phone: Phone) -> None:
    phone.launch(PLAY_STORE)
    search(phone, f"{PLAY_STORE}:id/search_bar", "Pandora")
    tap(phone, "Pandora")
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "search"
    tap(phone, "Navigate up")
    assert phone.state().page == "home"
    assert find(phone, f"{PLAY_STORE}:id/search_bar").text == ""  # home shows an empty box
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().app != PLAY_STORE  # the app finished


# ----- YouTube -----------------------------------------------------------------------------------
def test_youtube_search_then_play_video(phone: Phone) -> None:
    phone.launch(YOUTUBE)
    tap(phone, "Search")
    assert phone.state().focused_field == f"{YOUTUBE}:id/search_edit_text"  # keyboard is up
    phone.input_text("Bruno Mars new video")
    phone.keyevent(KEYCODE_ENTER)
    assert (phone.state().page, phone.state().param("query")) == ("search", "Bruno Mars new video")
    first = find(phone, f"{YOUTUBE}:id/title")
    assert first.text.startswith("Bruno Mars - ")
    assert find(phone, f"{YOUTUBE}:id/channel").text == "Bruno Mars"
    assert phone.state().playing == ""
    tap(phone, f"{YOUTUBE}:id/title")
    state = phone.state()
    assert state.page == "video" and state.param("channel") == "Bruno Mars"
    assert state.param("query") == "Bruno Mars new video"
    assert state.playing == state.param("title") and "Bruno Mars" in state.playing
    tap(phone, "Pause video")
    assert phone.state().playing == ""
    tap(phone, "Play video")
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "search" and phone.state().playing == ""


def test_youtube_results_lead_with_the_named_channel() -> None:
    assert entity_of("latest video from GameSpot Reviews") == "GameSpot Reviews"
    assert entity_of("Play the latest video from the bbc") == "BBC"
    assert search_videos("latest video from GameSpot Reviews")[0].channel == "GameSpot Reviews"
    videos = search_videos("taylor swift")
    assert videos[0].channel == "Taylor Swift" and videos[0].age == "2 hours ago"
    assert all("Taylor Swift" in v.title or v.channel == "Taylor Swift" for v in videos)
    assert len({v.channel for v in search_videos("music")}) == len(search_videos("music"))


# ----- Gmail -------------------------------------------------------------------------------------
def test_gmail_inbox_message_and_back(phone: Phone) -> None:
    phone.launch(GMAIL)
    assert phone.state().page == "inbox"
    row = find(phone, "Slides for Monday")
    assert "Unread" in find(phone, f"{GMAIL}:id/viewified_conversation_item_view").content_desc
    tap(phone, row.text)
    assert (phone.state().page, phone.state().param("subject")) == ("message", "Slides for Monday")
    find(phone, "Priya Shah  ·  10:05 AM")
    tap(phone, "Delete")
    assert phone.state().page == "inbox"
    assert all(n.text != "Slides for Monday" for n in phone.compose().walk())
    search(phone, f"{GMAIL}:id/open_search", "hiking")
    assert phone.state().page == "search"
    find(phone, "Hiking trip plan")


# ----- Maps --------------------------------------------------------------------------------------
def test_maps_search_place_directions(phone: Phone) -> None:
    phone.launch(MAPS)
    search(phone, f"{MAPS}:id/search_omnibox_text_box", "nearest Starbucks")
    assert (phone.state().page, phone.state().param("query")) == ("search", "nearest Starbucks")
    names = [n.text for n in phone.compose().walk() if n.resource_id == f"{MAPS}:id/title"]
    assert names and set(names) == {"Starbucks"}
    tap(phone, f"{MAPS}:id/title")
    state = phone.state()
    assert state.page == "place" and state.param("name") == "Starbucks"
    tap(phone, "Directions")
    state = phone.state()
    assert (state.page, state.param("destination")) == ("directions", "Starbucks")
    summary = find(phone, f"{MAPS}:id/route_summary").text
    tap(phone, "Walk")
    assert phone.state().param("mode") == "Walk"
    assert find(phone, f"{MAPS}:id/route_summary").text != summary  # walking takes longer
    phone.keyevent(KEYCODE_BACK)
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "search"


def test_maps_category_chip_and_place_generation(phone: Phone) -> None:
    phone.launch(MAPS)
    tap(phone, "Coffee")
    assert (phone.state().page, phone.state().param("query")) == ("search", "Coffee")
    chicago = search_places("good pizza restaurants in chicago")
    assert len(chicago) == 6 and all(p.address.endswith(", Chicago") for p in chicago)
    assert all(p.category == "Pizza restaurant" for p in chicago)
    ratings = [p.rating for p in chicago]
    assert ratings == sorted(ratings, reverse=True)  # "good" ranks by rating
    nearest = search_places("nearest electronics store that's open")
    assert all(p.open_now for p in nearest)
    assert [p.distance_mi for p in nearest] == sorted(p.distance_mi for p in nearest)


# ----- Settings ----------------------------------------------------------------------------------
def test_settings_app_notifications_toggle(phone: Phone) -> None:
    phone.launch(SETTINGS)
    tap(phone, "Apps")
    assert phone.state().page == "apps"
    labels = [
        n.content_desc
        for n in phone.compose().walk()
        if n.clickable and (n.action or "").startswith("page:app_info")
    ]
    assert labels == sorted(labels, key=str.casefold) and "Amazon Prime Music" in labels
    tap(phone, "Maps")
    assert (phone.state().page, phone.state().param("app")) == ("app_info", "Maps")
    tap(phone, "Notifications")
    assert phone.state().page == "app_notifications"
    switch = find(phone, "All Maps notifications")
    assert switch.checkable and switch.checked and phone.notifications["Maps"]
    tap(phone, "All Maps notifications")
    assert phone.state().notifications["Maps"] is False
    assert not find(phone, "All Maps notifications").checked
    tap(phone, "All Maps notifications")
    assert phone.notifications["Maps"] is True
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "app_info"


def test_settings_lists_every_installed_app_by_scrolling(phone: Phone) -> None:
    phone.installed |= {"Zebra Scanner", "aardvark"}
    phone.launch(SETTINGS)
    tap(phone, "Apps")
    seen: set[str] = set()
    for _ in range(6):
        seen |= {n.content_desc for n in phone.compose().walk() if n.clickable}
        phone.swipe(540, 1900, 540, 700)
    assert set(phone.installed) <= seen
    tap(phone, "Zebra Scanner")
    tap(phone, "Uninstall")
    assert "Zebra Scanner" not in phone.installed and phone.state().page == "apps"


def test_settings_pages_wallpaper_display_notifications(phone: Phone) -> None:
    phone.launch(SETTINGS)
    for title, page in (("Display", "display"), ("Notifications", "notifications")):
        tap(phone, title)
        assert phone.state().page == page
        phone.keyevent(KEYCODE_BACK)
    tap(phone, "Display")
    assert not find(phone, "Dark theme").checked
    tap(phone, "Dark theme")
    assert find(phone, "Dark theme").checked
    phone.keyevent(KEYCODE_BACK)
    tap(phone, "Wallpaper & style")
    assert phone.state().page == "wallpaper"
    tap(phone, "Night Sky wallpaper")
    assert (phone.state().page, phone.state().param("name")) == ("wallpaper_preview", "Night Sky")
    tap(phone, "Set wallpaper")
    assert phone.state().page == "wallpaper"
    find(phone, "Night Sky")


# ----- shared: determinism, text helpers, rendering ----------------------------------------------
def test_content_helpers_are_stable() -> None:
    assert stable_int("a", "b") == stable_int("a", "b") != stable_int("ab")
    assert stable_int("x") == 0x4ADF4367F96E584F  # blake2b: fixed across processes and runs
    assert display_name("the bbc news") == "The BBC News"
    assert display_name("bruno mars") == "Bruno Mars" and display_name("GameSpot") == "GameSpot"
    filler = ("play", "the", "new", "video", "on youtube")
    assert strip_words("Play the new Drake video on YouTube", filler) == "Drake"


def test_screens_are_deterministic_and_render(phone: Phone) -> None:
    other = Phone(serial="emulator-5556", seed=7)
    for p in (phone, other):
        p.launch(MAPS)
        search(p, f"{MAPS}:id/search_omnibox_text_box", "sushi in Seattle")
    assert phone.ui_xml() == other.ui_xml()
    for package in (PLAY_STORE, YOUTUBE, GMAIL, MAPS, SETTINGS):
        phone.launch(package)
        image = Image.open(io.BytesIO(phone.screenshot_png()))
        assert image.size == (270, 600)
        assert len(image.getcolors(maxcolors=1 << 20) or ()) > 8  # real content, not blank
