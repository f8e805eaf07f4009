"""Seeded latency distributions and fault injection of simulated devices."""

from __future__ import annotations

import io
import math
import random
import statistics

import pytest
from PIL import Image

from distrl_tasks.config import FaultConfig, LatencyConfig
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.realism import CATEGORIES, DeviceRealism, FaultInjector, LatencyModel

Z90 = 1.2815515655446004  # standard normal 90% quantile


def draws(cfg: LatencyConfig, category: str, n: int = 4000, seed: int = 1) -> list[float]:
    model = LatencyModel(cfg, random.Random(seed))
    return [model.sample(category) for _ in range(n)]


def test_latency_is_zero_when_disabled():
    model = LatencyModel(LatencyConfig(enabled=False), random.Random(0))
    assert all(model.sample(c) == 0.0 for c in CATEGORIES)
    assert model.total(["input", "app_launch"]) == 0.0


@pytest.mark.parametrize("category", CATEGORIES)
def test_lognormal_median_and_spread_match_config(category):
    cfg = LatencyConfig(enabled=True)
    median, sigma = getattr(cfg, category)
    xs = draws(cfg, category)
    assert statistics.median(xs) == pytest.approx(median, rel=0.06)
    logs = [math.log(x) for x in xs]
    assert statistics.pstdev(logs) == pytest.approx(sigma, rel=0.06)
    q90 = sorted(xs)[int(0.9 * len(xs))]
    assert q90 == pytest.approx(median * math.exp(Z90 * sigma), rel=0.08)


def test_time_scale_scales_every_draw():
    base = draws(LatencyConfig(enabled=True), "page_load", n=200, seed=7)
    fast = draws(LatencyConfig(enabled=True, time_scale=0.1), "page_load", n=200, seed=7)
    assert fast == pytest.approx([0.1 * b for b in base])


def test_total_sums_categories_and_rejects_unknown():
    cfg = LatencyConfig(enabled=True, input=(0.2, 0.0), app_launch=(1.0, 0.0))
    model = LatencyModel(cfg, random.Random(0))
    assert model.total(["input", "app_launch"]) == pytest.approx(1.2)
    with pytest.raises(ValueError, match="unknown latency category 'warp'"):
        model.sample("warp")


def test_devices_have_independent_reproducible_streams():
    def seq(seed: int, serial: str) -> list[float]:
        r = DeviceRealism(LatencyConfig(enabled=True), FaultConfig(), seed=seed, serial=serial)
        return [r.command_delay(["screenshot"]) for _ in range(5)]

    assert seq(0, "emulator-5554") == seq(0, "emulator-5554")
    assert seq(0, "emulator-5554") != seq(0, "emulator-5556")
    assert seq(0, "emulator-5554") != seq(1, "emulator-5554")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_offline_spell_lasts_offline_seconds():
    clock = FakeClock()
    cfg = FaultConfig(enabled=True, offline_prob=1.0, offline_seconds=2.0)
    faults = FaultInjector(cfg, random.Random(0), clock)
    assert not faults.is_offline()
    assert faults.roll_offline() and faults.is_offline()
    clock.now += 1.9
    assert faults.is_offline()
    clock.now += 0.2
    assert not faults.is_offline()
    assert faults.counts["offline"] == 1


def test_fault_frequency_matches_probability():
    cfg = FaultConfig(enabled=True, hang_prob=0.3, hang_seconds=5.0)
    faults = FaultInjector(cfg, random.Random(3))
    phone = Phone()
    stalls = [faults.roll_command(phone) for _ in range(3000)]
    assert stalls.count(5.0) / len(stalls) == pytest.approx(0.3, abs=0.03)
    assert set(stalls) == {0.0, 5.0}
    assert not phone.crashed


def test_faults_disabled_never_fire():
    cfg = FaultConfig(enabled=False, offline_prob=1.0, hang_prob=1.0, crash_prob=1.0)
    faults = FaultInjector(cfg, random.Random(0))
    phone = Phone()
    assert not faults.roll_offline()
    assert faults.roll_command(phone) == 0.0 and not phone.crashed


def test_crash_marks_the_phone_until_reset_and_simctl_is_exempt():
    cfg = FaultConfig(enabled=True, crash_prob=1.0)
    realism = DeviceRealism(LatencyConfig(), cfg, seed=0, serial="emulator-5554")
    phone = Phone()
    assert realism.before_command(phone, "  simctl reset") == 0.0 and not phone.crashed
    realism.before_command(phone, "input tap 1 1")
    assert phone.crashed and phone.state().crashed
    phone.reset()
    assert not phone.crashed


def test_blank_frame_only_right_after_navigation():
    cfg = FaultConfig(enabled=True, blank_frame_prob=1.0)
    realism = DeviceRealism(LatencyConfig(), cfg, seed=0, serial="emulator-5554")
    phone = Phone()
    phone.just_navigated = False
    normal = realism.screenshot(phone)
    assert normal == phone.screenshot_png()
    phone.keyevent(3)
    phone.swipe(540, 1800, 540, 600)  # opens the app drawer: a navigation
    assert phone.just_navigated
    blank = Image.open(io.BytesIO(realism.screenshot(phone))).convert("RGB")
    assert blank.size == Image.open(io.BytesIO(normal)).size
    assert blank.getextrema() == ((255, 255), (255, 255), (255, 255))
    assert realism.screenshot(phone) == phone.screenshot_png()  # the next frame has painted
    assert realism.faults.counts["blank"] == 1
