"""The algorithm factory: ``algorithm.name`` to a wired :class:`~.base.Algorithm`.

Kept apart from :mod:`~distrl_tasks.algorithms.base` (which every algorithm imports for the
shared pieces), so the dependency runs one way: algorithms -> base, factory -> algorithms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from distrl_tasks.algorithms.base import ALGORITHMS, Algorithm
from distrl_tasks.algorithms.digirl import DigiRL
from distrl_tasks.algorithms.distrl import DistRL
from distrl_tasks.algorithms.filtered_bc import FilteredBC
from distrl_tasks.algorithms.group_relative import GroupRelative

if TYPE_CHECKING:
    from distrl_tasks.agents.policy import AutoUIPolicy
    from distrl_tasks.config import Config

# GRPO and GiGPO are one implementation; from_config reads the variant from algorithm.name
IMPLEMENTATIONS = dict(
    zip(ALGORITHMS, (DistRL, DigiRL, FilteredBC, GroupRelative, GroupRelative), strict=True)
)


def build_algorithm(cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu") -> Algorithm:
    """The algorithm ``cfg.algorithm.name`` names, wired to ``policy`` and fresh critics.

    Critics use the text encoder ``cfg.agent.critic_text_encoder`` names (hashed by default; see
    :mod:`distrl_tasks.agents.text_encoders`); the step critic's image input size follows the
    policy's image feature size.

    Raises:
        ValueError: an unknown algorithm name.
    """
    name = cfg.algorithm.name
    if name not in IMPLEMENTATIONS:
        raise ValueError(
            f"algorithm.name: unknown algorithm {name!r}; expected one of {ALGORITHMS}"
        )
    return IMPLEMENTATIONS[name].from_config(cfg, policy, device=device)
