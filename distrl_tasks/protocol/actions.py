"""AutoUI action strings: parse model text into a typed :class:`Action` and format it back.

The format (AutoUI, as DigiRL and DistRL use it) is::

    Action Plan: [DUAL_POINT,TYPE,PRESS_ENTER] ; Action Decision: "action_type": "DUAL_POINT",
    "touch_point": "[0.5123, 0.3001]", "lift_point": "[0.5123, 0.3001]", "typed_text": ""

Points are ``[y, x]`` normalized to [0, 1]. Parsing never raises: malformed model output becomes
the fallback action (``TASK_IMPOSSIBLE`` with ``invalid=True``), so a collection loop can record the
mistake, penalize it and go on.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import StrEnum


class ActionType(StrEnum):
    """The AutoUI action vocabulary."""

    DUAL_POINT = "DUAL_POINT"  # a tap (touch == lift) or a swipe (touch != lift)
    TYPE = "TYPE"  # type text into the focused field
    PRESS_BACK = "PRESS_BACK"
    PRESS_HOME = "PRESS_HOME"
    PRESS_ENTER = "PRESS_ENTER"
    STATUS_TASK_COMPLETE = "STATUS_TASK_COMPLETE"  # the agent says it is done
    TASK_IMPOSSIBLE = "TASK_IMPOSSIBLE"  # the agent gives up (also the parse fallback)


NO_POINT = (-1.0, -1.0)
TAP_DISTANCE = 0.04  # touch/lift closer than this (normalized) is a tap, farther is a swipe


@dataclass(frozen=True)
class Action:
    """One agent action. ``touch_point``/``lift_point`` are normalized ``(y, x)``."""

    action_type: ActionType
    touch_point: tuple[float, float] = NO_POINT
    lift_point: tuple[float, float] = NO_POINT
    typed_text: str = ""
    plan: str = ""  # the "Action Plan" part, kept for logging; not interpreted
    invalid: bool = False  # the model output could not be parsed into this action

    @property
    def is_tap(self) -> bool:
        """A DUAL_POINT whose touch and lift are close enough to count as a tap."""
        if self.action_type is not ActionType.DUAL_POINT:
            return False
        (y1, x1), (y2, x2) = self.touch_point, self.lift_point
        return math.hypot(y2 - y1, x2 - x1) < TAP_DISTANCE

    @property
    def ends_episode(self) -> bool:
        return self.action_type in (ActionType.STATUS_TASK_COMPLETE, ActionType.TASK_IMPOSSIBLE)


FALLBACK = Action(ActionType.TASK_IMPOSSIBLE, invalid=True)

_FIELD = re.compile(r'"(action_type|touch_point|lift_point|typed_text)"\s*:\s*"((?:[^"\\]|\\.)*)"')
_NUMBER = r"(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
# any complete "key": "value" pair: unknown keys are ignored, but a pair left open is not
_ANY_FIELD = re.compile(r'"[^"\\]*"\s*:\s*"(?:[^"\\]|\\.)*"')
_POINT = re.compile(rf"^\s*\[\s*{_NUMBER}\s*,\s*{_NUMBER}\s*\]\s*$")
_PLAN = re.compile(r"Action Plan:\s*(.*?)\s*;\s*Action Decision:", re.S)


def _point(text: str) -> tuple[float, float] | None:
    m = _POINT.match(text)
    if not m:
        return None
    try:
        y, x = float(m.group(1)), float(m.group(2))
    except ValueError:  # defensive: the pattern only admits numbers float() accepts
        return None
    if not (0.0 <= y <= 1.0 and 0.0 <= x <= 1.0):
        return None
    return (y, x)


def _unescape(text: str) -> str:
    try:
        return json.loads(f'"{text}"')
    except json.JSONDecodeError:
        return text


def _plan(text: str) -> str:
    match = _PLAN.search(text)
    return match.group(1) if match else ""


def parse_action(text: str) -> Action:
    """Parse AutoUI model output. Never raises; malformed text returns an ``invalid`` fallback.

    Rules: ``action_type`` must name a known type; DUAL_POINT needs both points as ``[y, x]``
    within [0, 1]; TYPE needs ``typed_text`` (empty text parses, but is flagged by the env's
    penalty, not here); other types ignore the remaining fields. A repeated field counts once
    (the first) and complete unknown fields are ignored, but an output that stops inside a
    field (an unpaired quote after the last complete one) is invalid: that is how a decoder
    caught in a loop ("lift_point" over and over) ends when the token budget runs out, and
    reading it as a tap would hide the loop from the invalid-action penalty.
    """
    if not isinstance(text, str):
        return FALLBACK
    fields: dict[str, str] = {}
    last_end = 0
    for match in _FIELD.finditer(text):
        fields.setdefault(match.group(1), match.group(2))
        last_end = match.end()
    if last_end and '"' in _ANY_FIELD.sub("", text[last_end:]):
        return Action(ActionType.TASK_IMPOSSIBLE, plan=_plan(text), invalid=True)
    plan = _plan(text)
    try:
        kind = ActionType(fields.get("action_type", "").strip().upper())
    except ValueError:
        return Action(ActionType.TASK_IMPOSSIBLE, plan=plan, invalid=True)
    if kind is ActionType.DUAL_POINT:
        touch = _point(fields.get("touch_point", ""))
        lift = _point(fields.get("lift_point", ""))
        if touch is None or lift is None:
            return Action(ActionType.TASK_IMPOSSIBLE, plan=plan, invalid=True)
        return Action(kind, touch_point=touch, lift_point=lift, plan=plan)
    if kind is ActionType.TYPE:
        if "typed_text" not in fields:
            return Action(ActionType.TASK_IMPOSSIBLE, plan=plan, invalid=True)
        return Action(kind, typed_text=_unescape(fields["typed_text"]), plan=plan)
    return Action(kind, plan=plan)


def _fmt_point(p: tuple[float, float]) -> str:
    return f"[{p[0]:.4f}, {p[1]:.4f}]"


def format_action(action: Action, plan: str | None = None) -> str:
    """The AutoUI string for ``action`` (points with 4 decimals, text JSON-escaped)."""
    plan_text = action.plan if plan is None else plan
    if not plan_text:
        plan_text = f"[{action.action_type.value}]"
    touch = action.touch_point if action.action_type is ActionType.DUAL_POINT else NO_POINT
    lift = action.lift_point if action.action_type is ActionType.DUAL_POINT else NO_POINT
    text = action.typed_text if action.action_type is ActionType.TYPE else ""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return (
        f"Action Plan: {plan_text} ; Action Decision: "
        f'"action_type": "{action.action_type.value}", '
        f'"touch_point": "{_fmt_point(touch)}", '
        f'"lift_point": "{_fmt_point(lift)}", '
        f'"typed_text": "{escaped}"'
    )


def tap(y: float, x: float) -> Action:
    """A tap at normalized ``(y, x)``, rounded as the string format keeps it."""
    p = (round(y, 4), round(x, 4))
    return Action(ActionType.DUAL_POINT, touch_point=p, lift_point=p)


def swipe(y1: float, x1: float, y2: float, x2: float) -> Action:
    return Action(
        ActionType.DUAL_POINT,
        touch_point=(round(y1, 4), round(x1, 4)),
        lift_point=(round(y2, 4), round(x2, 4)),
    )


def type_text(text: str) -> Action:
    return Action(ActionType.TYPE, typed_text=text)


def key(kind: ActionType) -> Action:
    """PRESS_BACK / PRESS_HOME / PRESS_ENTER / STATUS_TASK_COMPLETE / TASK_IMPOSSIBLE."""
    if kind in (ActionType.DUAL_POINT, ActionType.TYPE):
        raise ValueError(f"{kind} needs arguments; use tap/swipe/type_text")
    return Action(kind)
