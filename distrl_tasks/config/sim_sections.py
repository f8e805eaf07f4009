"""The ``sim`` section: the embedded simulated device farm and its nested settings.

``sim.latency`` (per-command latency), ``sim.faults`` (device failures), ``sim.dynamics`` (the
live world's interruptions and drift, with per-perturbation ``rates``) and ``sim`` itself. Kept
apart from :mod:`distrl_tasks.config.sections` so that each module stays small; every class
checks its own values and names the dotted key in its :class:`ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from distrl_tasks.config.typed_yaml import check as _check


@dataclass(frozen=True)
class LatencyConfig:
    """Per-command latency of simulated devices (seconds), calibrated to emulators (sources in
    sim/realism.py; docs/simulator.md, "Realism knobs")."""

    enabled: bool = False  # draw latencies at all; off in tests for determinism
    time_scale: float = 1.0  # multiply every drawn latency (0.1 = ten times faster than real)
    screenshot: tuple[float, float] = (0.25, 0.08)  # lognormal (median, sigma-of-log) of screencap
    input: tuple[float, float] = (0.12, 0.05)  # input tap/swipe/keyevent round trip
    text: tuple[float, float] = (0.6, 0.2)  # input text (per command, not per character)
    app_launch: tuple[float, float] = (1.2, 0.3)  # cold start of an app activity
    page_load: tuple[float, float] = (1.5, 0.5)  # a web page or search result load
    reset: tuple[float, float] = (4.0, 1.0)  # snapshot load of a clean home screen

    def validate(self, key: str) -> None:
        _check(self.time_scale >= 0, f"{key}.time_scale", "must be >= 0")
        for name in ("screenshot", "input", "text", "app_launch", "page_load", "reset"):
            median, sigma = getattr(self, name)
            _check(median >= 0 and sigma >= 0, f"{key}.{name}", "median and sigma must be >= 0")


@dataclass(frozen=True)
class FaultConfig:
    """Injected device faults; each probability is per shell command unless stated."""

    enabled: bool = False  # inject faults at all
    offline_prob: float = 0.0  # device turns `offline` for `offline_seconds`
    offline_seconds: float = 2.0  # how long an offline spell lasts
    hang_prob: float = 0.0  # a command hangs for `hang_seconds` (past the client's timeout)
    hang_seconds: float = 30.0  # length of a hang
    crash_prob: float = 0.0  # the device crashes: every command fails until `simctl reset`
    blank_frame_prob: float = 0.0  # a screenshot right after a navigation is a white frame

    def validate(self, key: str) -> None:
        for name in ("offline_prob", "hang_prob", "crash_prob", "blank_frame_prob"):
            p = getattr(self, name)
            _check(0.0 <= p <= 1.0, f"{key}.{name}", f"probability must be in [0, 1], got {p}")
        _check(self.offline_seconds >= 0, f"{key}.offline_seconds", "must be >= 0")
        _check(self.hang_seconds >= 0, f"{key}.hang_seconds", "must be >= 0")


@dataclass(frozen=True)
class DynamicsRatesConfig:
    """Per-perturbation rates in [0, 1] of the live and hostile profiles (static stays none);
    null keeps the profile's rate (docs/simulator.md, "Live-world dynamics")."""

    permission_location: float | None = (
        None  # location permission dialog on the first open of Maps/Chrome (per episode)
    )
    permission_notifications: float | None = (
        None  # notifications permission dialog on an app's first open (per episode)
    )
    chrome_signin: float | None = (
        None  # Chrome's "Turn on sync?" sheet on its first open (per episode)
    )
    cookie_consent: float | None = None  # cookie banner on the first shop/news page (per episode)
    app_interstitial: float | None = (
        None  # "Get the app" interstitial on a shop page, returns once (per episode)
    )
    rate_app: float | None = None  # Play Store "Rate this app" dialog (per episode)
    youtube_premium: float | None = None  # YouTube Premium promo sheet (per episode)
    heads_up: float | None = None  # heads-up notification over the top of the screen (per screen)
    anr: float | None = None  # app-not-responding dialog (per app screen)
    layout_variant: float | None = (
        None  # shop page layout variant: promo banner / cards without pictures (per episode)
    )
    search_box_position: float | None = None  # shop search box above the logo line (per episode)
    grid_layout: float | None = None  # shop results as a two-column grid, not a list (per episode)
    result_order: float | None = None  # Google organic results in another order (per episode)
    sponsored_results: float | None = None  # sponsored results above organic ones (per result page)
    did_you_mean: float | None = (
        None  # results for a rewritten query + "Search instead for" link (per result page)
    )
    slow_load: float | None = (
        None  # a spinner frame before a page paints, for 2 captures (per loading screen)
    )
    misleading_sponsored: float | None = (
        None  # an ad whose title matches the query but opens another page
    )
    fake_close: float | None = None  # promos get a fake close button that opens an ad (per episode)

    def validate(self, key: str) -> None:
        for name, rate in self.__dict__.items():
            if rate is not None:
                _check(0.0 <= rate <= 1.0, f"{key}.{name}", f"rate must be in [0, 1], got {rate}")

    def overrides(self) -> dict[str, float]:
        """The rates set here, by perturbation name."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class DynamicsConfig:
    """Live-world dynamics of simulated devices: interruptions, drift, misleading content."""

    profile: Literal["static", "live", "hostile"] = "live"  # online collection, eval, sim serve
    bootstrap_profile: Literal["static", "live", "hostile"] = "live"  # expert demonstrations
    rates: DynamicsRatesConfig = field(default_factory=DynamicsRatesConfig)  # per-perturbation

    def validate(self, key: str) -> None:
        self.rates.validate(f"{key}.rates")


@dataclass(frozen=True)
class SimConfig:
    """The embedded simulated Android device farm."""

    host: str = "127.0.0.1"  # bind address of the ADB server; loopback only by default
    port: int = 15037  # ADB server port of the embedded farm (0 = any free port)
    listen_backlog: int = 1024  # pending connections the ADB server's socket queues (Linux caps)
    idle_timeout_s: float = 300.0  # close a client connection idle this long between requests
    devices: int = 8  # devices of `distrl sim serve` (rounds use orchestration's topology)
    seed: int = 0  # seeds content, latency and faults
    render_scale: float = 0.25  # display px per layout px: wm size = screencap = 1080x2400 x this
    expert_mistake_rate: float = 0.0  # probability of a wrong tap / typo / detour per expert step
    latency: LatencyConfig = field(default_factory=LatencyConfig)  # emulator-like latencies
    faults: FaultConfig = field(default_factory=FaultConfig)  # injected faults
    dynamics: DynamicsConfig = field(default_factory=DynamicsConfig)  # live-world perturbations

    def validate(self, key: str) -> None:
        _check(0 <= self.port < 65536, f"{key}.port", "must be a TCP port (0..65535)")
        _check(1 <= self.devices <= 256, f"{key}.devices", "must be in 1..256")
        _check(self.listen_backlog >= 1, f"{key}.listen_backlog", "must be >= 1")
        _check(self.idle_timeout_s > 0, f"{key}.idle_timeout_s", "must be > 0")
        _check(0.05 <= self.render_scale <= 1.0, f"{key}.render_scale", "must be in [0.05, 1]")
        _check(
            0.0 <= self.expert_mistake_rate < 1.0,
            f"{key}.expert_mistake_rate",
            "must be in [0, 1)",
        )
