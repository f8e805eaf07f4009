"""Data regimes (``algorithm.mode``) as round numbers: round 0 is the offline phase.

DigiRL's protocol (the DigiRL paper; docs/agents-and-algorithms.md, "Data regimes") trains offline
on rollouts of the supervised policy before going online: critics first, then the actor, on a fixed
dataset. Here that phase is round 0, an ordinary round with two differences the stages apply by
themselves, so every front end (``distrl round``, Airflow, ``dvc repro`` with ``round: 0``) runs it
the same way:

* collect: each device runs ``orchestration.offline_episodes_per_device`` episodes with the
  bootstrap (``behavior``) policy: the offline dataset, labeled and versioned like any round;
* train: ``algorithm.offline_critic_steps`` critic-only steps, then
  ``algorithm.offline_actor_steps`` actor steps, so the critics are fitted before their values
  become the actor's baseline (an untrained critic makes most advantages negative, and a signed
  actor then pushes down nearly every sampled action).

Then the regimes are: ``offline`` = round 0 only; ``online`` = rounds 1.. only; ``off2on`` =
round 0, then the online rounds, whose replay window still holds round 0's data while it is
among the newest ``data.replay_window_rounds`` rounds.
"""

from __future__ import annotations

from distrl_tasks.config.loader import Config

OFFLINE_ROUND = 0


def has_offline_phase(cfg: Config) -> bool:
    """Whether the configured regime starts with the offline phase (round 0)."""
    return cfg.algorithm.mode in ("offline", "off2on")


def first_round(cfg: Config) -> int:
    """The first round the regime runs: 0 with an offline phase, else 1."""
    return OFFLINE_ROUND if has_offline_phase(cfg) else 1


def check_round(cfg: Config, round_: int) -> None:
    """Raise a clear error when the regime has no round ``round_``.

    Raises:
        ValueError: a negative round, round 0 in ``online`` mode, or an online round in
            ``offline`` mode.
    """
    mode = cfg.algorithm.mode
    if round_ < 0:
        raise ValueError(f"round must be >= 0 (0 = the offline phase), got {round_}")
    if round_ == OFFLINE_ROUND and not has_offline_phase(cfg):
        raise ValueError(
            "round 0 is the offline phase, and algorithm.mode is 'online': start at round 1, "
            "or set algorithm.mode to 'off2on' (or 'offline') to run the offline phase"
        )
    if round_ > OFFLINE_ROUND and mode == "offline":
        raise ValueError(
            f"algorithm.mode is 'offline', which trains round 0 only; round {round_} is online: "
            "set algorithm.mode to 'off2on' to continue online after the offline phase"
        )


def episodes_per_device(cfg: Config, round_: int) -> int:
    """Episodes each device collects in ``round_`` (the offline dataset's size in round 0)."""
    o = cfg.orchestration
    return o.offline_episodes_per_device if round_ == OFFLINE_ROUND else o.episodes_per_device


def train_steps(cfg: Config, round_: int) -> tuple[int, int]:
    """``(actor_steps, critic_steps)`` of the learner in ``round_``."""
    a = cfg.algorithm
    if round_ == OFFLINE_ROUND:
        return a.offline_actor_steps, a.offline_critic_steps
    return a.actor_epochs, a.critic_epochs
