"""Simulator core: view tree, hit-testing, XML, the render cache, and the phone's input rules."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from PIL import Image

from distrl_tasks.sim.apps import LAUNCHER
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.render import PngCache, blank_png
from distrl_tasks.sim.ui import Node, Style, hit_test, signature, to_uiautomator_xml


def _center(node: Node) -> tuple[float, float]:
    x1, y1, x2, y2 = node.bounds
    return (x1 + x2) / 2, (y1 + y2) / 2


def test_hit_test_prefers_topmost_clickable() -> None:
    root = Node(bounds=(0, 0, 100, 100))
    under = Node(bounds=(0, 0, 100, 100), clickable=True, action="under")
    over = Node(bounds=(50, 50, 100, 100), clickable=True, action="over")
    plain = Node(bounds=(0, 0, 40, 40))  # not clickable: taps fall through to `under`
    root.add(under, over, plain)
    assert hit_test(root, 60, 60).action == "over"
    assert hit_test(root, 10, 10).action == "under"
    assert hit_test(root, 100, 100) is None  # bounds are end-exclusive


def test_uiautomator_xml_is_parseable_and_android_shaped() -> None:
    root = Node(bounds=(0, 0, 10, 20)).add(
        Node(cls="android.widget.EditText", bounds=(1, 2, 3, 4), text='a "q" & <b>', editable=True)
    )
    tree = ET.fromstring(to_uiautomator_xml(root, package="pkg"))
    assert tree.tag == "hierarchy"
    child = tree.find("node/node")
    assert child is not None
    assert child.get("text") == 'a "q" & <b>'
    assert child.get("bounds") == "[1,2][3,4]"
    assert child.get("clickable") == "true" and child.get("focusable") == "true"
    assert child.get("package") == "pkg"


def test_signature_tracks_visible_changes_only() -> None:
    a = Node(text="x", style=Style(bg="#fff"))
    b = Node(text="x", style=Style(bg="#fff"))
    assert signature(a) == signature(b)
    b.action = "changes nothing visible"
    assert signature(a) == signature(b)
    b.text = "y"
    assert signature(a) != signature(b)


def test_png_cache_hits_and_sizes() -> None:
    cache = PngCache()
    root = Node(text="hello", style=Style(bg="#eeeeee"))
    png1 = cache.get_or_render(root, 0.25)
    png2 = cache.get_or_render(root, 0.25)
    assert png1 is png2 and cache.hits == 1 and cache.misses == 1
    assert Image.open(io.BytesIO(png1)).size == (270, 600)
    white = Image.open(io.BytesIO(blank_png(0.5))).convert("RGB")
    assert white.size == (540, 1200) and white.getextrema() == ((255, 255), (255, 255), (255, 255))


def test_png_cache_is_bounded() -> None:
    cache = PngCache(max_bytes=1)
    for i in range(3):
        cache.get_or_render(Node(text=str(i)), 0.1)
    assert len(cache._items) == 1  # oldest entries are evicted past the byte budget


def test_screenshot_matches_render_scale() -> None:
    for scale, size in ((0.25, (270, 600)), (0.5, (540, 1200))):
        img = Image.open(io.BytesIO(Phone(render_scale=scale).screenshot_png()))
        assert img.size == size


def test_swipe_up_opens_drawer_and_back_returns_home() -> None:
    phone = Phone()
    assert phone.state().app == LAUNCHER and phone.state().page == "home"
    phone.swipe(540, 1900, 540, 700)
    assert phone.state().page == "drawer"
    phone.keyevent(4)
    assert phone.state().page == "home"
    phone.keyevent("KEYCODE_BACK")  # BACK on the home screen does nothing
    assert phone.state().page == "home"


def test_text_needs_focus_and_enter_submits_only_focused_field() -> None:
    phone = Phone()
    phone.input_text("dropped")  # no focused field: Android drops the text
    phone.swipe(540, 1900, 540, 700)
    field = phone.compose().find(resource_id=f"{LAUNCHER}:id/drawer_search")
    assert field is not None and field.text == ""
    phone.tap(*_center(field))
    assert phone.state().focused_field == f"{LAUNCHER}:id/drawer_search"
    phone.input_text("Net")
    phone.input_text("flix")
    assert phone.state().field_text == "Netflix"
    phone.keyevent(66)  # a unique match launches it, as the drawer search does
    assert phone.state().params["label"] == "Netflix"


def test_drawer_scrolls_when_many_apps_are_installed() -> None:
    phone = Phone()
    phone.installed |= {f"App {i:02d}" for i in range(60)}
    phone.swipe(540, 1900, 540, 700)

    def labels() -> set[str]:
        return {n.content_desc for n in phone.compose().walk() if n.clickable and n.content_desc}

    before = labels()
    assert "App 00" in before and "WhatsApp" not in before
    for _ in range(10):
        phone.swipe(540, 2000, 540, 600)
    after = labels()
    assert "WhatsApp" in after and "App 00" not in after
    for node in phone.compose().walk():  # nothing is drawn over the status or navigation bars
        if node.content_desc.startswith("App"):
            assert node.bounds[1] >= 84 and node.bounds[3] <= 2274


def test_notification_shade_opens_from_top_and_closes_on_back() -> None:
    phone = Phone()
    phone.swipe(540, 10, 540, 1200)
    assert phone.state().shade_open
    assert phone.compose().find(resource_id="com.android.systemui:id/notification") is not None
    phone.keyevent(4)
    assert not phone.state().shade_open
    phone.notifications["Gmail"] = False
    phone.swipe(540, 10, 540, 1200)
    texts = [n.text for n in phone.compose().walk()]
    assert not any(t.startswith("Gmail:") for t in texts)
    assert any(t.startswith("Calendar:") for t in texts)


def test_unknown_keycodes_are_noops_and_home_resets_launcher() -> None:
    phone = Phone()
    phone.swipe(540, 1900, 540, 700)
    before = phone.state()
    phone.keyevent(24)  # volume up: nothing bound to it here
    assert phone.state() == before
    phone.keyevent(3)
    assert phone.state().page == "home"


def test_nav_bar_buttons_act_like_keys() -> None:
    phone = Phone()
    phone.swipe(540, 1900, 540, 700)
    back = phone.compose().find(resource_id="com.android.systemui:id/back")
    assert back is not None
    phone.tap(*_center(back))
    assert phone.state().page == "home"


def test_reset_restores_boot_state() -> None:
    phone = Phone()
    boot = phone.state()
    phone.swipe(540, 1900, 540, 700)
    phone.installed.add("Extra")
    phone.alarms["06:00"] = True
    phone.reset()
    assert phone.state() == boot


def test_back_at_an_apps_root_returns_to_what_was_in_front_when_it_opened() -> None:
    from distrl_tasks.sim.apps import CHROME, LAUNCHER, PLAY_STORE, SETTINGS

    phone = Phone(seed=0)
    # opened from home: BACK at the root goes home, not to the app used before (a device's task
    # stack: the launcher's task is behind every task it started)
    assert phone.launch(CHROME)
    phone.go_home()
    assert phone.launch(SETTINGS)
    phone.back()
    assert phone.front.package == LAUNCHER
    # opened over another app (a link, `am start` while Chrome is in front): BACK returns there
    assert phone.launch(CHROME)
    assert phone.launch(PLAY_STORE)
    phone.back()
    assert phone.front.package == CHROME
    phone.back()
    assert phone.front.package == LAUNCHER
