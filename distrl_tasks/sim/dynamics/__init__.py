"""Live-world dynamics of simulated devices: interruptions, drift and misleading content.

:mod:`.catalog` lists the perturbations, their profiles (``static``, ``live``, ``hostile``) and
rates; :mod:`.overlays` draws interruptions; :mod:`.drift` transforms pages; :mod:`.model` holds
one device's seeded draws and what is on its screen. The API other code uses:
``parse_profile(name)``, ``profile_rates(profile, overrides)``, ``Dynamics(profile, overrides,
seed=, serial=)`` and ``Dynamics.set_profile(profile)``; a farm takes ``dynamics=`` (see
:class:`distrl_tasks.sim.device_farm.DeviceFarm`).
"""

from distrl_tasks.sim.dynamics.catalog import (
    BY_NAME,
    NAMES,
    PERTURBATIONS,
    PROFILES,
    Perturbation,
    parse_profile,
    profile_rates,
)
from distrl_tasks.sim.dynamics.model import Dynamics

__all__ = [
    "BY_NAME",
    "NAMES",
    "PERTURBATIONS",
    "PROFILES",
    "Dynamics",
    "Perturbation",
    "parse_profile",
    "profile_rates",
]
