"""The world an evaluation is cached under: a result is reused only where it was judged."""

from __future__ import annotations

import dataclasses

from distrl_tasks.config import Config, SimConfig
from distrl_tasks.stages.evaluate import world_key


def sim(profile: str = "live", seed: int = 0, **changes) -> SimConfig:
    base = Config().sim
    dynamics = dataclasses.replace(base.dynamics, profile=profile)
    if "rates" in changes:
        rates = dataclasses.replace(base.dynamics.rates, **changes.pop("rates"))
        dynamics = dataclasses.replace(dynamics, rates=rates)
    if "faults" in changes:
        changes["faults"] = dataclasses.replace(base.faults, **changes["faults"])
    return dataclasses.replace(base, dynamics=dynamics, seed=seed, **changes)


def test_the_static_world_draws_nothing_so_its_key_is_the_profile_alone() -> None:
    assert world_key(sim("static", 0)) == world_key(sim("static", 7)) == "static"
    # rates belong to the live profiles: static ignores them, so its key does too
    assert world_key(sim("static", 3, rates={"chrome_signin": 1.0})) == "static"


def test_a_drawn_world_is_named_by_its_profile_and_seed() -> None:
    assert world_key(sim("live", 0)) == "live-s0"
    assert world_key(sim("live", 2)) == "live-s2"
    assert world_key(sim("hostile", 1)) == "hostile-s1"


def test_rate_overrides_and_faults_make_another_world() -> None:
    plain = world_key(sim("live", 1))
    signin = world_key(sim("live", 1, rates={"chrome_signin": 1.0}))
    never = world_key(sim("live", 1, rates={"chrome_signin": 0.0}))
    assert len({plain, signin, never}) == 3
    assert signin.startswith("live-s1-") and len(signin) == len("live-s1-") + 8
    assert signin == world_key(sim("live", 1, rates={"chrome_signin": 1.0}))  # stable
    # faults draw from the seed even in the static world; disabled ones change nothing
    crashing = world_key(sim("static", 4, faults={"enabled": True, "crash_prob": 0.1}))
    assert crashing.startswith("static-s4-")
    assert world_key(sim("static", 4, faults={"crash_prob": 0.1})) == "static"
