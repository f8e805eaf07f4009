"""The wire format between the agent and a remote VLM: OpenAI-style chat-completion messages.

One step is a system prompt that teaches the AutoUI action format, then a user turn holding the
AutoUI prompt (previous action + goal) and the screenshot as a PNG data URL; the reply is read
back as text, summed token log-probs and usage. Pure functions, no I/O: the HTTP client that
sends them is :class:`distrl_tasks.agents.remote_vlm.RemoteVLMPolicy`.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from distrl_tasks.protocol.actions import ActionType, format_action, key, tap
from distrl_tasks.protocol.actions import type_text as type_action

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

SYSTEM_PROMPT = (
    "You operate an Android phone to accomplish the user's goal. Each turn you get the "
    "current screenshot, the goal and your previous action. Reply with exactly one action, "
    "in this format and nothing else:\n"
    'Action Plan: [<next action types>] ; Action Decision: "action_type": "<TYPE>", '
    '"touch_point": "[y, x]", "lift_point": "[y, x]", "typed_text": "<text>"\n'
    "Rules:\n"
    "- action_type is one of " + ", ".join(t.value for t in ActionType) + ".\n"
    "- Points are [y, x] normalized to [0, 1]: y from the top edge, x from the left edge.\n"
    "- DUAL_POINT with touch_point equal to lift_point is a tap; different points swipe from "
    "touch_point to lift_point.\n"
    "- TYPE enters typed_text into the focused field. Unused points are [-1.0000, -1.0000].\n"
    "- STATUS_TASK_COMPLETE when the goal is achieved; TASK_IMPOSSIBLE when it cannot be.\n"
    "Examples:\n"
    + "\n".join(
        format_action(a, plan)
        for a, plan in (
            (tap(0.0712, 0.5), "[DUAL_POINT,TYPE,PRESS_ENTER]"),
            (type_action("weather in Paris"), "[TYPE,PRESS_ENTER]"),
            (key(ActionType.PRESS_ENTER), "[PRESS_ENTER,STATUS_TASK_COMPLETE]"),
        )
    )
)
INSTRUCTION = "What is the next action? Answer in the action format only."


@dataclass(frozen=True)
class VLMObservation:
    """What the remote VLM sees at one step. Any object with these attributes is accepted."""

    goal: str
    screenshot_png: bytes  # the current screen, PNG-encoded
    previous_actions: tuple[str, ...] = ()  # earlier AutoUI action strings, oldest first


def check_observation(index: int, obs: Any) -> VLMObservation:
    goal = getattr(obs, "goal", None)
    png = getattr(obs, "screenshot_png", None)
    previous = getattr(obs, "previous_actions", ())
    if not isinstance(goal, str) or not goal.strip():
        raise ValueError(f"observation {index}: goal must be a non-empty string, got {goal!r}")
    if not isinstance(png, bytes | bytearray) or bytes(png[:8]) != PNG_SIGNATURE:
        got = type(png).__name__ if not isinstance(png, bytes | bytearray) else bytes(png[:8])
        raise ValueError(f"observation {index}: screenshot_png must be PNG bytes, got {got!r}")
    if isinstance(previous, str) or not all(isinstance(a, str) for a in previous):
        raise ValueError(f"observation {index}: previous_actions must be a sequence of strings")
    return VLMObservation(goal, bytes(png), tuple(previous))


def autoui_prompt(goal: str, previous_actions: Sequence[str] = (), history: int = 1) -> str:
    """The AutoUI prompt, as :func:`distrl_tasks.agents.policy.format_prompt` writes it.

    Repeated here so a remote agent does not import the local model stack (transformers).
    """
    recent = list(previous_actions)[-history:] if history else []
    return "Previous Actions: " + " ".join(recent) + " Goal: " + goal


def png_data_url(png: bytes) -> str:
    """``data:image/png;base64,...`` for ``png``."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def build_messages(
    goal: str, screenshot_png: bytes, previous_actions: Sequence[str] = (), history: int = 1
) -> list[dict[str, Any]]:
    """The chat messages for one step: system prompt, then [AutoUI prompt text, screenshot]."""
    text = autoui_prompt(goal, previous_actions, history) + "\n" + INSTRUCTION
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": png_data_url(screenshot_png)}},
            ],
        },
    ]


def read_completion(body: Any) -> tuple[str, float, int, int]:
    """``(text, log_prob, prompt_tokens, completion_tokens)`` from a chat-completion body.

    ``log_prob`` is NaN when the body carries no usable token log-probs.

    Raises:
        ValueError: the body has no first choice with a message.
    """
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"not a chat completion (missing {exc})") from None
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = content if isinstance(content, str) else ""
    log_prob = math.nan
    tokens = (choice.get("logprobs") or {}).get("content") if isinstance(choice, dict) else None
    if isinstance(tokens, list) and tokens:
        try:
            log_prob = math.fsum(float(t["logprob"]) for t in tokens)
        except (KeyError, TypeError, ValueError):
            log_prob = math.nan
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return (
        text,
        log_prob,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )
