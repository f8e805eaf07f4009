"""The algorithm factory: ``algorithm.name`` to a wired :class:`~.base.Algorithm`.

Kept apart from :mod:`~distrl_tasks.algorithms.algorithm` (which every algorithm imports for the
shared pieces), so the dependency runs one way: algorithms -> base, factory -> algorithms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from distrl_tasks.algorithms.algorithm import Algorithm
from distrl_tasks.algorithms.digirl import DigiRL
from distrl_tasks.algorithms.distrl import DistRL
from distrl_tasks.algorithms.filtered_bc import FilteredBC
from distrl_tasks.algorithms.group_relative import GroupRelative
from distrl_tasks.config.algorithm_specs import algorithm_spec

if TYPE_CHECKING:
    from distrl_tasks.agents.policy import AutoUIPolicy
    from distrl_tasks.config import Config

# Each spec's implementation (config/algorithm_specs.py); GRPO and GiGPO are one class that
# reads its variant from algorithm.name
IMPLEMENTATIONS: dict[str, type[Algorithm]] = {
    "distrl": DistRL,
    "digirl": DigiRL,
    "filtered_bc": FilteredBC,
    "grpo": GroupRelative,
    "gigpo": GroupRelative,
}


def build_algorithm(cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu") -> Algorithm:
    """The algorithm ``cfg.algorithm.name`` names, wired to ``policy`` and fresh critics.

    Critics use the text encoder ``cfg.agent.critic_text_encoder`` names (hashed by default; see
    :mod:`distrl_tasks.agents.text_encoders`); the step critic's image input size follows the
    policy's image feature size.

    Raises:
        ValueError: an unknown algorithm name.
    """
    name = algorithm_spec(cfg.algorithm.name).name  # an unknown name fails here, listing all
    return IMPLEMENTATIONS[name].from_config(cfg, policy, device=device)
