"""Live-world dynamics: rates over seeds, modal semantics, dismissal, reproducibility, config."""

from __future__ import annotations

import dataclasses
import math

import pytest

from distrl_tasks.config import ConfigError, DynamicsRatesConfig, load_config
from distrl_tasks.protocol.ui_dump import Screen, actionable_elements
from distrl_tasks.sim.apps import CHROME, LAUNCHER, PLAY_STORE, SETTINGS, YOUTUBE
from distrl_tasks.sim.dynamics import (
    BY_NAME,
    NAMES,
    PROFILES,
    Dynamics,
    parse_profile,
    profile_rates,
)
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.web.sites import site_results_target
from distrl_tasks.tasks import load_goals, parse_goal, unique_goals
from distrl_tasks.tasks.expert import solve

INTERRUPTIONS = ("permission_location", "permission_notifications", "chrome_signin")


def phone_with(profile: str = "live", seed: int = 0, serial: str = "emulator-5554", **rates):
    dyn = Dynamics(profile, rates, seed=seed, serial=serial)
    return Phone(serial, seed=seed, dynamics=dyn), dyn


def only(**rates: float) -> dict[str, float]:
    """Every perturbation off except ``rates``."""
    return {**dict.fromkeys(NAMES, 0.0), **rates}


def shown(phone: Phone) -> list[str]:
    """Names of the perturbations visible on the composed screen (plus queued dialogs)."""
    phone.compose()
    dyn = phone.dynamics
    return dyn.on_screen() + [o.name for o in dyn.queue]


def painted(phone: Phone) -> list[str]:
    """:func:`shown` once a slow page has painted (what it showed while loading included)."""
    names = shown(phone)
    while phone.dynamics.loading:
        phone.screenshot_png()
        names += shown(phone)
    return names


def screen(phone: Phone) -> Screen:
    return Screen.parse(phone.ui_xml())


def tap_label(phone: Phone, label: str) -> None:
    node = screen(phone).by_label(label)
    assert node is not None, f"no {label!r} on screen"
    phone.tap(*node.center)


def open_shop_results(phone: Phone, site: str = "bestbuy.com", query: str = "laptop") -> None:
    phone.launch(CHROME)
    phone.compose()
    name, params = site_results_target(site, query)
    phone.apps[CHROME].go(name, **params)


# ----- rates ---------------------------------------------------------------------------------
def walk_episode(phone: Phone) -> None:
    """Visit every trigger once: Chrome, a shop's results, Google results, Play Store, YouTube
    (each screen looked at until painted, as an agent would)."""
    open_shop_results(phone)
    painted(phone)
    phone.apps[CHROME].open_search("best laptops")
    painted(phone)
    for package in (PLAY_STORE, YOUTUBE):
        phone.launch(package)
        painted(phone)


@pytest.mark.parametrize("profile", ["live", "hostile"])
def test_each_perturbation_appears_at_its_configured_rate_over_seeds(profile: str) -> None:
    """Opportunities and appearances counted by the dynamics over 150 episodes x 2 devices
    (fixed seeds): every observed rate lies within 4 binomial standard errors of its rate."""
    totals = {n: [0, 0] for n in NAMES}
    for serial in ("emulator-5554", "emulator-5556"):
        phone, dyn = phone_with(profile, seed=7, serial=serial)
        for _ in range(150):
            phone.reset()
            walk_episode(phone)
        for n, (opp, hit) in dyn.stats.items():
            totals[n][0] += opp
            totals[n][1] += hit
    rates = PROFILES[profile]
    for name, (opp, hit) in totals.items():
        assert opp >= 150, (name, opp)
        p = rates[name]
        tolerance = 4 * math.sqrt(max(p * (1 - p), 0.01) / opp)
        assert abs(hit / opp - p) <= tolerance, (name, hit, opp, p)


def test_at_rate_one_each_perturbation_is_on_screen_and_at_zero_never() -> None:
    seen: set[str] = set()
    phone, _ = phone_with("hostile", **dict.fromkeys(NAMES, 1.0))
    for _ in range(3):
        phone.reset()
        open_shop_results(phone)
        for _ in range(12):  # dismiss whatever comes up, noting what it was
            names = painted(phone)
            seen |= set(names)
            if not phone.dynamics.overlay:
                break
            phone.dynamics._close(phone)
        phone.apps[CHROME].open_search("best laptops")
        seen |= set(painted(phone))
        phone.launch(PLAY_STORE)
        seen |= set(shown(phone))
        phone.dynamics._close(phone)
        phone.launch(YOUTUBE)
        seen |= set(shown(phone))
    assert set(NAMES) - {"fake_close"} <= seen
    xml = phone.ui_xml()
    static, _ = phone_with("static")
    walk_episode(static)
    assert static.dynamics.on_screen() == [] and all(
        v == [0, 0] or v[1] == 0 for v in static.dynamics.stats.values()
    )
    assert "Sponsored" not in static.ui_xml() and xml


# ----- modal semantics and dismissal ---------------------------------------------------------
def test_permission_dialog_is_modal_and_back_denies() -> None:
    phone, dyn = phone_with(**only(permission_location=1.0))
    phone.launch(CHROME)
    assert shown(phone) == ["permission_location"]
    before = phone.state()
    # the dump shows the dialog's window alone: the bar's place is taken from what is drawn
    bar = phone.compose().find(resource_id="com.android.chrome:id/url_bar")
    x1, y1, x2, y2 = bar.bounds
    phone.tap((x1 + x2) / 2, (y1 + y2) / 2)  # a tap outside the dialog does nothing
    assert phone.state() == before and dyn.overlay is not None
    phone.input_text("ignored")
    phone.keyevent(66)
    assert phone.state() == before
    phone.keyevent(4)  # BACK closes the dialog, and only the dialog
    assert dyn.overlay is None and phone.state() == before


def test_cookie_banner_and_anr_need_their_buttons() -> None:
    phone, dyn = phone_with(**only(cookie_consent=1.0))
    open_shop_results(phone)
    assert shown(phone) == ["cookie_consent"]
    before = phone.state()
    phone.keyevent(4)
    assert shown(phone) == ["cookie_consent"] and phone.state() == before
    tap_label(phone, "Reject all")
    assert shown(phone) == [] and phone.state() == before

    phone, dyn = phone_with(**only(anr=1.0))
    phone.launch(CHROME)
    assert shown(phone) == ["anr"]
    phone.keyevent(4)
    assert shown(phone) == ["anr"]
    tap_label(phone, "Wait")
    assert dyn.overlay is None and phone.state().app == CHROME
    phone.apps[CHROME].open_search("weather")
    assert shown(phone) == ["anr"]
    tap_label(phone, "Close app")
    assert phone.state().app == LAUNCHER


def test_heads_up_is_not_modal_times_out_and_swipes_away() -> None:
    phone, dyn = phone_with(**only(heads_up=1.0))
    phone.launch(CHROME)
    assert shown(phone) == ["heads_up"]
    box = screen(phone).by_rid(":id/search_box_text")
    phone.tap(*box.center)  # below the heads-up: lands on the page
    assert phone.focus is not None and dyn.overlay is not None
    phone.input_text("we")  # typing goes to the page, not the notification
    assert dyn.overlay is not None
    phone.input_text("ather")
    assert dyn.overlay is None  # three inputs: it timed out
    assert phone.state().field_text == "weather"
    phone.apps[CHROME].open_search("weather")
    assert shown(phone) == ["heads_up"]
    x1, y1, x2, y2 = dyn.overlay.node.bounds
    phone.swipe(x1 + 50, (y1 + y2) / 2, x2 - 10, (y1 + y2) / 2)
    assert dyn.overlay is None and phone.state().page == "serp"
    phone.apps[CHROME].open_search("news")
    assert shown(phone) == ["heads_up"]
    hu = screen(phone).by_rid("systemui:id/heads_up")
    phone.tap(*hu.center)  # a tap on it opens its source
    assert phone.state().app == SETTINGS


def test_interstitial_comes_back_once_and_fake_close_opens_an_ad() -> None:
    phone, _ = phone_with("hostile", **only(app_interstitial=1.0))
    open_shop_results(phone)
    assert shown(phone) == ["app_interstitial"]
    phone.keyevent(4)
    assert shown(phone) == ["app_interstitial"]  # BACK does not close it
    tap_label(phone, "Continue in browser")
    chrome = phone.apps[CHROME]
    for query, expected in (("mouse", ["app_interstitial"]), ("keyboard", [])):
        chrome.go(
            *site_results_target("bestbuy.com", query)[:1],
            **site_results_target("bestbuy.com", query)[1],
        )
        assert shown(phone) == expected
        if expected:
            tap_label(phone, "Continue in browser")

    phone, _ = phone_with("hostile", **only(app_interstitial=1.0, fake_close=1.0))
    open_shop_results(phone)
    close = screen(phone).first(lambda n: n.desc == "Close" and n.clickable)
    assert close is not None
    phone.tap(*close.center)
    state = phone.state()
    assert state.page == "web" and "googleadservices" in state.param("url")


# ----- the dump as a device gives it ---------------------------------------------------------
URL_BAR = f"{CHROME}:id/url_bar"
WINDOWS = [
    ("permission_location", "com.google.android.permissioncontroller",
     ["While using the app", "Don't allow"]),
    ("permission_notifications", "com.google.android.permissioncontroller",
     ["Allow", "Don't allow"]),
    ("anr", "android", ["Close app", "Wait"]),
    ("chrome_signin", CHROME, ["Continue as Alex", "Use without an account"]),
    ("app_interstitial", CHROME, ["Open app", "Continue in browser"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "package", "buttons"), WINDOWS)
def test_a_dialog_or_activity_window_is_dumped_alone(
    name: str, package: str, buttons: list[str]
) -> None:
    phone, dyn = phone_with(**only(**{name: 1.0}))
    open_shop_results(phone)
    assert shown(phone)[0] == name  # an ANR may come again on the next screen, queued
    dump = screen(phone)
    assert dump.package == package
    assert [e.label for e in actionable_elements(phone.ui_xml())] == buttons
    # nothing of the app underneath, nor the system bars: the window alone
    assert dump.by_rid(":id/url_bar") is None and dump.by_rid(":id/product_item") is None
    assert dump.by_rid("systemui:id/navigation_bar_frame") is None
    display = Screen.parse(phone.display_xml())
    assert display.package == package and display.by_rid(":id/url_bar") is None
    # the screenshot's tree still draws the page under the dialog
    assert phone.compose().find(resource_id=URL_BAR) is not None
    while dyn.overlay is not None:
        tap_label(phone, buttons[-1])
    assert screen(phone).by_rid(":id/url_bar") is not None


def test_in_page_banner_and_heads_up_stay_in_the_app_dump() -> None:
    phone, _ = phone_with(**only(cookie_consent=1.0))
    open_shop_results(phone)
    assert shown(phone) == ["cookie_consent"]
    dump = screen(phone)
    assert dump.package == CHROME
    assert dump.by_label("Reject all") is not None and dump.by_label("Accept all") is not None
    assert dump.by_rid(":id/url_bar") is not None and dump.by_rid(":id/product_item") is not None

    phone, _ = phone_with(**only(heads_up=1.0))
    phone.launch(CHROME)
    assert shown(phone) == ["heads_up"]
    dump = screen(phone)
    assert dump.by_rid("systemui:id/heads_up") is not None and dump.by_rid(":id/url_bar")


def test_slow_load_shows_a_spinner_for_two_captures_and_taps_do_nothing() -> None:
    phone, _ = phone_with(**only(slow_load=1.0))
    open_shop_results(phone)
    first = screen(phone)
    assert first.first(lambda n: n.cls.endswith("ProgressBar")) is not None
    assert first.first(lambda n: n.rid.endswith(":id/product_item")) is None
    png = phone.screenshot_png()
    assert png != phone.screenshot_png()  # the second capture shows the painted page
    assert screen(phone).first(lambda n: n.rid.endswith(":id/product_item")) is not None


def test_sponsored_results_push_organic_ones_down_and_misleading_ones_copy_titles() -> None:
    static, _ = phone_with("static")
    open_shop_results(static)
    organic = screen(static).first(lambda n: n.rid.endswith(":id/product_item"))
    phone, _ = phone_with("hostile", **only(misleading_sponsored=1.0))
    open_shop_results(phone)
    items = screen(phone).where(lambda n: n.rid.endswith(":id/product_item"))
    assert items[0].desc == organic.desc and items[0].bounds[1] == organic.bounds[1]
    assert items[1].desc == organic.desc and items[1].bounds[1] > organic.bounds[1]
    phone.tap(*items[0].center)  # the ad: same title, another product
    assert phone.state().param("query") != "laptop"


def test_grid_layout_lays_results_out_in_two_columns_that_open_the_same_products() -> None:
    static, _ = phone_with("static")
    open_shop_results(static)
    organic = screen(static).where(lambda n: n.rid.endswith(":id/product_item"))
    phone, _ = phone_with(**only(grid_layout=1.0))
    open_shop_results(phone)
    assert "grid_layout" in shown(phone)
    cards = screen(phone).where(lambda n: n.rid.endswith(":id/product_item"))
    # same results in the same order (more of them fit on the screen)
    assert len(cards) > len(organic) and [c.desc for c in cards[: len(organic)]] == [
        o.desc for o in organic
    ]
    (ax1, ay1, ax2, _), (bx1, by1, _, _) = cards[0].bounds, cards[1].bounds
    assert ay1 == by1 and ax2 <= bx1 and ax2 - ax1 < screen(phone).width // 2 + 1
    assert cards[2].bounds[1] > ay1 and cards[2].bounds[0] == ax1  # the next row
    phone.tap(*cards[1].center)
    static.tap(*organic[1].center)
    assert phone.state() == static.state()  # the second card is the second result


def test_search_box_position_puts_the_box_above_the_logo_and_it_still_searches() -> None:
    phone, _ = phone_with(**only(search_box_position=1.0))
    open_shop_results(phone)
    assert shown(phone) == ["search_box_position"]
    sc = screen(phone)
    box = sc.by_rid(":id/site_search")
    sign_in = sc.first(lambda n: n.text == "Sign in")
    assert box.bounds[3] <= sign_in.bounds[1]  # above the logo line now
    phone.tap(*box.center)
    phone.input_text("mouse")  # appends to the field's "laptop" (no clear first)
    phone.keyevent(66)
    assert phone.state().page == "site_results" and "mouse" in phone.state().param("query")


def test_did_you_mean_shows_a_rewrite_until_the_original_is_searched() -> None:
    for opener in ("shop", "google"):
        phone, _ = phone_with(**only(did_you_mean=1.0))
        if opener == "shop":
            open_shop_results(phone, query="laptop")
        else:
            phone.launch(CHROME)
            phone.apps[CHROME].open_search("laptop")
        sc = screen(phone)
        assert sc.first(lambda n: n.text == "Showing results for laptops") is not None
        assert phone.state().param("query") == "laptop"  # the page is still the original's
        if opener == "shop":
            first = sc.first(lambda n: n.rid.endswith(":id/product_item"))
            assert "laptop" not in first.desc.lower().split()  # the rewrite's products
            shop_phone, _ = phone_with(**only(did_you_mean=1.0))
            open_shop_results(shop_phone, query="laptop")
            shop_phone.tap(*first.center)
            assert shop_phone.state().param("query") == "laptops"
        tap_label(phone, "Search instead for laptop")
        sc = screen(phone)
        assert sc.first(lambda n: n.text.startswith("Showing results for")) is None
        assert phone.state().param("query") == "laptop" and phone.state().param("nfpr") == "1"


def test_expert_takes_search_instead_and_reads_grids() -> None:
    goals = unique_goals(load_goals("webshop", "test"))[:15]
    goals += [g for g in unique_goals(load_goals("general", "test")) if "search" in g.lower()][:10]
    rates = only(did_you_mean=1.0, grid_layout=1.0, layout_variant=1.0, search_box_position=1.0)
    phone, _ = phone_with(**rates)
    wins = 0
    for goal in goals:
        task = parse_goal(goal)
        phone.set_task(task)
        solve(phone, task)
        wins += phone.check_task()["success"]
    assert wins == len(goals), wins


# ----- reproducibility, state, expert --------------------------------------------------------
def trace(serial: str, seed: int = 3) -> list[list[str]]:
    phone, _ = phone_with("hostile", seed=seed, serial=serial)
    out = []
    for goal in unique_goals(load_goals("webshop", "test"))[:6]:
        task = parse_goal(goal)
        phone.set_task(task)
        solve(phone, task)
        out.append(shown(phone))
        out.append(sorted(k for k, v in phone.dynamics.armed.items() if v))
    return out


def test_draws_are_reproducible_per_serial_and_differ_across_serials() -> None:
    assert trace("emulator-5554") == trace("emulator-5554")
    assert trace("emulator-5554") != trace("emulator-5556")
    assert trace("emulator-5554") != trace("emulator-5554", seed=4)


def test_expert_succeeds_under_live_and_with_every_episode_perturbation_forced() -> None:
    goals = unique_goals(load_goals("general", "test"))[:40]
    goals += unique_goals(load_goals("webshop", "test"))[:20]
    # every episode-scoped perturbation forced on (per-screen ones at 1.0 would put a dialog on
    # every screen and exhaust any step budget), plus the hostile profile's per-screen rates
    forced = {n: 1.0 for n, p in BY_NAME.items() if p.scope == "episode"}
    for profile, rates in (("live", {}), ("hostile", forced)):
        phone, _ = phone_with(profile, seed=1, **rates)
        wins = 0
        for goal in goals:
            task = parse_goal(goal)
            phone.set_task(task)
            solve(phone, task)
            wins += phone.check_task()["success"]
        assert wins / len(goals) >= 0.98, (profile, wins)


# ----- profiles and config -------------------------------------------------------------------
def test_profiles_rates_and_errors() -> None:
    assert parse_profile(" Live ") == "live"
    assert set(PROFILES["static"].values()) == {0.0}
    assert PROFILES["live"]["misleading_sponsored"] == 0.0 < PROFILES["hostile"]["fake_close"]
    assert profile_rates("live", {"anr": 0.5, "heads_up": None})["anr"] == 0.5
    with pytest.raises(ValueError, match="unknown dynamics profile 'wild'"):
        parse_profile("wild")
    with pytest.raises(ValueError, match="unknown perturbation 'popups'"):
        profile_rates("live", {"popups": 0.1})
    with pytest.raises(ValueError, match=r"rate of anr must be in \[0, 1\]"):
        profile_rates("live", {"anr": 2})
    fields = [f.name for f in dataclasses.fields(DynamicsRatesConfig)]
    assert fields == list(NAMES)  # one config key per perturbation, in catalog order


def test_config_rates_reach_the_farm_devices() -> None:
    from distrl_tasks.sim.device_farm import DeviceFarm

    cfg = load_config(None, {"sim.dynamics.rates.anr": 0.75})
    farm = DeviceFarm(2, seed=1, sim_cfg=cfg.sim, dynamics=cfg.sim.dynamics.profile)
    dyn = farm["emulator-5556"].phone.dynamics
    assert (dyn.profile, dyn.rates["anr"]) == ("live", 0.75)
    farm.set_dynamics("static")
    assert dyn.profile == "static" and set(dyn.rates.values()) == {0.0}  # static is static
    farm.set_dynamics("hostile")
    assert dyn.rates["anr"] == 0.75  # the override applies to every live profile
    with pytest.raises(ConfigError, match=r"sim\.dynamics\.rates\.anr"):
        load_config(None, {"sim.dynamics.rates.anr": 1.01})
    for key in ("grid_layout", "did_you_mean"):
        assert load_config(None, {f"sim.dynamics.rates.{key}": 0.4}).sim.dynamics.rates.overrides()
        with pytest.raises(ConfigError, match=rf"sim\.dynamics\.rates\.{key}"):
            load_config(None, {f"sim.dynamics.rates.{key}": -0.1})
    with pytest.raises(ValueError, match="unknown dynamics profile"):
        DeviceFarm(1, dynamics="wild")
