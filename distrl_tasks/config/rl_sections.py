"""Nested sections of the RL and asynchronous-training settings (issue 21).

Kept apart from :mod:`distrl_tasks.config.sections` (which nests them) so that each module stays
small: ``algorithm.distrl`` (A-RIDE's form and its DPER priorities), ``algorithm.critic_prefit``
(the critic fitted before the actor trusts it), ``orchestration.continuous`` (the learner that
never waits and the staleness bound) and ``orchestration.curriculum`` (goals drawn by
difficulty). Every class checks its own values and names the dotted key in its
:class:`ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from distrl_tasks.config.typed_yaml import check as _check


@dataclass(frozen=True)
class DistRLConfig:
    """How A-RIDE's actor samples and weighs its data (default: the released code's form, with
    fewer windows per update).

    The ablation (``distrl bench ablation``) compares these; until it has run on the base policy
    the defaults are the released code's, because under a fresh critic the paper's signed
    advantage pushes down nearly every action (issue 21's replay study and the ablation:
    benchmarks/results/2026-11-25-ablation.md).
    """

    advantage: Literal["positive", "signed"] = "positive"  # 1[A>0] (released) or A (paper)
    top_p: float = 0.1  # actor windows come from the top p of trajectories by return (1 = all)
    # actor windows per optimizer step (gradient accumulation; released code: 64). 4 keeps an
    # update near DigiRL's cost, so asynchronous actors are not held at the replay window
    # (benchmarks/results/2026-11-29-distrl-windows-default.md)
    windows: int = 4
    # where windows start: "step" = uniform over stored steps (each step equally likely as a
    # start, so rewarded last steps are not under-sampled), "fit" = only starts with a full
    # window (the old sampler), "trajectory" = whole trajectories
    window_start: Literal["step", "fit", "trajectory"] = "step"
    entropy: Literal["off", "token_mean", "sum"] = "off"  # entropy bonus (released: off)
    # DPER priorities at a round's start: "all" re-scores every stored trajectory with the
    # current policy and critic; "new" scores only trajectories no earlier round scored and
    # keeps the others' last priority (saved with the learner state), as Ape-X does
    rescore: Literal["all", "new"] = "all"
    priority_weights: tuple[float, float, float] = (1.0, 1.0, 0.01)  # DPER w1 |delta|, w2 rho, w3 H
    priority_alpha: float = 0.5  # prioritized sampling exponent (the replay's, any algorithm)
    priority_beta: float = 0.4  # importance-weight exponent of prioritized sampling
    priority_rho_clip: float = 10.0  # cap on rho inside DPER priorities (one stale trajectory)

    def validate(self, key: str) -> None:
        _check(0.0 < self.top_p <= 1.0, f"{key}.top_p", "must be in (0, 1]")
        _check(1 <= self.windows <= 1024, f"{key}.windows", "must be in 1..1024")
        _check(0.0 <= self.priority_alpha <= 1.0, f"{key}.priority_alpha", "must be in [0, 1]")
        _check(0.0 <= self.priority_beta <= 1.0, f"{key}.priority_beta", "must be in [0, 1]")
        _check(self.priority_rho_clip > 0, f"{key}.priority_rho_clip", "must be > 0")


@dataclass(frozen=True)
class GroupConfig:
    """GRPO and GiGPO (``algorithm.name: grpo | gigpo``): critic-free, group-relative.

    Collection gives every drawn goal ``size`` attempts (spread over the devices), and the
    attempts of a goal in a round are its group: a trajectory's advantage is its return against
    the group's (GRPO); GiGPO adds step groups, the steps taken from the same observed state in
    the group's attempts (anchor states, keyed by the screenshot's hash as verl-agent keys them).
    """

    size: int = 4  # attempts per goal and round (the group; GRPO needs >= 2)
    clip_eps: float = 0.2  # PPO clip of the ratio pi / mu in the surrogate
    kl_coef: float = 0.0  # weight of KL(pi || reference), the policy the learner started from
    scale: bool = True  # divide by the group's std (False: mean-centred only, as Dr. GRPO)
    step_weight: float = 1.0  # GiGPO: omega, the weight of the step-group advantage

    def validate(self, key: str) -> None:
        _check(1 <= self.size <= 64, f"{key}.size", "must be in 1..64")
        _check(0.0 < self.clip_eps < 1.0, f"{key}.clip_eps", "must be in (0, 1)")
        _check(self.kl_coef >= 0.0, f"{key}.kl_coef", "must be >= 0")
        _check(self.step_weight >= 0.0, f"{key}.step_weight", "must be >= 0")


@dataclass(frozen=True)
class CriticPrefitConfig:
    """Critic-only steps on a fresh critic until its loss plateaus (no policy scoring)."""

    enabled: bool = True  # pre-fit a fresh critic (the learner's first round)
    bias_init: bool = True  # start the output bias at logit(mean target)
    min_steps: int = 20  # never stop before this many steps
    max_steps: int = 150  # cap: the actor starts after this many steps at the latest
    window: int = 10  # plateau rule: mean loss of the last `window` steps ...
    rel_tol: float = 0.02  # ... improved by less than rel_tol over the `window` before it

    def validate(self, key: str) -> None:
        _check(self.min_steps >= 0, f"{key}.min_steps", "must be >= 0")
        _check(self.max_steps >= self.min_steps, f"{key}.max_steps", "must be >= min_steps")
        _check(self.window >= 1, f"{key}.window", "must be >= 1")
        _check(0.0 <= self.rel_tol < 1.0, f"{key}.rel_tol", "must be in [0, 1)")


@dataclass(frozen=True)
class ContinuousConfig:
    """The asynchronous learner: replay ratio, version publishing, staleness bound."""

    # optimizer steps per new transition in asynchronous runs; > 0 makes their online phase one
    # continuous round (the learner never waits for a round), 0 = round learner rounds of
    # algorithm.actor_epochs steps. The learner trains only while updates < replay_ratio *
    # transitions seen (the ratio it reaches is logged). Synchronous runs never read it.
    replay_ratio: float = 0.1
    # the replay keeps the episodes this many rounds collect (workers x devices_per_worker x
    # episodes_per_device each), the round learner's window (data.replay_window_rounds) counted
    # in episodes, so short episodes keep as much history as long ones; 0 = every episode of
    # the run, up to data.replay_capacity transitions
    replay_window_rounds: int = 4
    publish_every_updates: int = 8  # K: publish a new policy version every K updates ...
    publish_every_s: float = 0.0  # ... or every T seconds with at least one update (0 = off)
    # eta: an actor does not start an episode with a policy more than eta versions behind the
    # learner's newest; it waits for the next published version (episodes already running
    # finish, and truncated importance weights correct them)
    max_staleness: int = 4
    # under a wall-clock budget, the actors halt this long, plus the previous round's measured
    # evaluation time, before it, so that the episodes still running and the round's closing
    # work (shards, labels, export, the same evaluation, registration) end inside the budget
    finish_reserve_s: float = 50.0
    # the learner in a process of its own (no interpreter lock shared with the actors; the shape
    # for a learner on its own device); false: a thread beside the actors, which share its lock
    learner_process: bool = True

    def validate(self, key: str) -> None:
        _check(self.replay_ratio >= 0, f"{key}.replay_ratio", "must be >= 0")
        _check(self.replay_window_rounds >= 0, f"{key}.replay_window_rounds", "must be >= 0")
        _check(self.finish_reserve_s >= 0, f"{key}.finish_reserve_s", "must be >= 0")
        _check(self.publish_every_updates >= 1, f"{key}.publish_every_updates", "must be >= 1")
        _check(self.publish_every_s >= 0, f"{key}.publish_every_s", "must be >= 0")
        _check(self.max_staleness >= 0, f"{key}.max_staleness", "must be >= 0")


@dataclass(frozen=True)
class CurriculumConfig:
    """Which train goals RL collection draws: by difficulty (MobileRL, DART-GUI: uncertain goals
    more often) and by task family."""

    enabled: bool = False  # off for the baselines
    # relative weight of a goal whose measured success rate is strictly between 0 and 1
    # (solved or never-solved goals, and unseen ones, weigh 1: the floor keeps them drawn)
    boost: float = 4.0
    floor: float = 0.1  # each goal's probability is at least floor / number of goals
    min_attempts: int = 1  # attempts before a goal's success rate counts
    window_rounds: int = 4  # newest labeled rounds the success rates are measured on
    # "file" = the train file's lines uniformly (AitW General: 2/3 web searches); "balanced" =
    # every task family the same share, times the difficulty weights when those are on
    goal_mix: Literal["balanced", "file"] = "file"

    def validate(self, key: str) -> None:
        _check(self.boost >= 1.0, f"{key}.boost", "must be >= 1")
        _check(0.0 <= self.floor <= 1.0, f"{key}.floor", "must be in [0, 1]")
        _check(self.min_attempts >= 1, f"{key}.min_attempts", "must be >= 1")
        _check(self.window_rounds >= 1, f"{key}.window_rounds", "must be >= 1")
