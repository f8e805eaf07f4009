"""Chrome, Google results and the web shops, driven through the real Phone like an agent would."""

from __future__ import annotations

import pytest

from distrl_tasks.sim.apps import CHROME
from distrl_tasks.sim.apps.chrome import NTP_SEARCH_ID, URL_BAR_ID
from distrl_tasks.sim.apps.launcher import SEARCH_ID as LAUNCHER_SEARCH_ID
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.ui import CONTENT_BOTTOM, Node
from distrl_tasks.sim.web import PRODUCT_ID, RESULT_ID, SERP_SEARCH_ID, SITE_SEARCH_ID, Ctx
from distrl_tasks.sim.web.cards import answer_card
from distrl_tasks.sim.web.facts import currency_pair
from distrl_tasks.sim.web.intent import KINDS, classify
from distrl_tasks.sim.web.serp import serp_body
from distrl_tasks.sim.web.shops import SHOPS, catalog, shop_for
from distrl_tasks.sim.web.sites import looks_like_url, resolve

ENTER = 66


# ----- driving helpers ------------------------------------------------------------------------
def find(phone: Phone, *, rid: str = "", text: str = "", desc: str = "") -> Node:
    for node in phone.compose().walk():
        if rid and node.resource_id != rid:
            continue
        if text and node.text != text:
            continue
        if desc and node.content_desc != desc:
            continue
        if node.clickable or node.editable:
            return node
    raise AssertionError(f"no clickable node rid={rid!r} text={text!r} desc={desc!r}")


def tap(phone: Phone, **how: str) -> None:
    x1, y1, x2, y2 = find(phone, **how).bounds
    phone.tap((x1 + x2) / 2, (y1 + y2) / 2)


def type_into(phone: Phone, rid: str, text: str) -> None:
    tap(phone, rid=rid)
    phone.input_text(text)
    phone.keyevent(ENTER)


@pytest.fixture
def phone() -> Phone:
    p = Phone()
    assert p.launch(CHROME)
    return p


def texts(phone: Phone) -> list[str]:
    return [n.text for n in phone.compose().walk() if n.text]


# ----- address bar: URL vs search ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("typed", "site"),
    [
        ("ebay.com", "ebay.com"),
        ("www.newegg.com", "newegg.com"),
        ("https://bestbuy.com/", "bestbuy.com"),
        ("COSTCO.COM", "costco.com"),
        ("walmart.com/", "walmart.com"),
        ("reddit.com", "reddit.com"),
    ],
)
def test_typed_domain_opens_the_site_home(phone: Phone, typed: str, site: str) -> None:
    type_into(phone, URL_BAR_ID, typed)
    state = phone.state()
    assert (state.page, state.param("site")) == ("site_home", site)
    assert state.param("url") == f"https://www.{site}/"
    assert find(phone, rid=URL_BAR_ID).text == site  # the address bar shows the host


def test_text_that_is_not_a_url_searches_google(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "  capital of peru ")
    state = phone.state()
    assert state.page == "serp"
    assert state.param("query") == "capital of peru"
    assert state.param("kind") == "facts"
    assert state.param("url") == "https://www.google.com/search?q=capital+of+peru"
    assert find(phone, rid=SERP_SEARCH_ID).text == "capital of peru"
    assert "Lima" in texts(phone)


def test_new_tab_page_search_box_and_shop_search_url(phone: Phone) -> None:
    type_into(phone, NTP_SEARCH_ID, "https://www.walmart.com/search?q=usb-a")
    state = phone.state()
    assert (state.page, state.param("site"), state.param("query")) == (
        "site_results",
        "walmart.com",
        "usb-a",
    )


def test_any_other_domain_opens_a_readable_web_page(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "en.wikipedia.org/wiki/Moon")
    state = phone.state()
    assert state.page == "web"
    assert state.param("url") == "https://en.wikipedia.org/wiki/Moon"
    assert state.param("title") == "Wikipedia"
    assert any("Wikipedia" in t for t in texts(phone))


@pytest.mark.parametrize(
    ("text", "is_url"),
    [
        ("ebay.com", True),
        ("www.newegg.com", True),
        ("http://x.io/a?b=1", True),
        ("ebay", False),
        ("what is 3.14", False),
        ("e.g", False),
        ("", False),
    ],
)
def test_looks_like_url(text: str, is_url: bool) -> None:
    assert looks_like_url(text) is is_url


def test_resolve_rejects_plain_words_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a URL"):
        resolve("best laptops")
    with pytest.raises(ValueError, match=r"unknown shop site 'foo\.com'"):
        shop_for("foo.com")


# ----- SERP classification ---------------------------------------------------------------------
AITW_GOALS = [
    ("What's the news in India?", "news"),
    ("What's the latest tech news?", "news"),
    ("What's the weather like in Seoul?", "weather"),
    ("Search for flights from Sydney to Helsinki", "flights"),
    ("Search for hotels in Washington DC", "hotels"),
    ("Search for good Italian restaurants", "local"),
    ("Find the nearest grocery store", "local"),
    ("What's a good restaurant in Atlanta?", "local"),
    ("What's the price of the Samsung TV?", "shopping"),
    ("How much does the new iPad cost?", "shopping"),
    ("Where can I buy a nice beach towel?", "shopping"),
    ("Google the capital of Panama", "facts"),
    ("How big is a blue whale?", "facts"),
    ("What is the speed of a cheetah?", "facts"),
    ("Who is the president of France?", "facts"),
    ("How old is the earth?", "facts"),
    ("How far is the moon?", "facts"),
    ("What time is it in Tokyo?", "time"),
    ("What's the US dollar exchange rate against the Euro?", "currency"),
    ("How do I get to the nearest Apple Store?", "directions"),
    ("What's on the menu at Chipotle?", "menu"),
    ("How much does a 2 bedroom apartment rent for in Austin?", "rent"),
    ("What's the latest video from GameSpot News?", "videos"),
    ("Play the latest video from the BBC", "videos"),
    ("Show me some nice wallpapers for my phone", "images"),
    ("What's on Reddit today", "generic"),
]
NEW_PHRASINGS = [
    ("reykjavik weather tomorrow", "weather"),
    ("cheap flights lima to oslo", "flights"),
    ("places to stay in Lisbon", "hotels"),
    ("sushi near me", "local"),
    ("convert 100 yen to euro", "currency"),
    ("how tall is a giraffe", "facts"),
    ("current time in Nairobi", "time"),
    ("directions to Golden Gate Park", "directions"),
    ("taco bell menu", "menu"),
    ("studio apartments for rent in Denver", "rent"),
    ("cute cat pictures", "images"),
    ("ps5 deals", "shopping"),
    ("headlines about climate", "news"),
    ("marvel trailer", "videos"),
    ("python dataclasses tutorial", "generic"),
]


@pytest.mark.parametrize(("query", "kind"), AITW_GOALS + NEW_PHRASINGS)
def test_classify_kinds(query: str, kind: str) -> None:
    assert classify(query).kind == kind


def test_every_kind_is_covered_by_the_examples() -> None:
    assert {k for _, k in AITW_GOALS + NEW_PHRASINGS} == set(KINDS)


def test_slots_for_new_entities() -> None:
    flights = classify("cheap flights from lima to oslo")
    assert (flights.slots["from"], flights.slots["to"]) == ("Lima", "Oslo")
    assert classify("Weather in buenos aires").slots["city"] == "Buenos Aires"
    assert classify("Search for hotels in Reykjavik").slots["city"] == "Reykjavik"
    assert classify("How do I get to the nearest IKEA?").slots["destination"] == "IKEA"


def test_currency_pairs_use_the_table_rates() -> None:
    assert currency_pair("US dollar against the British Pound") == ("USD", "GBP", 0.753)
    src, dst, rate = currency_pair("pound to dollar")
    assert (src, dst) == ("GBP", "USD") and rate == pytest.approx(1 / 0.753)
    assert currency_pair("dollar") is None


@pytest.mark.parametrize(
    ("query", "kind", "slot", "value"),
    [  # AitW goal texts with words run together, and a product named after the weather
        ("What's a goodrestaurant in Austin?", "local", "city", "Austin"),
        ("How much does a3 bedroom apartment rent for in Portland?", "rent", "bedrooms", "3"),
        ("What's the weather like inToronto?", "weather", "city", "Toronto"),
        ("What's the news in theFalkland Islands?", "news", "topic", "Falkland Islands"),
        ("What's US dollar exchange rateagainst the Mexican Peso?", "currency", "to", "MXN"),
        (
            "What's the price of the 1000-Watt EGO Power+ Snow Blower?",
            "shopping",
            "product",
            "1000-Watt EGO Power+ Snow Blower",
        ),
        ("is it going to snow in denver", "weather", "city", "Denver"),
    ],
)
def test_glued_words_and_priced_products(query: str, kind: str, slot: str, value: str) -> None:
    intent = classify(query)
    assert (intent.kind, intent.slots[slot]) == (kind, value)


def test_more_stops_never_make_a_shorter_flight() -> None:
    for query in ("flights from NYC to Tokyo", "flights from Lima to Oslo", "fly Rome to Cairo"):
        rows = [text for text, *_ in answer_card(classify(query))[1:]]
        assert [r.split(" · ")[1] for r in rows] == ["Nonstop", "1 stop", "2 stops"]
        minutes = []
        for row in rows:
            hours, mins = row.split(" · ")[2].split()
            minutes.append(int(hours[:-1]) * 60 + int(mins[:-1]))
        assert minutes == sorted(minutes)


def test_time_card_converts_the_phone_clock(phone: Phone) -> None:
    # the phone shows 12:30 Pacific (UTC-8) on Sat Nov 21; Tokyo is UTC+9 -> 5:30 AM Sunday
    type_into(phone, URL_BAR_ID, "What time is it in Tokyo?")
    shown = texts(phone)
    assert "5:30 AM" in shown and "Sunday, November 22, 2020" in shown


@pytest.mark.parametrize("query", [q for q, _ in AITW_GOALS + NEW_PHRASINGS])
def test_every_serp_is_tappable_and_labelled(query: str) -> None:
    nodes = serp_body(Ctx(top=254, fields={SERP_SEARCH_ID: query}), query)
    clickable = [n for root in nodes for n in root.walk() if n.clickable]
    assert sum(n.resource_id == RESULT_ID for n in clickable) == 6
    assert all(n.text or n.content_desc for n in clickable)


# ----- result links ----------------------------------------------------------------------------
@pytest.mark.parametrize(("query", "site"), [("ebay", "ebay.com"), ("Go to Reddit", "reddit.com")])
def test_first_result_of_a_site_name_opens_that_site(phone: Phone, query: str, site: str) -> None:
    type_into(phone, URL_BAR_ID, query)
    tap(phone, rid=RESULT_ID)
    assert (phone.state().page, phone.state().param("site")) == ("site_home", site)


def test_product_query_result_opens_shop_results(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "Find a nice sofa on eBay")
    tap(phone, rid=RESULT_ID)
    state = phone.state()
    assert (state.page, state.param("site"), state.param("query")) == (
        "site_results",
        "ebay.com",
        "Sofa",
    )


def test_shop_result_of_a_non_shopping_query_searches_its_subject(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "What does the iPhone 8 look like on eBay?")
    assert phone.state().param("kind") == "images"
    tap(phone, rid=RESULT_ID)
    state = phone.state()
    assert (state.page, state.param("site"), state.param("query")) == (
        "site_results",
        "ebay.com",
        "iphone 8",
    )


def test_other_results_open_web_pages_and_back_returns(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "how big is the moon")
    title = find(phone, rid=RESULT_ID).text
    tap(phone, rid=RESULT_ID)
    state = phone.state()
    assert state.page == "web" and state.param("title") == title
    assert state.param("url").startswith("https://www.")
    phone.keyevent(4)
    assert phone.state().page == "serp"
    assert find(phone, rid=SERP_SEARCH_ID).text == "how big is the moon"


def test_clear_then_new_search_from_the_results_page(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "weather in paris")
    tap(phone, desc="Clear")
    assert phone.state().focused_field == SERP_SEARCH_ID and phone.state().field_text == ""
    phone.input_text("weather in rome")
    phone.keyevent(ENTER)
    assert (phone.state().param("query"), phone.state().param("kind")) == (
        "weather in rome",
        "weather",
    )
    phone.keyevent(4)  # BACK: the previous results, with their query back in the box
    assert phone.state().param("query") == "weather in paris"
    assert find(phone, rid=SERP_SEARCH_ID).text == "weather in paris"


def test_tabs_switch_the_kind(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "capital of peru")
    tap(phone, desc="News results")
    assert (phone.state().param("kind"), phone.state().param("tab")) == ("news", "news")
    tap(phone, desc="All results")
    assert phone.state().param("kind") == "facts" and phone.state().param("tab") == ""


def test_launcher_search_bar_opens_chrome_results() -> None:
    p = Phone()
    type_into(p, LAUNCHER_SEARCH_ID, "weather in paris")
    state = p.state()
    assert (state.app, state.page, state.param("kind")) == (CHROME, "serp", "weather")


# ----- shops -----------------------------------------------------------------------------------
@pytest.mark.parametrize("site", sorted(SHOPS))
def test_shop_search_then_first_entry_then_back(phone: Phone, site: str) -> None:
    type_into(phone, URL_BAR_ID, site)
    type_into(phone, SITE_SEARCH_ID, "logitech g910")
    state = phone.state()
    assert (state.page, state.param("site"), state.param("query")) == (
        "site_results",
        site,
        "logitech g910",
    )
    first = find(phone, rid=PRODUCT_ID)
    assert first.bounds[3] < CONTENT_BOTTOM  # the first entry is on screen without scrolling
    assert "logitech g910" in first.content_desc.lower()
    tap(phone, rid=PRODUCT_ID)
    state = phone.state()
    assert state.page == "site_product"
    assert (state.param("item"), state.param("query")) == ("0", "logitech g910")
    assert state.param("title") == catalog(site, "logitech g910")[0].title
    for page in ("site_results", "site_home", "home"):
        phone.keyevent(4)
        assert phone.state().page == page


def test_catalog_titles_contain_any_query() -> None:
    for query in ("usb-c to usb-b", "alienware area 51", "a", "Ünïcode kettle"):
        for site in SHOPS:
            items = catalog(site, query)
            assert len(items) == 12
            assert all(query.lower() in p.title.lower() for p in items)
            assert all(p.price > 0 and 3.5 <= p.rating <= 5.0 for p in items)


def test_results_scroll(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "https://www.newegg.com/p/pl?d=macbook+air")
    before = find(phone, rid=PRODUCT_ID).content_desc
    phone.swipe(540, 1900, 540, 700)
    after = find(phone, rid=PRODUCT_ID).content_desc
    assert before != after


# ----- menu, tabs, windows, incognito -----------------------------------------------------------
def test_menu_items_update_counters(phone: Phone) -> None:
    tap(phone, desc="More options")
    assert phone.state().page == "home"  # the menu is an overlay
    tap(phone, text="New tab")
    assert (phone.state().chrome_tabs, phone.state().page) == (2, "home")
    assert find(phone, desc="Switch or close tabs").text == "2"
    tap(phone, desc="More options")
    tap(phone, text="New window")
    assert phone.state().chrome_windows == 2
    tap(phone, desc="More options")
    tap(phone, text="New incognito tab")
    state = phone.state()
    assert (state.chrome_incognito_tabs, state.param("incognito")) == (1, "1")
    assert "You've gone Incognito" in texts(phone)
    phone.keyevent(4)  # back to the normal tab: incognito is a property of the page
    assert phone.state().param("incognito") == "0"
    assert phone.state().chrome_incognito_tabs == 1


def test_back_closes_the_menu_first(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "ebay.com")
    tap(phone, desc="More options")
    phone.keyevent(4)
    assert phone.state().page == "site_home"
    with pytest.raises(AssertionError):
        find(phone, text="New incognito tab")


def test_tab_switcher_and_history(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "costco.com")
    tap(phone, desc="Switch or close tabs")
    assert phone.state().page == "tabs"
    tap(phone, desc="New tab")
    assert (phone.state().page, phone.state().chrome_tabs) == ("home", 2)
    tap(phone, desc="More options")
    tap(phone, text="History")
    assert phone.state().page == "history"
    tap(phone, desc="Costco")
    assert (phone.state().page, phone.state().param("site")) == ("site_home", "costco.com")


def test_back_from_the_first_page_keeps_chrome_tabs(phone: Phone) -> None:
    tap(phone, desc="More options")
    tap(phone, text="New tab")
    phone.keyevent(4)  # back to the first tab's new tab page
    phone.keyevent(4)  # nothing left to go back to: Chrome goes to the background
    assert phone.state().app != CHROME
    assert phone.state().chrome_tabs == 2
    assert phone.launch(CHROME)
    assert (phone.state().page, phone.state().chrome_tabs) == ("home", 2)


# ----- determinism and rendering ----------------------------------------------------------------
def _session() -> Phone:
    p = Phone()
    p.launch(CHROME)
    type_into(p, URL_BAR_ID, "Search for flights from NYC to Paris")
    return p


def test_same_actions_same_screen() -> None:
    a, b = _session(), _session()
    assert a.ui_xml() == b.ui_xml()
    assert a.screenshot_png() == b.screenshot_png()
    assert classify("What's the weather like in Seoul?") == classify(
        "What's the weather like in Seoul?"
    )


def test_screenshot_is_a_png(phone: Phone) -> None:
    type_into(phone, URL_BAR_ID, "bestbuy.com")
    png = phone.screenshot_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 270  # width at the default 0.25 scale
    assert int.from_bytes(png[20:24], "big") == 600


def test_open_search_rejects_empty_query(phone: Phone) -> None:
    chrome = phone.apps[CHROME]
    with pytest.raises(ValueError, match="non-empty"):
        chrome.open_search("   ")
