"""The device model and live dynamics as an ADB client sees them (real adbutils, real server)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import adbutils
import pytest
from PIL import Image

from distrl_tasks.config import load_config
from distrl_tasks.protocol.ui_dump import Screen
from distrl_tasks.sim.dynamics import NAMES
from distrl_tasks.tasks.expert import run_expert
from distrl_tasks.tasks.goal_farms import running_farm

ADB = shutil.which("adb")
needs_adb = pytest.mark.skipif(
    ADB is None, reason="the real `adb` client is not installed (make system-deps)"
)


def nodes(xml: str) -> list[tuple[str, str, tuple[int, int, int, int]]]:
    """(text, content-desc, bounds) of every node of a dump."""
    pat = r'text="([^"]*)"[^>]*?content-desc="([^"]*)"[^>]*?bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"'
    return [(t, d, tuple(map(int, b))) for t, d, *b in re.findall(pat, xml)]


@pytest.mark.parametrize("scale", [0.25, 0.5])
def test_wm_size_is_the_screencap_size_and_bounds_taps_agree(scale: float) -> None:
    cfg = load_config(None, {"sim.render_scale": scale})
    with running_farm(1, sim_cfg=cfg.sim) as rf:
        d = adbutils.AdbClient(host=rf.host, port=rf.port).device("emulator-5554")
        size = d.screenshot().size
        assert tuple(d.window_size()) == size == (round(1080 * scale), round(2400 * scale))
        assert f"Physical size: {size[0]}x{size[1]}" in d.shell("wm size")
        assert f"init={size[0]}x{size[1]}" in d.shell("dumpsys window")
        xml = d.dump_hierarchy()
        root = nodes(xml)[0][2]
        assert root == (0, 0, *size)  # uiautomator bounds are in the same pixels
        # a new user taps a screenshot pixel taken from the dump: it lands on that icon
        x1, y1, x2, y2 = next(b for t, desc, b in nodes(xml) if desc == "Chrome")
        d.click((x1 + x2) // 2, (y1 + y2) // 2)
        assert json.loads(d.shell("simctl state"))["app"] == "com.android.chrome"


def test_simctl_dynamics_and_state_report_the_profile_and_what_is_on_screen() -> None:
    cfg = load_config(None, {"sim.dynamics.rates.permission_location": 1.0})
    with running_farm(2, sim_cfg=cfg.sim, dynamics="live") as rf:
        d = adbutils.AdbClient(host=rf.host, port=rf.port).device("emulator-5554")
        shown = json.loads(d.shell("simctl dynamics"))
        assert shown["profile"] == "live" and shown["rates"]["permission_location"] == 1.0
        d.shell("monkey -p com.android.chrome -c android.intent.category.LAUNCHER 1")
        state = json.loads(d.shell("simctl state"))
        assert state["dynamics"]["profile"] == "live"
        assert state["dynamics"]["on_screen"][0] == "permission_location"
        assert "Don't allow" in d.dump_hierarchy()
        # the control plane is never blocked by a modal dialog
        assert json.loads(d.shell("simctl task check"))["success"] is False
        out = json.loads(d.shell("simctl dynamics set static"))
        assert out["profile"] == "static" and out["on_screen"] == []
        assert "Don't allow" not in d.dump_hierarchy()
        bad = d.shell2("simctl dynamics set wild")
        assert bad.returncode == 2 and "unknown dynamics profile 'wild'" in bad.output
        other = adbutils.AdbClient(host=rf.host, port=rf.port).device("emulator-5556")
        assert json.loads(other.shell("simctl dynamics"))["profile"] == "live"


def test_expert_over_adb_under_hostile_clears_interruptions() -> None:
    forced = {f"sim.dynamics.rates.{n}": 1.0 for n in ("chrome_signin", "cookie_consent")}
    cfg = load_config(None, forced)
    with running_farm(1, sim_cfg=cfg.sim, dynamics="hostile") as rf:
        out = run_expert(rf.host, rf.port, "emulator-5554", "Go to bestbuy.com")
        plans = " ".join(a["action"] for a in out["actions"])
        assert out["success"] and "dismiss: Use without an account" in plans
        assert "dismiss: Reject all" in plans


def test_expert_over_adb_takes_search_instead_on_a_rewritten_grid() -> None:
    names = ("did_you_mean", "grid_layout", "search_box_position")
    cfg = load_config(None, {f"sim.dynamics.rates.{n}": 1.0 for n in names})
    goal = "Go to bestbuy.com, search for 'razer blade', and select the first entry"
    with running_farm(1, sim_cfg=cfg.sim, dynamics="live") as rf:
        out = run_expert(rf.host, rf.port, "emulator-5554", goal)
        plans = " ".join(a["action"] for a in out["actions"])
        assert out["success"] and "search the original" in plans, plans


def test_sim_serve_dynamics_flag() -> None:
    bad = subprocess.run(
        [sys.executable, "-m", "distrl_tasks.cli", "sim", "serve", "--dynamics", "wild"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "sim.dynamics.profile: must be one of ['static', 'live', 'hostile']" in bad.stderr
    serve = [sys.executable, "-m", "distrl_tasks.cli", "sim", "serve", "--port", "0"]
    proc = subprocess.Popen(
        [*serve, "--devices", "1", "--dynamics", "hostile"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "dynamics hostile" in banner
        port = int(re.search(r":(\d+),", banner).group(1))
        d = adbutils.AdbClient(host="127.0.0.1", port=port).device("emulator-5554")
        assert json.loads(d.shell("simctl state"))["dynamics"]["profile"] == "hostile"
        png = d.shell("screencap -p", encoding=None)
        assert Image.open(io.BytesIO(png)).size == tuple(d.window_size())
    finally:
        proc.terminate()
        proc.wait(15)


# ----- the dump as a device gives it: a window of its own is dumped alone --------------------
def adb(port: int, *args: str) -> bytes:
    """The real adb client against the farm's server only (-P; never its default 5037)."""
    assert ADB is not None
    env = {**os.environ, "ADB_SERVER_SOCKET": f"tcp:127.0.0.1:{port}"}
    env.pop("ANDROID_SERIAL", None)
    proc = subprocess.run(
        [ADB, "-P", str(port), "-s", "emulator-5554", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        env=env,
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout


def adb_dump(port: int, tmp: Path) -> Screen:
    """``uiautomator dump`` to a file, read back with ``adb pull`` and ``exec-out cat``; every
    node of a dump names one package (the window's)."""
    out = adb(port, "shell", "uiautomator", "dump", "/sdcard/window_dump.xml")
    assert out == b"UI hierchary dumped to: /sdcard/window_dump.xml\n"
    adb(port, "pull", "/sdcard/window_dump.xml", str(tmp / "window_dump.xml"))
    xml = (tmp / "window_dump.xml").read_bytes()
    assert adb(port, "exec-out", "cat /sdcard/window_dump.xml") == xml
    screen = Screen.parse(xml.decode())
    assert set(re.findall(r'package="([^"]*)"', xml.decode())) == {screen.package}
    return screen


def adb_tap(port: int, screen: Screen, label: str = "", rid: str = "") -> None:
    node = screen.by_label(label) if label else screen.by_rid(rid)
    assert node is not None, (label, rid, [n.label for n in screen.nodes])
    x, y = node.center
    adb(port, "shell", "input", "tap", str(int(x)), str(int(y)))


def forced(*names: str) -> dict[str, float]:
    """Config overrides: every perturbation off but ``names``, which always fire."""
    return {f"sim.dynamics.rates.{n}": float(n in names) for n in NAMES}


def assert_alone(screen: Screen, package: str, buttons: list[str]) -> None:
    """The dump is the dialog's window: its package, its buttons, nothing of the app."""
    assert screen.package == package
    assert [n.label for n in screen.clickables()] == buttons
    for app_id in (":id/url_bar", ":id/product_item", "systemui:id/navigation_bar_frame"):
        assert screen.by_rid(app_id) is None, app_id


PERMISSIONS = "com.google.android.permissioncontroller"


@needs_adb
def test_uiautomator_dump_shows_a_system_dialog_or_activity_alone_and_a_banner_with_its_page(
    tmp_path: Path,
) -> None:
    names = ("permission_location", "chrome_signin", "permission_notifications")
    cfg = load_config(None, forced(*names, "cookie_consent", "app_interstitial"))
    with running_farm(1, sim_cfg=cfg.sim, dynamics="live") as rf:
        p = rf.port
        adb(p, "shell", "monkey -p com.android.chrome -c android.intent.category.LAUNCHER 1")
        # Chrome's first open: location, sign-in, notifications, each its own window in turn
        for package, buttons in (
            (PERMISSIONS, ["While using the app", "Don't allow"]),
            ("com.android.chrome", ["Continue as Alex", "Use without an account"]),
            (PERMISSIONS, ["Allow", "Don't allow"]),
        ):
            screen = adb_dump(p, tmp_path)
            assert_alone(screen, package, buttons)
            adb_tap(p, screen, buttons[-1])
        page = adb_dump(p, tmp_path)
        assert page.package == "com.android.chrome" and page.by_rid(":id/url_bar") is not None
        adb_tap(p, page, rid=":id/url_bar")
        adb(p, "shell", "input", "text", "bestbuy.com")
        adb(p, "shell", "input", "keyevent", "66")
        # a cookie banner is part of the page: the page's nodes stay, with the banner's
        banner = adb_dump(p, tmp_path)
        assert banner.package == "com.android.chrome"
        assert banner.by_label("Accept all") and banner.by_label("Reject all")
        assert banner.by_rid(":id/url_bar") is not None
        assert banner.by_rid("systemui:id/navigation_bar_frame") is not None
        page_nodes = [n for n in banner.nodes if "cookie" not in n.rid and n.text]
        assert len(page_nodes) > 5
        adb_tap(p, banner, "Reject all")
        # the "Get the app" interstitial is an activity of its own: dumped alone
        screen = adb_dump(p, tmp_path)
        assert_alone(screen, "com.android.chrome", ["Open app", "Continue in browser"])
        assert screen.by_rid(":id/app_interstitial") is not None
        # the screenshot still draws the page around the card: its toolbar is the page's own
        toolbar = banner.by_rid(":id/url_bar").bounds
        under = Image.open(io.BytesIO(adb(p, "exec-out", "screencap -p"))).convert("RGB")
        adb_tap(p, screen, "Continue in browser")
        assert adb_dump(p, tmp_path).by_rid(":id/url_bar") is not None
        page_png = Image.open(io.BytesIO(adb(p, "exec-out", "screencap -p"))).convert("RGB")
        assert under.crop(toolbar).tobytes() == page_png.crop(toolbar).tobytes()
        assert under.tobytes() != page_png.tobytes()


@needs_adb
def test_uiautomator_dump_shows_the_app_not_responding_dialog_alone(tmp_path: Path) -> None:
    cfg = load_config(None, forced("anr"))
    with running_farm(1, sim_cfg=cfg.sim, dynamics="live") as rf:
        p = rf.port
        adb(p, "shell", "monkey -p com.android.chrome -c android.intent.category.LAUNCHER 1")
        screen = adb_dump(p, tmp_path)
        assert_alone(screen, "android", ["Close app", "Wait"])
        assert screen.by_rid("android:id/aerr_dialog") is not None
        assert json.loads(adb(p, "shell", "simctl state"))["app"] == "com.android.chrome"
        adb_tap(p, screen, "Close app")
        home = adb_dump(p, tmp_path)
        assert home.package != "android" and home.by_label("Chrome") is not None
