"""Emulator-like latency and faults for simulated devices (both off by default).

The ADB server asks a :class:`DeviceRealism` (one per device, seeded from the farm seed and the
serial, so devices are independent and runs repeat exactly) three things per shell command:
whether the device is reachable (offline spells), what goes wrong before the command runs (crash,
hang), and how long the command took (latency, drawn per category the command touched). All
waiting is done by the caller with ``asyncio.sleep``, so a slow device never blocks the others.

Latency model: each category has a lognormal latency ``median * exp(sigma * N(0, 1))`` times
``LatencyConfig.time_scale``. A command's delay is the sum over the categories it touched, e.g.
a tap that opens an app costs ``input + app_launch``.

Calibration and sources (the DigiRL/DistRL papers, their code and issue trackers; "measured"
means reported by others, "estimate" means ours, not measured on real emulators in this project):

* ``reset`` median 4 s, sigma 1: snapshot load of a clean AVD is ≈5 s vs ≈2 min for a cold boot
  (DigiRL issue #44, users' reports). DigiRL instead re-clones the AVD on every reset, which took
  ≈62.5% of iteration time (issue #51) - our reset models the snapshot path, not re-cloning.
* ``screenshot`` 0.25 s, ``input`` 0.12 s, ``text`` 0.6 s: estimates for ``adb exec-out
  screencap -p`` and ``adb shell input`` round trips on a KVM-accelerated x86_64 emulator.
  DigiRL's env adds fixed sleeps on top (5 s per observation, 4 s after TYPE, 30 s after boot -
  those are client-side waits of that code, not device latency, so they are not modelled here).
* ``app_launch`` 1.2 s and ``page_load`` 1.5 s (sigma 0.3 / 0.5): estimates for an activity cold
  start and a web search result page.
* Sanity check (estimate): a 10-step episode costs about 10 x (0.25 + 0.12) s plus a page load
  on roughly every third step and one reset, ≈ 13 s, i.e. ≈ 4.6 trajectories/min per device or
  ≈ 9 per two-emulator worker thread. DistRL reports 6-10 trajectories/min per worker thread
  (third-party notes on its appendix, unverified), so the defaults are in the right range.

Faults (``FaultConfig``, probabilities per command): ``offline`` (the device is listed as
``offline`` and every request fails with adb's "device offline" for ``offline_seconds``),
``hang`` (the command stalls ``hang_seconds`` before answering), ``crash`` (every command but
``simctl`` fails until ``simctl reset``), ``blank_frame`` (the first screencap after a navigation
is a white frame, as when an emulator has not painted yet; DigiRL's env re-captures frames with
more than 2.3M white pixels for exactly this reason). Fault durations are not time-scaled.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from distrl_tasks.config import FaultConfig, LatencyConfig
from distrl_tasks.sim.render import blank_png

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

CATEGORIES = ("screenshot", "input", "text", "app_launch", "page_load", "reset")


class LatencyModel:
    """Seeded lognormal latencies per command category."""

    def __init__(self, cfg: LatencyConfig, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng

    def sample(self, category: str) -> float:
        """One latency in seconds for ``category`` (0 when latency is disabled)."""
        if category not in CATEGORIES:
            raise ValueError(f"unknown latency category {category!r}; expected one of {CATEGORIES}")
        if not self.cfg.enabled:
            return 0.0
        median, sigma = getattr(self.cfg, category)
        return median * math.exp(sigma * self.rng.gauss(0.0, 1.0)) * self.cfg.time_scale

    def total(self, categories: Iterable[str]) -> float:
        return sum(self.sample(c) for c in categories)


class FaultInjector:
    """Seeded fault rolls and the offline clock of one device."""

    def __init__(
        self,
        cfg: FaultConfig,
        rng: random.Random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.rng = rng
        self.clock = clock
        self.offline_until = 0.0
        self.counts: dict[str, int] = {"offline": 0, "hang": 0, "crash": 0, "blank": 0}

    def _roll(self, p: float) -> bool:
        # always draw, so one fault's probability does not shift another's random stream
        return self.cfg.enabled and self.rng.random() < p

    def is_offline(self) -> bool:
        return self.clock() < self.offline_until

    def roll_offline(self) -> bool:
        """Maybe start an offline spell; True if the device is (now) offline."""
        if self.is_offline():
            return True
        if self._roll(self.cfg.offline_prob):
            self.offline_until = self.clock() + self.cfg.offline_seconds
            self.counts["offline"] += 1
            return self.cfg.offline_seconds > 0
        return False

    def roll_command(self, phone: Phone) -> float:
        """Crash the phone and/or pick a hang before a command; returns seconds to stall."""
        crash = self._roll(self.cfg.crash_prob)
        hang = self._roll(self.cfg.hang_prob)
        if crash and not phone.crashed:
            phone.crashed = True
            self.counts["crash"] += 1
        if hang:
            self.counts["hang"] += 1
            return self.cfg.hang_seconds
        return 0.0

    def blank_frame(self, phone: Phone) -> bool:
        """Whether this screencap shows a white frame (only right after a navigation)."""
        fresh = phone.just_navigated
        phone.just_navigated = False  # the next capture sees a painted screen
        blank = self._roll(self.cfg.blank_frame_prob)
        if fresh and blank:
            self.counts["blank"] += 1
            return True
        return False


class DeviceRealism:
    """Latency and faults of one device, with independent seeded random streams."""

    def __init__(
        self,
        latency: LatencyConfig,
        faults: FaultConfig,
        *,
        seed: int,
        serial: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # string seeds hash deterministically (unlike hash()), so runs repeat exactly
        self.latency = LatencyModel(latency, random.Random(f"{seed}/{serial}/latency"))
        self.faults = FaultInjector(faults, random.Random(f"{seed}/{serial}/faults"), clock)

    def screenshot(self, phone: Phone) -> bytes:
        """The PNG a screencap returns now: the screen, or a white frame after a navigation."""
        if self.faults.blank_frame(phone):
            return blank_png(phone.render_scale)
        return phone.screenshot_png()

    def before_command(self, phone: Phone, command: str) -> float:
        """Fault rolls before a shell command; ``simctl`` (the control plane) is exempt."""
        if command.lstrip().startswith("simctl"):
            return 0.0
        return self.faults.roll_command(phone)

    def command_delay(self, categories: Iterable[str]) -> float:
        return self.latency.total(categories)
