"""The device model and live dynamics as an ADB client sees them (real adbutils, real server)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import adbutils
import pytest
from PIL import Image

from distrl_tasks.config import load_config
from distrl_tasks.tasks.expert import run_expert
from distrl_tasks.tasks.goal_farms import running_farm


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
