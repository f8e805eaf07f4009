"""``AndroidEnv``: AutoUI prompts and screenshots in, AutoUI action strings out, on any Device.

One episode: :meth:`AndroidEnv.reset` sets the goal on the device and returns the first
:class:`EnvObservation`; :meth:`AndroidEnv.step` parses the model's text, performs it, applies
DistRL's penalties and returns a :class:`StepResult` holding the next observation. Image features
are computed once per screenshot here, at collection time, with the configured encoder.

Episode ends (``StepResult.reason``): ``success`` (the simulator's oracle says the goal holds;
checked after every step, which is cheap), ``complete`` / ``impossible`` (the agent said so),
``horizon`` (step budget of the task set), ``invalid`` (only when ``end_on_invalid``).
Device failures raise :class:`~distrl_tasks.envs.device.DeviceError` to the caller.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from distrl_tasks.config import EnvConfig
from distrl_tasks.envs.device import KEY_BACK, KEY_ENTER, KEY_HOME, Device
from distrl_tasks.protocol.actions import Action, ActionType, format_action, parse_action
from distrl_tasks.protocol.observation import Observation, format_prompt
from distrl_tasks.protocol.ui_dump import Element, goal_elements

_KEYS = {
    ActionType.PRESS_BACK: KEY_BACK,
    ActionType.PRESS_HOME: KEY_HOME,
    ActionType.PRESS_ENTER: KEY_ENTER,
}


class ImageEncoder(Protocol):
    def encode(self, pngs: list[bytes]) -> np.ndarray: ...


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class EnvObservation:
    """What the agent sees before one step (plus what scripted policies and logging need)."""

    goal: str
    prompt: str  # AutoUI prompt: previous action(s) and the goal
    screenshot_png: bytes
    image_features: np.ndarray  # [D] float16, computed once from screenshot_png
    step: int  # index of the step this observation is for
    episode_id: str
    ui_xml: str = ""  # view hierarchy (for the scripted expert); "" when not captured
    state_key: str = ""  # which state this is (GiGPO's step groups): see AndroidEnv.state_key
    captured_at: dt.datetime = field(default_factory=utcnow)
    # the actionable elements a tap may point at (agent.pointer), the goal's first; () when the
    # pointer is off or the dump offered none (the policy then writes coordinates)
    elements: tuple[Element, ...] = ()

    def policy_input(self) -> Observation:
        """The model-facing view: prompt, image features, the screenshot and the elements."""
        return Observation(
            self.prompt, self.image_features, self.screenshot_png, elements=self.elements
        )


@dataclass(frozen=True)
class StepResult:
    """Outcome of one :meth:`AndroidEnv.step`."""

    observation: EnvObservation  # the screen after the action
    action: Action  # the parsed action (invalid fallback for unparsable text)
    penalty: float  # <= 0: repeat, empty TYPE and invalid penalties of this step
    done: bool
    success: bool  # the oracle saw the goal satisfied after this step (sim only)
    reason: str  # why the episode ended ("" while it goes on)
    started_at: dt.datetime  # when the observation acted on was captured
    ended_at: dt.datetime  # when the action finished executing


def horizon_for(task_set: str, cfg: EnvConfig) -> int:
    """Step budget of ``task_set`` (``env.horizon_general`` / ``env.horizon_webshop``)."""
    if task_set == "general":
        return cfg.horizon_general
    if task_set == "webshop":
        return cfg.horizon_webshop
    raise ValueError(f"unknown task set {task_set!r}; expected 'general' or 'webshop'")


def _same(a: Action, b: Action) -> bool:
    return (a.action_type, a.touch_point, a.lift_point, a.typed_text) == (
        b.action_type,
        b.touch_point,
        b.lift_point,
        b.typed_text,
    )


class AndroidEnv:
    """An AitW-style environment over one :class:`Device`.

    Args:
        device: the phone.
        encoder: image encoder (``encode(pngs) -> [N, D]``).
        cfg: env settings (horizons, penalties).
        task_set: ``general`` or ``webshop`` (selects the horizon).
        oracle: check ``simctl task check`` after each step and end on success (default: on for
            simulated devices, i.e. when ``device.kind == "sim"``).
        capture_ui_xml: also dump the view hierarchy per observation (scripted policies need it).
        end_on_invalid: end the episode on unparsable output (DigiRL does); by default the step
            is penalized and acts as a no-op, so an untrained model still explores.
        history: previous actions shown in the prompt (default: ``cfg.prompt_history``).
        exact_state_keys: key steps by the device's exact state where it has one (the
            simulator), not by the screenshot's bytes (see :meth:`state_key`).
        pointer_elements: offer the pointer at most this many of the screen's actionable
            elements, the goal's first (``agent.pointer``; the dump is then captured); 0 = none.
            An unreadable or empty dump gives an observation without elements.
    """

    def __init__(
        self,
        device: Device,
        encoder: ImageEncoder,
        cfg: EnvConfig,
        *,
        task_set: str = "general",
        oracle: bool | None = None,
        capture_ui_xml: bool = True,
        end_on_invalid: bool | None = None,
        history: int | None = None,
        exact_state_keys: bool = False,
        pointer_elements: int = 0,
    ) -> None:
        self.device = device
        # reading the simulator's exact state is one more ADB round trip per step (~20 ms, as
        # much as the screenshot): only GiGPO's step groups need it
        self.exact_state_keys = exact_state_keys
        self.encoder = encoder
        self.cfg = cfg
        self.task_set = task_set
        self.horizon = horizon_for(task_set, cfg)
        self.oracle = (getattr(device, "kind", "sim") == "sim") if oracle is None else oracle
        self.pointer_elements = pointer_elements
        self.capture_ui_xml = capture_ui_xml or pointer_elements > 0
        self.end_on_invalid = cfg.end_on_invalid if end_on_invalid is None else end_on_invalid
        self.history = cfg.prompt_history if history is None else history
        self.goal = ""
        self.episode_id = ""
        self.steps = 0
        self.done = True
        self._actions: list[str] = []
        self._last_valid: Action | None = None
        self._repeats = 0
        self._obs: EnvObservation | None = None

    # ----- observation -----------------------------------------------------------------------
    def _observe(self) -> EnvObservation:
        captured = utcnow()
        png = self.device.screenshot()
        feats = np.asarray(self.encoder.encode([png])[0], dtype=np.float16)
        xml = self.device.ui_xml() if self.capture_ui_xml else ""
        elements: tuple[Element, ...] = ()
        if self.pointer_elements > 0:
            elements = tuple(goal_elements(xml, self.goal, self.pointer_elements))
        prompt = format_prompt(self.goal, self._actions, history=self.history)
        return EnvObservation(
            goal=self.goal,
            state_key=self.state_key(png),
            prompt=prompt,
            screenshot_png=png,
            image_features=feats,
            step=self.steps,
            episode_id=self.episode_id,
            ui_xml=xml,
            captured_at=captured,
            elements=elements,
        )

    def state_key(self, png: bytes) -> str:
        """A digest of the state the policy acts in, with its goal: with ``exact_state_keys`` on
        the simulator its exact state (``exact_state``), so steps of different attempts from the
        same state share a key whatever the live world drew on screen for them; otherwise the
        screenshot's bytes (what verl-agent's GiGPO hashes)."""
        exact = getattr(self.device, "exact_state", None) if self.exact_state_keys else None
        state = exact() if callable(exact) else None
        h = hashlib.sha1(self.goal.encode() + b"\0")
        if state is None:
            h.update(b"screenshot\0" + png)
        else:
            h.update(b"sim\0" + json.dumps(state, sort_keys=True).encode())
        return h.hexdigest()

    def reset(self, goal: str, episode_id: str = "") -> EnvObservation:
        """Start an episode for ``goal`` from a clean device; returns the first observation."""
        if not isinstance(goal, str) or not goal.strip():
            raise ValueError(f"goal must be a non-empty string, got {goal!r}")
        self.goal = goal
        self.episode_id = episode_id or f"{self.device.serial}-{utcnow().timestamp():.6f}"
        self.steps = 0
        self._actions = []
        self._last_valid = None
        self._repeats = 0
        self.done = True  # stays done if the reset fails half way
        self.device.set_task(goal)
        self.device.screen_size()  # cache before the first action
        self._obs = self._observe()
        self.done = False
        return self._obs

    # ----- acting ----------------------------------------------------------------------------
    def penalty(self, action: Action) -> float:
        """DistRL's penalties for ``action`` (updates the repeat counter); always <= 0."""
        if action.invalid:
            return -self.cfg.invalid_action_penalty
        out = 0.0
        if self._last_valid is not None and _same(action, self._last_valid):
            self._repeats += 1
            out -= self.cfg.repeat_penalty * self._repeats  # cumulative: -0.4, -0.8, ...
        else:
            self._repeats = 0
        self._last_valid = action
        if action.action_type is ActionType.TYPE and not action.typed_text.strip():
            out -= self.cfg.empty_text_penalty
        return out

    def to_pixels(self, point: tuple[float, float]) -> tuple[float, float]:
        """Normalized ``(y, x)`` -> screen pixels ``(x, y)``."""
        width, height = self.device.screen_size()
        return point[1] * width, point[0] * height

    def perform(self, action: Action) -> None:
        """Execute a parsed action on the device (invalid and STATUS actions do nothing)."""
        if action.invalid:
            return
        kind = action.action_type
        if kind is ActionType.DUAL_POINT:
            x1, y1 = self.to_pixels(action.touch_point)
            if action.is_tap:
                self.device.tap(x1, y1)
            else:
                x2, y2 = self.to_pixels(action.lift_point)
                self.device.swipe(x1, y1, x2, y2, 300)
        elif kind is ActionType.TYPE:
            if action.typed_text:
                self.device.input_text(action.typed_text)
        elif kind in _KEYS:
            self.device.keyevent(_KEYS[kind])

    def step(self, action_text: str) -> StepResult:
        """Perform the model's raw ``action_text``; returns the next observation and penalties."""
        if self.done or self._obs is None:
            raise RuntimeError("step() called on a finished episode; call reset(goal) first")
        started = self._obs.captured_at
        action = parse_action(action_text)
        penalty = self.penalty(action)
        self.perform(action)
        ended = utcnow()
        self.steps += 1
        self._actions.append(format_action(action))
        success = bool(self.oracle and self.device.check_task().get("success") is True)
        if success:
            reason = "success"
        elif action.invalid and self.end_on_invalid:
            reason = "invalid"
        elif not action.invalid and action.action_type is ActionType.STATUS_TASK_COMPLETE:
            reason = "complete"
        elif not action.invalid and action.action_type is ActionType.TASK_IMPOSSIBLE:
            reason = "impossible"
        elif self.steps >= self.horizon:
            reason = "horizon"
        else:
            reason = ""
        self._obs = self._observe()
        self.done = bool(reason)
        return StepResult(self._obs, action, penalty, self.done, success, reason, started, ended)
