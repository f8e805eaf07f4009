"""``simctl``: the simulator's own control command, for tests, the collectors and the oracle.

Not an Android tool: ``simctl task set '<goal>'`` resets the phone for a goal, ``task check``
prints the oracle's verdict, ``state`` the simulator state, ``reset`` restarts the phone, and
``dynamics`` shows or switches the live-world profile (:mod:`distrl_tasks.sim.dynamics`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from distrl_tasks.sim.shell import CmdResult, DeviceShell
from distrl_tasks.sim.shell_builtins import error_result

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

SIMCTL_USAGE = (
    "usage: simctl task set '<goal>' | simctl task check | simctl reset | simctl state"
    " | simctl dynamics [show | set static|live|hostile]"
)


def simctl(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    phone = sh.phone
    if args[:1] == ["reset"]:
        phone.reset()
        sh.events.append("reset")
        return b"", b"", 0
    if args[:1] == ["state"]:
        phone.compose()  # what is on screen now, with any due interruption
        state = json.loads(phone.state().to_json())
        state["dynamics"] = phone.dynamics.describe()
        return (json.dumps(state, sort_keys=True) + "\n").encode(), b"", 0
    if args[:1] == ["dynamics"]:
        return _simctl_dynamics(phone, args[1:])
    if args[:2] == ["task", "check"]:
        return (json.dumps(phone.check_task()) + "\n").encode(), b"", 0
    if args[:2] == ["task", "set"] and len(args) > 2:
        if phone.goal_parser is None:
            return error_result(
                "simctl: this farm was built without a goal parser; build it with "
                "distrl_tasks.tasks.goal_farms (or pass goal_parser=parse_goal to DeviceFarm)",
                2,
            )
        goal = " ".join(args[2:])
        try:
            task = phone.goal_parser(goal)
        except ValueError as exc:
            return error_result(f"simctl: {exc}", 2)
        phone.set_task(task)
        sh.events.append("reset")
        return (json.dumps({"goal": task.goal, "family": task.family}) + "\n").encode(), b"", 0
    return error_result(SIMCTL_USAGE, 2)


def _simctl_dynamics(phone: Phone, args: list[str]) -> CmdResult:
    """``simctl dynamics [show]`` prints the profile and rates; ``set P`` switches profile."""
    dyn = phone.dynamics
    if args[:1] == ["set"] and len(args) == 2:
        try:
            dyn.set_profile(args[1])
        except ValueError as exc:
            return error_result(f"simctl: {exc}", 2)
        phone._touch()
    elif args not in ([], ["show"]):
        return error_result(SIMCTL_USAGE, 2)
    out = {"profile": dyn.profile, "rates": dyn.rates, "on_screen": dyn.on_screen()}
    return (json.dumps(out, sort_keys=True) + "\n").encode(), b"", 0
