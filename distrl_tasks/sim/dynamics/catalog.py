"""The perturbations of the live world, their profiles and their rates.

Each perturbation has a *scope*: ``episode`` ones are drawn once per episode (is this episode's
Chrome going to ask about sync on its first open?) and show at their trigger; ``screen`` ones are
drawn again on every new screen (a heads-up notification, a slow load). A rate is the
probability of that draw. Profiles: ``static`` (nothing; what demonstrations are recorded on, as
AitW's static dataset was), ``live`` (the default for online collection and evaluation) and
``hostile`` (robustness evaluation: more of everything, plus misleading content).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Perturbation:
    """One kind of perturbation: its name, family, scope and what triggers it."""

    name: str
    family: str  # interruption | drift | misleading
    scope: str  # episode | screen
    trigger: str  # a short description, shown by `simctl dynamics`


PERTURBATIONS: tuple[Perturbation, ...] = (
    # interruptions: modal overlays (a tap elsewhere does nothing), except heads-up
    Perturbation("permission_location", "interruption", "episode", "first open of Maps/Chrome"),
    Perturbation("permission_notifications", "interruption", "episode", "first open of an app"),
    Perturbation("chrome_signin", "interruption", "episode", "first open of Chrome"),
    Perturbation("cookie_consent", "interruption", "episode", "first shop or news page"),
    Perturbation("app_interstitial", "interruption", "episode", "a shop page (returns once)"),
    Perturbation("rate_app", "interruption", "episode", "opening the Play Store"),
    Perturbation("youtube_premium", "interruption", "episode", "opening YouTube"),
    Perturbation("heads_up", "interruption", "screen", "any new screen"),
    Perturbation("anr", "interruption", "screen", "any new app screen"),
    # drift: the same goal looks different from episode to episode
    Perturbation("layout_variant", "drift", "episode", "shop pages"),
    Perturbation("search_box_position", "drift", "episode", "shop pages"),
    Perturbation("grid_layout", "drift", "episode", "shop result pages"),
    Perturbation("result_order", "drift", "episode", "Google result pages"),
    Perturbation("sponsored_results", "drift", "screen", "Google and shop result pages"),
    Perturbation("did_you_mean", "drift", "screen", "Google and shop result pages"),
    Perturbation("slow_load", "drift", "screen", "a page or app load"),
    # misleading content (hostile only by default)
    Perturbation("misleading_sponsored", "misleading", "screen", "Google and shop result pages"),
    Perturbation("fake_close", "misleading", "episode", "promos and interstitials"),
)
NAMES: tuple[str, ...] = tuple(p.name for p in PERTURBATIONS)
BY_NAME: Mapping[str, Perturbation] = MappingProxyType({p.name: p for p in PERTURBATIONS})

_LIVE = {
    "permission_location": 0.3,
    "permission_notifications": 0.2,
    "chrome_signin": 0.3,
    "cookie_consent": 0.3,
    "app_interstitial": 0.2,
    "rate_app": 0.3,
    "youtube_premium": 0.3,
    "heads_up": 0.05,
    "anr": 0.02,
    "layout_variant": 0.5,
    "search_box_position": 0.3,
    "grid_layout": 0.3,
    "result_order": 0.3,
    "sponsored_results": 0.3,
    "did_you_mean": 0.1,
    "slow_load": 0.15,
    "misleading_sponsored": 0.0,
    "fake_close": 0.0,
}
_HOSTILE = {
    **{k: min(1.0, round(v * 1.6, 3)) for k, v in _LIVE.items()},
    "misleading_sponsored": 0.3,
    "fake_close": 0.5,
}
PROFILES: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "static": MappingProxyType(dict.fromkeys(NAMES, 0.0)),
        "live": MappingProxyType(_LIVE),
        "hostile": MappingProxyType(_HOSTILE),
    }
)


def parse_profile(name: str) -> str:
    """The profile called ``name`` (case and spaces ignored).

    Raises:
        ValueError: not one of ``static``, ``live``, ``hostile``.
    """
    key = str(name).strip().lower()
    if key not in PROFILES:
        raise ValueError(f"unknown dynamics profile {name!r}; expected one of {list(PROFILES)}")
    return key


def profile_rates(
    profile: str, overrides: Mapping[str, float | None] | None = None
) -> dict[str, float]:
    """Per-perturbation rates of ``profile`` with ``overrides`` (None values: keep the profile's).

    ``static`` stays all zeros whatever the overrides (they are still checked): it is the world
    demonstrations are recorded in, so a rate set for the live world never leaks into it.

    Raises:
        ValueError: an unknown profile or perturbation name, or a rate outside [0, 1].
    """
    rates = dict(PROFILES[parse_profile(profile)])
    for name, rate in (overrides or {}).items():
        if name not in BY_NAME:
            raise ValueError(f"unknown perturbation {name!r}; expected one of {list(NAMES)}")
        if rate is None:
            continue
        if not 0.0 <= float(rate) <= 1.0:
            raise ValueError(f"rate of {name} must be in [0, 1], got {rate}")
        rates[name] = float(rate)
    if profile.strip().lower() == "static":
        return dict(PROFILES["static"])
    return rates
