"""Old home of the apps' shared content; it now lives in smaller modules.

Stable variety is in :mod:`distrl_tasks.sim.app`, text shaping in
:mod:`distrl_tasks.sim.apps.text`, places in :mod:`distrl_tasks.sim.apps.places` and the view
helpers in :mod:`distrl_tasks.sim.widgets`. This module keeps the one name that code outside
the simulator still imports from here.
"""

from __future__ import annotations

from distrl_tasks.sim.apps.places import search_places

__all__ = ["search_places"]
