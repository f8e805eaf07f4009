"""The scripted expert: solves any parsed task through the UI only, recording AutoUI actions.

Each step reads the UI dump, first clears what the live world put in the way (an interruption,
a loading page: :mod:`.expert_live`), else asks the family's policy (:mod:`.expert_plans`) for
the next action, optionally replaces it by a seeded mistake (a wrong tap, a typo, a detour
through HOME or a wrong app), performs it through a
:class:`~distrl_tasks.tasks.driver.Driver`, and records it in the AutoUI vocabulary. The episode
ends with STATUS_TASK_COMPLETE when the policy sees the goal on screen, or when the step budget
runs out. Recorded actions become behaviour-cloning data.
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, field
from typing import Any

from distrl_tasks.envs.adb_device import AdbClient, check_adb_server
from distrl_tasks.protocol.actions import ActionType, format_action, key, swipe, tap, type_text
from distrl_tasks.protocol.ui_dump import Screen
from distrl_tasks.tasks.driver import AdbDriver, Driver
from distrl_tasks.tasks.expert_live import around_heads_up, interruption, is_loading, wait_for_load
from distrl_tasks.tasks.expert_plans import plan_for
from distrl_tasks.tasks.expert_skills import KEY_BACK, KEY_ENTER, KEY_HOME, Act
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import Task

_KEY_TYPES = {KEY_HOME: ActionType.PRESS_HOME, KEY_BACK: ActionType.PRESS_BACK}
_KEY_TYPES[KEY_ENTER] = ActionType.PRESS_ENTER
MAX_WAITS = 20  # re-reads of a loading screen per episode; after them each loading step waits
STALE_READS = 3  # identical re-reads of a loading screen: the driver cannot show a newer frame


@dataclass
class Episode:
    """What one expert run did."""

    goal: str
    family: str
    steps: int = 0
    done: bool = False  # the expert declared the task complete
    mistakes: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)


class Expert:
    """Runs one task on one device.

    Args:
        driver: the device (a :class:`Phone` or an :class:`AdbDriver`).
        task: the parsed task.
        mistake_rate: probability per step of replacing the right action by a mistake.
        seed: seeds the mistakes (runs are reproducible).
        max_steps: action budget including the final STATUS_TASK_COMPLETE (default: the task's);
            plans see how much of it is left (``memo["steps_left"]``) and may take a shorter
            route when the live world's dialogs have used part of it.
    """

    def __init__(
        self,
        driver: Driver,
        task: Task,
        *,
        mistake_rate: float = 0.0,
        seed: int = 0,
        max_steps: int | None = None,
    ) -> None:
        if not 0.0 <= mistake_rate <= 1.0:
            raise ValueError(f"mistake_rate must be in [0, 1], got {mistake_rate}")
        self.driver = driver
        self.task = task
        self.mistake_rate = mistake_rate
        self.rng = random.Random(f"{seed}:{task.goal}")
        self.max_steps = max_steps or task.max_steps
        self.plan = plan_for(task)
        self.memo: dict[str, Any] = {}
        self.budget = self.max_steps  # the episode's; a one-step caller lowers max_steps per call
        self.acted = 0  # actions performed so far in the episode, over all run() calls

    def run(self) -> Episode:
        ep = Episode(self.task.goal, self.task.family)
        waits, stale, last_xml = 0, 0, ""
        while ep.steps < self.max_steps:
            xml = self.driver.ui_xml()
            stale = stale + 1 if xml == last_xml else 0
            last_xml = xml
            screen = Screen.parse(xml)
            act = interruption(screen)
            if act is None and is_loading(screen):
                if waits < MAX_WAITS and stale < STALE_READS:
                    waits += 1  # look again: a slow page paints after a frame or two
                    continue
                # a one-step driver (or a hung page) shows this frame again: spend a step on a
                # tap that changes nothing rather than act on the spinner as if it were the page
                act = wait_for_load(screen)
            if act is None:
                self.memo["steps_left"] = self.budget - self.acted  # plans may take a short cut
                memo = dict(self.memo)  # the plan notes what it does: undone if a heads-up
                # must be swiped away first and the planned action is not performed
                act, planned = around_heads_up(
                    screen, self.plan(screen, self.task.params, self.memo)
                )
                if not planned:
                    self.memo.clear()
                    self.memo.update(memo)
            if act is None:
                self._record(ep, screen, Act("done", why="task complete"))
                ep.done = True
                break
            if self.mistake_rate and self.rng.random() < self.mistake_rate:
                act = self._mistake(screen, act)
                ep.mistakes += 1
            self._perform(act)
            self._record(ep, screen, act)
            self.acted += 1
            last_xml = ""  # after an action the same dump is a new observation, not a stale one
        return ep

    # ----- mistakes ------------------------------------------------------------------------
    def _mistake(self, screen: Screen, act: Act) -> Act:
        """A plausible error: a typo in typed text, else a wrong tap or a detour."""
        if act.kind == "type" and len(act.text) > 1:
            i = self.rng.randrange(len(act.text))
            wrong = self.rng.choice("abcdefghijklmnopqrstuvwxyz")
            return Act.type(act.text[:i] + wrong + act.text[i + 1 :], "mistake: typo")
        roll = self.rng.random()
        targets = screen.clickables()
        if roll < 0.6 and targets:
            return Act.tap(self.rng.choice(targets), "mistake: wrong tap")
        if roll < 0.8:
            return Act.key(KEY_BACK, "mistake: back")
        return Act.key(KEY_HOME, "mistake: detour home")

    # ----- acting and recording --------------------------------------------------------------
    def _perform(self, act: Act) -> None:
        d = self.driver
        if act.kind == "tap":
            d.tap(act.x, act.y)
        elif act.kind == "swipe":
            d.swipe(act.x, act.y, act.x2, act.y2, 300)
        elif act.kind == "type":
            d.input_text(act.text)
        elif act.kind == "key":
            d.keyevent(act.code)

    def _record(self, ep: Episode, screen: Screen, act: Act) -> None:
        w, h = max(screen.width, 1), max(screen.height, 1)
        if act.kind == "tap":
            action = tap(act.y / h, act.x / w)
        elif act.kind == "swipe":
            action = swipe(act.y / h, act.x / w, act.y2 / h, act.x2 / w)
        elif act.kind == "type":
            action = type_text(act.text)
        elif act.kind == "key":
            action = key(_KEY_TYPES.get(act.code, ActionType.PRESS_BACK))
        else:
            action = key(ActionType.STATUS_TASK_COMPLETE)
        ep.steps += 1
        ep.actions.append(
            {
                "action_type": action.action_type.value,
                "touch_point": list(action.touch_point),
                "lift_point": list(action.lift_point),
                "typed_text": action.typed_text,
                "action": format_action(action, plan=f"[{act.why}]" if act.why else None),
            }
        )


def solve(driver: Driver, task: Task, *, mistake_rate: float = 0.0, seed: int = 0) -> Episode:
    """Run the expert on a device already set up for ``task`` (e.g. ``phone.set_task(task)``)."""
    return Expert(driver, task, mistake_rate=mistake_rate, seed=seed).run()


def run_expert(
    host: str, port: int, serial: str, goal: str, mistake_rate: float = 0.0, seed: int = 0
) -> dict[str, Any]:
    """Solve ``goal`` on a device of an ADB server, through ADB only, from a task reset.

    Sets the task with ``simctl task set`` (which resets the device), runs the expert, then asks
    ``simctl task check``. Returns ``success`` (from the simulator's check), ``steps``, ``goal``,
    ``family``, ``done`` (whether the expert declared completion), ``mistakes`` and ``actions``.

    Raises:
        GoalParseError: the goal cannot be parsed (before touching the device).
        RuntimeError: the device rejected the task or the check printed no JSON.
    """
    import json

    task = parse_goal(goal)
    check_adb_server(host, port)
    client = AdbClient(host, port)
    device = client.device(serial)
    driver = AdbDriver(device)
    out = driver.shell("simctl task set " + shlex.quote(goal))
    if '"family"' not in out:
        raise RuntimeError(f"simctl task set failed on {serial}: {out.strip()!r}")
    ep = Expert(driver, task, mistake_rate=mistake_rate, seed=seed).run()
    raw = driver.shell("simctl task check").strip()
    try:
        verdict = json.loads(raw[raw.index("{") :])
    except ValueError as exc:
        raise RuntimeError(f"simctl task check printed no JSON: {raw!r}") from exc
    return {
        "success": bool(verdict.get("success")),
        "steps": ep.steps,
        "goal": goal,
        "family": task.family,
        "done": ep.done,
        "mistakes": ep.mistakes,
        "actions": ep.actions,
    }
