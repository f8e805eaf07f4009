"""RemoteVLMPolicy over real HTTP against the local fake OpenAI-compatible server.

Nothing in httpx is mocked: every action is a real exchange with :mod:`fakes.vlm_server`, which
scripts the server's behaviour and records what the policy sent.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import pickle
import time

import pytest
import torch
from fakes.vlm_server import (
    FakeVLM,
    RecordedRequest,
    Reply,
    bad_json,
    completion,
    error,
    rate_limited,
    server_error,
    slow,
)
from PIL import Image

from distrl_tasks.agents.remote_vlm import MissingApiKeyError, RemoteVLMError, RemoteVLMPolicy
from distrl_tasks.agents.vlm_messages import SYSTEM_PROMPT, VLMObservation, autoui_prompt
from distrl_tasks.protocol.actions import ActionType, format_action, key, parse_action, swipe, tap
from distrl_tasks.protocol.actions import type_text as type_action
from distrl_tasks.protocol.ratelimit import RetryPolicy
from distrl_tasks.sim.phone import Phone

pytestmark = pytest.mark.integration

KEY = "sk-TEST-secret-vlm-key-0123456789"
MODEL = "cogagent-chat"
GOAL = "Search for the weather in Paris"


def _png(color: tuple[int, int, int], size: tuple[int, int] = (54, 120)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


RED, GREEN, BLUE = _png((200, 0, 0)), _png((0, 200, 0)), _png((0, 0, 200))


@pytest.fixture
def fake():
    with FakeVLM(api_key=KEY, models=(MODEL,)) as server:
        yield server


def make(fake: FakeVLM, **kw) -> RemoteVLMPolicy:
    opts = {
        "api_key": KEY,
        "timeout_s": 2.0,
        "retry": RetryPolicy(max_retries=3, base_delay=0.01, max_delay=2.0, jitter=0.5, seed=0),
    }
    opts.update(kw)
    return RemoteVLMPolicy(fake.base_url, MODEL, **opts)


def by_goal(replies: dict[str, Reply]):
    """A responder answering each request by the goal found in its prompt."""

    def respond(req: RecordedRequest) -> Reply:
        text = req.user_text()
        return next(r for goal, r in replies.items() if f"Goal: {goal}" in text)

    return respond


# ----- the happy path ----------------------------------------------------------------------------
def test_batch_of_observations_gives_parsed_actions_in_order(fake: FakeVLM) -> None:
    tap_text = format_action(tap(0.25, 0.75), "[DUAL_POINT]")
    type_text = format_action(type_action('say "hi"'))
    swipe_text = format_action(swipe(0.8, 0.5, 0.2, 0.5))
    fake.responder = by_goal(
        {
            "open chrome": completion(tap_text, token_logprobs=[-0.5, -0.25, -0.125]),
            "type hi": completion(type_text, token_logprobs=[-1.0, -2.0]),
            "scroll": completion(swipe_text),  # the server returns no log-probs for this one
        }
    )
    obs = [
        VLMObservation("open chrome", RED),
        VLMObservation("type hi", GREEN, ("PRESS_HOME",)),
        VLMObservation("scroll", BLUE),
    ]
    policy = make(fake, concurrency=3)
    texts, log_probs = policy.act(obs)

    assert texts == [tap_text, type_text, swipe_text]
    actions = [parse_action(t) for t in texts]
    assert actions[0].action_type is ActionType.DUAL_POINT and actions[0].touch_point == (
        0.25,
        0.75,
    )
    assert actions[1].typed_text == 'say "hi"'
    assert actions[2].lift_point == (0.2, 0.5) and not any(a.invalid for a in actions)
    assert log_probs.dtype == torch.float32 and log_probs.shape == (3,)
    assert log_probs[0].item() == -0.875 and log_probs[1].item() == -3.0
    assert math.isnan(log_probs[2].item())  # "not available"
    assert [r.attempts for r in policy.last_replies] == [1, 1, 1]
    assert policy.last_replies[0].prompt_tokens == 1000
    assert policy.last_replies[0].completion_tokens == 3


def test_request_carries_png_data_url_goal_auth_and_sampling_settings(fake: FakeVLM) -> None:
    shot = Phone(seed=3).screenshot_png()  # a real simulator frame
    policy = make(fake, temperature=0.7, max_tokens=96)
    policy.act([VLMObservation(GOAL, shot, ("first", "Action Plan: [PRESS_BACK]"))])

    (req,) = fake.requests
    body = req.json
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == MODEL and body["temperature"] == 0.7 and body["max_tokens"] == 96
    assert body["logprobs"] is True and "seed" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert [p["type"] for p in req.user_parts()] == ["text", "image_url"]
    assert req.image_urls()[0].startswith("data:image/png;base64,")
    assert req.images() == [shot]  # the exact bytes, losslessly
    text = req.user_text()
    assert f"Goal: {GOAL}" in text
    # history=1: only the latest previous action is shown, as AutoUI does
    assert "Previous Actions: Action Plan: [PRESS_BACK] Goal:" in text and "first" not in text


def test_system_prompt_examples_are_valid_actions() -> None:
    examples = SYSTEM_PROMPT.split("Examples:\n", 1)[1].splitlines()
    assert len(examples) == 3
    parsed = [parse_action(line) for line in examples]
    assert [a.action_type for a in parsed] == [
        ActionType.DUAL_POINT,
        ActionType.TYPE,
        ActionType.PRESS_ENTER,
    ]
    assert not any(a.invalid for a in parsed)
    for kind in ActionType:
        assert kind.value in SYSTEM_PROMPT


def test_greedy_sends_temperature_zero_and_generator_sends_reproducible_seeds(
    fake: FakeVLM,
) -> None:
    policy = make(fake, temperature=1.0)
    obs = [VLMObservation("a", RED), VLMObservation("b", GREEN)]
    policy.act(obs, greedy=True)
    assert [r.json["temperature"] for r in fake.requests] == [0.0, 0.0]
    policy.act(obs, generator=torch.Generator().manual_seed(5))
    policy.act(obs, generator=torch.Generator().manual_seed(5), temperature=0.3)
    first = sorted(r.json["seed"] for r in fake.requests[2:4])
    second = sorted(r.json["seed"] for r in fake.requests[4:6])
    assert first == second and len(set(first)) == 2
    assert [r.json["temperature"] for r in fake.requests[4:6]] == [0.3, 0.3]


def test_prompt_history_and_content_parts(fake: FakeVLM) -> None:
    assert autoui_prompt("g", ["a", "b", "c"], history=2) == "Previous Actions: b c Goal: g"
    assert autoui_prompt("g", ["a"], history=0) == "Previous Actions:  Goal: g"
    done = format_action(key(ActionType.STATUS_TASK_COMPLETE))
    parts = [{"type": "text", "text": done[:20]}, {"type": "text", "text": done[20:]}]
    body = {"choices": [{"message": {"role": "assistant", "content": parts}}]}
    fake.script(Reply(body=json.dumps(body).encode()))
    policy = make(fake, history=2)
    texts, _ = policy.act([VLMObservation(GOAL, RED, ("x", "y", "z"))])
    assert texts == [done] and policy.last_replies[0].completion_tokens == 0  # no usage sent
    assert "Previous Actions: y z Goal:" in fake.requests[0].user_text()


# ----- malformed replies never raise ---------------------------------------------------------
def test_malformed_replies_become_the_invalid_fallback(fake: FakeVLM) -> None:
    fake.responder = by_goal(
        {
            "chatty": completion("I think you should tap the search bar.", token_logprobs=[-2.0]),
            "broken": bad_json(),
            "not a completion": Reply(body=b'{"object": "list", "data": []}'),
            "bad request": error(400, "image too large"),
            "refusal": Reply(body=b'{"choices": [{"message": {"content": null}}]}'),
        }
    )
    goals = ["chatty", "broken", "not a completion", "bad request", "refusal"]
    policy = make(fake)
    texts, log_probs = policy.act([VLMObservation(g, RED) for g in goals])

    actions = [parse_action(t) for t in texts]
    assert all(a.invalid and a.action_type is ActionType.TASK_IMPOSSIBLE for a in actions)
    assert texts[0] == "I think you should tap the search bar." and texts[1:] == [""] * 4
    assert log_probs[0].item() == -2.0 and all(math.isnan(x) for x in log_probs[1:].tolist())
    errors = [r.error for r in policy.last_replies]
    assert errors[0] == ""
    assert "not JSON" in errors[1] and "not a chat completion" in errors[2]
    assert errors[3].startswith("HTTP 400") and "image too large" in errors[3]
    assert errors[4] == "empty reply"
    assert [r.attempts for r in policy.last_replies] == [1] * 5  # none worth retrying


# ----- retries -------------------------------------------------------------------------------
def test_429_retry_after_is_honoured(fake: FakeVLM) -> None:
    done = format_action(key(ActionType.STATUS_TASK_COMPLETE))
    fake.script(rate_limited(0.3), completion(done))
    policy = make(fake)
    texts, _ = policy.act([VLMObservation(GOAL, RED)])

    assert texts == [done] and policy.last_replies[0].attempts == 2
    first, second = fake.requests
    assert second.received_at - first.received_at >= 0.3  # backoff alone would be ~0.01 s
    assert first.raw == second.raw  # the same request again


def test_5xx_are_retried_with_backoff_then_succeed(fake: FakeVLM) -> None:
    done = format_action(key(ActionType.PRESS_BACK))
    fake.script(server_error(500), server_error(503), completion(done, token_logprobs=[-0.5]))
    policy = make(fake)
    texts, log_probs = policy.act([VLMObservation(GOAL, RED)])
    assert texts == [done] and log_probs.tolist() == [-0.5]
    assert policy.last_replies[0].attempts == 3 and policy.last_replies[0].error == ""


def test_retries_exhausted_give_the_fallback_not_an_exception(fake: FakeVLM) -> None:
    fake.default = server_error(502)
    policy = make(fake, retry=RetryPolicy(max_retries=2, base_delay=0.01, jitter=0.0))
    texts, log_probs = policy.act([VLMObservation(GOAL, RED)])
    assert parse_action(texts[0]).invalid and math.isnan(log_probs.item())
    reply = policy.last_replies[0]
    assert reply.attempts == 3 and len(fake.requests) == 3
    assert reply.error.startswith("gave up after 3 attempts; last error: HTTP 502")


def test_timeout_is_retried(fake: FakeVLM) -> None:
    done = format_action(key(ActionType.PRESS_HOME))
    fake.script(slow(1.5), completion(done))
    policy = make(fake, timeout_s=0.3)
    start = time.monotonic()
    texts, _ = policy.act([VLMObservation(GOAL, RED)])
    assert texts == [done] and policy.last_replies[0].attempts == 2
    assert time.monotonic() - start < 1.4  # did not wait for the slow reply


def test_server_without_logprobs_is_asked_once_then_never(fake: FakeVLM) -> None:
    fake.supports_logprobs = False
    done = format_action(key(ActionType.PRESS_ENTER))
    fake.default = completion(done, token_logprobs=[-1.0])
    policy = make(fake)
    texts, log_probs = policy.act([VLMObservation(GOAL, RED)])
    assert texts == [done] and math.isnan(log_probs.item())
    assert [("logprobs" in r.json) for r in fake.requests] == [True, False]
    policy.act([VLMObservation(GOAL, GREEN)])
    assert "logprobs" not in fake.requests[2].json and policy.logprobs is False


# ----- configuration errors raise; the key is never shown ------------------------------------
def test_wrong_key_raises_and_the_key_never_reaches_logs(
    fake: FakeVLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx's and httpcore's included
    wrong = "sk-WRONG-secret-0987654321"
    policy = make(fake, api_key=wrong)
    with pytest.raises(RemoteVLMError, match="HTTP 401") as info:
        policy.act([VLMObservation(GOAL, RED), VLMObservation("other", GREEN)])
    assert wrong not in str(info.value) and "***" in str(info.value)  # the server echoed it
    assert fake.requests[0].headers["authorization"] == f"Bearer {wrong}"
    assert wrong not in repr(policy) and wrong not in caplog.text

    # retries and give-ups are logged, without the key
    fake.default = error(503, f"overloaded; your key {KEY} is fine")
    good = make(fake, retry=RetryPolicy(max_retries=1, base_delay=0.01))
    good.act([VLMObservation(GOAL, RED)])
    assert "retrying" in caplog.text and "gave up after 2 attempts" in caplog.text
    assert KEY not in caplog.text and KEY not in good.last_replies[0].error
    assert KEY not in repr(good)
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(good)


def test_unknown_model_raises(fake: FakeVLM) -> None:
    policy = RemoteVLMPolicy(fake.base_url, "qwen-vl", api_key=KEY, timeout_s=2.0)
    with pytest.raises(RemoteVLMError, match="does not exist"):
        policy.act([VLMObservation(GOAL, RED)])
    assert len(fake.requests) == 1  # not retried


def test_api_key_comes_from_the_named_environment_variable(
    fake: FakeVLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_VLM_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="MY_VLM_KEY"):
        RemoteVLMPolicy(fake.base_url, MODEL, api_key_env="MY_VLM_KEY")
    monkeypatch.setenv("MY_VLM_KEY", KEY)
    policy = RemoteVLMPolicy(fake.base_url, MODEL, api_key_env="MY_VLM_KEY", timeout_s=2.0)
    policy.act([VLMObservation(GOAL, RED)])
    assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    # a server without authentication: no header at all
    with FakeVLM(models=(MODEL,)) as open_server:
        RemoteVLMPolicy(open_server.base_url, MODEL, api_key_env="").act(
            [VLMObservation(GOAL, RED)]
        )
        assert "authorization" not in open_server.requests[0].headers


# ----- concurrency -----------------------------------------------------------------------------
def test_concurrency_bound_is_respected(fake: FakeVLM) -> None:
    fake.default = slow(0.15)
    policy = make(fake, concurrency=2)
    start = time.monotonic()
    texts, _ = policy.act([VLMObservation(f"goal {i}", RED) for i in range(6)])
    elapsed = time.monotonic() - start
    assert len(texts) == 6 and len(fake.requests) == 6
    assert fake.max_in_flight == 2
    assert elapsed >= 3 * 0.15  # three waves of two


def test_async_api_and_event_loop_guard(fake: FakeVLM) -> None:
    policy = make(fake)

    async def inside() -> tuple[list[str], torch.Tensor]:
        with pytest.raises(RuntimeError, match="act_async"):
            policy.act([VLMObservation(GOAL, RED)])
        return await policy.act_async([VLMObservation(GOAL, RED)])

    texts, _ = asyncio.run(inside())
    assert parse_action(texts[0]).action_type is ActionType.STATUS_TASK_COMPLETE


# ----- input validation ------------------------------------------------------------------------
def test_bad_observations_and_arguments_are_named(fake: FakeVLM) -> None:
    policy = make(fake)
    with pytest.raises(ValueError, match="must not be empty"):
        policy.act([])
    with pytest.raises(ValueError, match="observation 1: screenshot_png must be PNG"):
        policy.act([VLMObservation(GOAL, RED), VLMObservation(GOAL, b"\xff\xd8jpeg")])
    with pytest.raises(ValueError, match="observation 0: goal"):
        policy.act([VLMObservation("  ", RED)])
    with pytest.raises(ValueError, match="previous_actions"):
        policy.act([VLMObservation(GOAL, RED, "PRESS_HOME")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="temperature"):
        policy.act([VLMObservation(GOAL, RED)], temperature=-1.0)
    assert fake.requests == []  # nothing was sent
    for kwargs, name in (
        ({"concurrency": 0}, "concurrency"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"temperature": float("nan")}, "temperature"),
    ):
        with pytest.raises(ValueError, match=name):
            make(fake, **kwargs)
    with pytest.raises(ValueError, match="base_url"):
        RemoteVLMPolicy("localhost:8000/v1", MODEL, api_key_env="")


# ----- an evaluation episode on a simulated phone ----------------------------------------------
def test_episode_on_a_simulated_phone(fake: FakeVLM) -> None:
    """Screens from the simulator go out, actions come back and run on the phone."""
    phone = Phone(seed=1)
    assert phone.launch("com.android.chrome")
    home = format_action(key(ActionType.PRESS_HOME))
    done = format_action(key(ActionType.STATUS_TASK_COMPLETE))
    fake.script(completion(home), completion(done))
    policy = make(fake)
    previous: list[str] = []
    shots = []
    for _ in range(4):
        shots.append(phone.screenshot_png())
        (text,), _ = policy.act(
            [VLMObservation("Go to the home screen", shots[-1], tuple(previous))]
        )
        action = parse_action(text)
        if action.ends_episode:
            break
        assert action.action_type is ActionType.PRESS_HOME
        phone.keyevent("HOME")
        previous.append(text)
    assert phone.state().app == phone.launcher.package
    assert [r.images()[0] for r in fake.requests] == shots and shots[0] != shots[1]
    assert f"Previous Actions: {home} Goal:" in fake.requests[1].user_text()
