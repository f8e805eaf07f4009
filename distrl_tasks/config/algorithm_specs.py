"""One spec per training algorithm: what the rest of the system needs to know about it.

The config's allowed ``algorithm.name`` values, the algorithm factory, the Airflow Params, the
learning benchmark and collection all read these specs, so a new algorithm is one module under
``distrl_tasks/algorithms/``, one spec here and one line in the factory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class AlgorithmSpec:
    """What an algorithm is, apart from its loss.

    Attributes:
        name: the ``algorithm.name`` value.
        label: how tables and plots name it.
        asynchronous: run with asynchronous actors (DistRL's design) in the benchmark's
            comparison, which gives every method its own paper's topology.
        critic: trains critics (their pre-fit, calibration and learner state apply).
        groups: samples each goal ``algorithm.group.size`` times (group-relative advantages).
        step_keys: needs exact state keys on collected steps (GiGPO's same-state step groups).
    """

    name: str
    label: str
    asynchronous: bool
    critic: bool
    groups: bool = False
    step_keys: bool = False


SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec("distrl", "DistRL", asynchronous=True, critic=True),
    AlgorithmSpec("digirl", "DigiRL", asynchronous=False, critic=True),
    AlgorithmSpec("filtered_bc", "Filtered BC", asynchronous=False, critic=False),
    # critic-free and asynchronous like DistRL: groups whose attempts finish under different
    # policy versions are corrected by the stored behaviour log-probs
    AlgorithmSpec("grpo", "GRPO", asynchronous=True, critic=False, groups=True),
    AlgorithmSpec("gigpo", "GiGPO", asynchronous=True, critic=False, groups=True, step_keys=True),
)
ALGORITHMS: tuple[str, ...] = tuple(s.name for s in SPECS)
AlgorithmName = Literal[ALGORITHMS]  # type: ignore[valid-type]  # the config's allowed values
_BY_NAME = {s.name: s for s in SPECS}


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of ``name``.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"algorithm.name: unknown algorithm {name!r}; expected one of {ALGORITHMS}"
        ) from None
