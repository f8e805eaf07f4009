"""GeminiEvaluator with the real google-genai client against a local fake Gemini server.

Nothing in the SDK is mocked: every judgement is a real HTTP exchange with
:mod:`fakes.gemini_server`, which scripts the service's behaviour (answers, 429 with
Retry-After, 5xx, hangs, malformed bodies, blocked prompts) and records what was sent.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import logging
import pickle

import pytest
from fakes.gemini_server import (
    FakeGemini,
    RecordedRequest,
    Reply,
    answer,
    blocked,
    error,
    failure,
    hang,
    malformed,
    rate_limited,
    server_error,
    success,
)
from PIL import Image

from distrl_tasks.config import ConfigError, config_from_dict
from distrl_tasks.evaluators.gemini import GeminiEvaluator, MissingApiKeyError, Pricing
from distrl_tasks.evaluators.gemini_client import EndpointUnavailableError, UnknownModelError
from distrl_tasks.evaluators.gemini_examples import examples_for
from distrl_tasks.evaluators.gemini_prompt import EXAMPLES_HEADER, YOUR_TURN_HEADER
from distrl_tasks.evaluators.preflight import check_labeling
from distrl_tasks.protocol.ratelimit import RetryPolicy

pytestmark = pytest.mark.integration

KEY = "AIzaTEST-secret-key-0123456789"
GOAL = "Set an alarm for 6pm"


def _png(color: tuple[int, int, int] = (30, 120, 200), size: tuple[int, int] = (270, 600)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


SHOT = _png()


@pytest.fixture
def fake():
    with FakeGemini(api_key=KEY) as server:
        yield server


def make(fake: FakeGemini, **kw) -> GeminiEvaluator:
    opts = {
        "api_key": KEY,
        "base_url": fake.base_url,
        "timeout_s": 2.0,
        "retry": RetryPolicy(max_retries=3, base_delay=0.01, jitter=0.5, seed=0),
        "requests_per_minute": 60_000,
    }
    opts.update(kw)
    return GeminiEvaluator(**opts)


def judge(ev: GeminiEvaluator, goal: str = GOAL, shots: list[bytes] | None = None):
    async def run():
        try:
            return await ev.judge(goal, shots or [SHOT])
        finally:
            await ev.aclose()

    return asyncio.run(run())


def gaps(requests: list[RecordedRequest]) -> list[float]:
    times = [r.received_at for r in requests]
    return [b - a for a, b in itertools.pairwise(times)]


def test_success_records_usage_cost_and_sends_the_prompt(fake: FakeGemini) -> None:
    fake.script(answer("Q: ?\nA: I should see 6:00 PM. It is there.\nStatus: success", **{
        "prompt_tokens": 1000, "response_tokens": 50}))  # fmt: skip
    ev = make(fake, pricing=Pricing(input_per_million=1.25, output_per_million=5.0))
    v = judge(ev)
    assert (v.status, v.reward, v.reason) == ("success", 1.0, "I should see 6:00 PM. It is there.")
    assert (v.calls, v.attempts, v.cache_hit) == (1, 1, False)
    assert (v.prompt_tokens, v.response_tokens) == (1000, 50)
    assert v.cost_usd == pytest.approx((1000 * 1.25 + 50 * 5.0) / 1e6)
    assert v.latency_s > 0 and v.evaluator == "gemini:gemini-3.5-flash"

    (req,) = fake.requests
    assert req.path == "/v1beta/models/gemini-3.5-flash:generateContent"
    assert req.headers["x-goog-api-key"] == KEY and KEY not in req.path
    texts, images = req.texts(), req.images()
    assert texts[0].startswith("You're an expert judge") and texts[1] == EXAMPLES_HEADER
    assert YOUR_TURN_HEADER in texts and texts[-1].startswith(f"Task: {GOAL}\n")
    assert len(images) == len(examples_for("general")) + 1
    for mime, data in images:  # every image went inline as a 4x-downscaled PNG
        assert mime == "image/png" and data.startswith(b"\x89PNG")
        assert Image.open(io.BytesIO(data)).size == (67, 150)
    kinds = req.kinds()
    assert kinds[-3:] == ["text", "image", "text"]  # "Screenshot:", the screen, the template
    assert Image.open(io.BytesIO(images[-1][1])).convert("RGB").getpixel((5, 5)) == (30, 120, 200)


def test_failure_is_a_zero_reward_label(fake: FakeGemini) -> None:
    fake.script(failure())
    v = judge(make(fake))
    assert (v.status, v.reward, v.attempts) == ("failure", 0.0, 1)


def test_unusable_answers_are_unlabeled_never_failure(fake: FakeGemini) -> None:
    fake.script(answer("It looks done to me."), blocked("SAFETY"), malformed(), answer(""))
    ev = make(fake)
    verdicts = [judge(ev) for _ in range(4)]
    assert [v.status for v in verdicts] == ["unlabeled"] * 4
    assert all(v.reward is None for v in verdicts)
    assert "no 'Status:' line" in verdicts[0].reason
    assert verdicts[0].raw_text == "It looks done to me."
    assert verdicts[1].reason == "prompt blocked (SAFETY)" and verdicts[1].prompt_tokens == 900
    assert verdicts[2].reason.startswith("malformed response")
    assert "no text" in verdicts[3].reason
    assert [v.attempts for v in verdicts] == [1, 1, 1, 1]  # retried on a later pass, not now
    assert len(fake.requests) == 4
    assert (ev.stats.unlabeled, ev.stats.failure, ev.stats.labels) == (4, 0, 4)


def test_429_waits_for_retry_after(fake: FakeGemini) -> None:
    fake.script(rate_limited(0.3), rate_limited(0.3), success())
    v = judge(make(fake))
    assert (v.status, v.attempts, v.calls) == ("success", 3, 1)
    assert len(fake.requests) == 3
    assert all(g >= 0.3 - 1e-3 for g in gaps(fake.requests)), gaps(fake.requests)


def test_5xx_backoff_is_exponential_with_seeded_jitter(fake: FakeGemini) -> None:
    fake.script(server_error(500), server_error(503), success())
    policy = dict(max_retries=3, base_delay=0.1, jitter=0.5, seed=3)
    v = judge(make(fake, retry=RetryPolicy(**policy)))
    assert (v.status, v.attempts) == ("success", 3)
    twin = RetryPolicy(**policy)  # same seed, so the same waits
    expected = [twin.delay(1), twin.delay(2)]
    assert 0.05 <= expected[0] <= 0.1 and 0.1 <= expected[1] <= 0.2
    for gap, wait in zip(gaps(fake.requests), expected, strict=True):
        assert wait - 1e-3 <= gap < wait + 1.0


def test_hang_past_the_timeout_is_retried(fake: FakeGemini) -> None:
    # 1 s, not less: on a loaded CI machine the answered retry itself once took over 0.3 s
    fake.script(hang(10.0), success())
    v = judge(make(fake, timeout_s=1.0))
    assert (v.status, v.attempts) == ("success", 2)
    assert 1.0 <= v.latency_s < 5.0
    assert gaps(fake.requests)[0] >= 1.0 - 0.05  # the timer starts just before sending


def test_gives_up_after_max_retries_as_unlabeled(fake: FakeGemini, caplog) -> None:
    fake.default = server_error(500)
    with caplog.at_level(logging.INFO, logger="distrl_tasks.evaluators.gemini"):
        v = judge(make(fake, retry=RetryPolicy(max_retries=2, base_delay=0.01)))
    assert v.status == "unlabeled" and v.reward is None
    assert v.reason.startswith("gave up after 3 attempts; last error: HTTP 500")
    assert v.attempts == 3 and len(fake.requests) == 3
    assert sum("retrying in" in r.getMessage() for r in caplog.records) == 2
    assert any("gave up" in r.getMessage() for r in caplog.records)


def test_unreachable_server_is_retried_then_unlabeled() -> None:
    with FakeGemini() as gone:
        url = gone.base_url  # the port is closed once the server stops
    ev = GeminiEvaluator(
        api_key=KEY, base_url=url, timeout_s=2.0, retry=RetryPolicy(max_retries=1, base_delay=0.01)
    )
    v = judge(ev)
    assert v.status == "unlabeled" and v.attempts == 2
    assert v.reason.startswith("gave up after 2 attempts; last error: connection error")


def test_client_errors_are_not_retried(fake: FakeGemini) -> None:
    fake.script(error(400, "Request contains an invalid argument."))
    v = judge(make(fake))
    assert v.status == "unlabeled" and v.attempts == 1
    assert v.reason == "HTTP 400 INVALID_ARGUMENT: Request contains an invalid argument."


def test_api_key_never_leaks(fake: FakeGemini, tmp_path, caplog) -> None:
    # The service echoes the key back in an error (as some proxies do) and misbehaves first.
    fake.script(
        rate_limited(0.05),
        server_error(500),
        hang(10.0),
        error(400, f"API key {KEY} rejected"),
        success(),
    )
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    ev = make(fake, cache_dir=tmp_path / "cache", timeout_s=0.3)
    bad = judge(ev)
    good = judge(ev, goal="Open the clock")
    assert bad.status == "unlabeled" and KEY not in bad.reason and "***" in bad.reason
    assert good.status == "success"
    assert fake.requests[0].headers["x-goog-api-key"] == KEY  # it was really used
    leaks = [
        caplog.text,
        repr(ev),
        str(ev),
        repr(ev.__dict__),
        repr(bad),
        repr(good),
        str(bad.to_dict()),
        *(p.read_text() for p in (tmp_path / "cache").rglob("*.json")),
    ]
    assert list((tmp_path / "cache").rglob("*.json")), "the success should have been cached"
    assert all(KEY not in text for text in leaks)
    with pytest.raises(TypeError) as exc:
        pickle.dumps(ev)
    assert KEY not in str(exc.value)
    other = make(fake, api_key="wrong-key-987")  # the fake answers 403 for a wrong key
    denied = judge(other)
    assert denied.status == "unlabeled" and denied.reason.startswith("HTTP 403")
    assert "wrong-key-987" not in denied.reason + caplog.text


def test_cache_makes_relabeling_free(fake: FakeGemini, tmp_path) -> None:
    fake.script(answer("no verdict here"), success(), failure())
    cache_dir = tmp_path / "cache"
    ev = make(fake, cache_dir=cache_dir)
    first = judge(ev)
    assert first.status == "unlabeled"  # not cached: the next pass asks again
    second = judge(ev)
    assert second.status == "success" and not second.cache_hit
    third = judge(make(fake, cache_dir=cache_dir))  # a new process, same directory
    assert (third.status, third.cache_hit, third.calls, third.attempts) == ("success", True, 0, 0)
    assert third.cost_usd == 0.0 and third.reason == second.reason
    assert len(fake.requests) == 2
    other_goal = judge(ev, goal="Open the clock")  # a different goal is a different key
    assert other_goal.status == "failure" and len(fake.requests) == 3
    newer_model = judge(make(fake, cache_dir=cache_dir, model="gemini-3.1-flash-lite"))
    assert not newer_model.cache_hit and fake.requests[-1].model == "gemini-3.1-flash-lite"


def test_only_the_last_screenshots_are_judged(fake: FakeGemini) -> None:
    shots = [_png((10 * i, 0, 0), size=(100, 200)) for i in range(4)]
    ev = make(fake, last_screenshots=2, downscale=2)
    assert judge(ev, shots=shots).status == "success"
    images = fake.requests[0].images()
    assert len(images) == len(examples_for("general")) + 2
    judged = [Image.open(io.BytesIO(d)).convert("RGB") for _, d in images[-2:]]
    assert [im.getpixel((0, 0))[0] for im in judged] == [20, 30]
    assert all(im.size == (50, 100) for im in judged)


def test_concurrency_limit_and_order_in_label_many(fake: FakeGemini) -> None:
    def by_goal(req: RecordedRequest) -> Reply:
        verdict = success() if "alarm" in req.texts()[-1] else failure()
        return hang(0.15, then=verdict)  # slow answers, so requests overlap

    fake.responder = by_goal
    ev = make(fake, concurrency=2)
    goals = ["Set an alarm for 6pm", "Open the clock", "Set an alarm for 7am", "Open Gmail"] * 2
    verdicts = ev.label_many([(g, [_png((i, 0, 0))]) for i, g in enumerate(goals)], progress=False)
    assert [v.status for v in verdicts] == ["success", "failure"] * 4
    assert fake.max_in_flight == 2 and len(fake.requests) == 8
    again = ev.label_many([(goals[0], [SHOT])], progress=False)  # a second event loop works too
    assert again[0].status == "success"
    assert (ev.stats.labels, ev.stats.success, ev.stats.calls) == (9, 5, 9)


def test_requests_per_minute_spaces_requests(fake: FakeGemini) -> None:
    ev = make(fake, requests_per_minute=240, burst=1, concurrency=4)  # one request per 0.25 s
    items = [(f"Open app number {i}", [SHOT]) for i in range(3)]
    assert [v.status for v in ev.label_many(items, progress=False)] == ["success"] * 3
    arrivals = sorted(r.received_at for r in fake.requests)
    # tokens at 0, 0.25 and 0.5 s; the slack absorbs uneven delivery on a busy machine
    assert arrivals[-1] - arrivals[0] >= 0.5 - 0.1


def test_bad_input(fake: FakeGemini) -> None:
    ev = make(fake)
    v = judge(ev, shots=[b"not an image"])
    assert v.status == "unlabeled" and v.reason.startswith("bad input: screenshot 1 of 1")
    assert fake.requests == []
    with pytest.raises(ValueError, match="goal must be a non-empty string"):
        judge(ev, goal=" ")
    with pytest.raises(ValueError, match="list of image bytes"):
        asyncio.run(ev.judge(GOAL, SHOT))  # bytes, not a list of bytes
    with pytest.raises(TypeError, match="item 0: expected a"):
        ev.label_many(["just a goal"])


def test_from_config_reads_the_evaluator_section_and_env_key(fake, tmp_path, monkeypatch) -> None:
    cfg = config_from_dict(
        {
            "env": {"task_set": "webshop"},
            "data": {"root": str(tmp_path / "data")},
            "evaluator": {
                "kind": "gemini",
                "model": "gemini-3.1-flash-lite",
                "base_url": fake.base_url,
                "concurrency": 3,
                "requests_per_minute": 6000,
                "max_retries": 1,
                "last_screenshots": 2,
                "downscale": 2,
                "timeout_s": 2.0,
                "cache_dir": str(tmp_path / "gemini_cache"),
            },
        }
    )
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="set GEMINI_API_KEY"):
        GeminiEvaluator.from_config(cfg)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    ev = GeminiEvaluator.from_config(cfg)
    assert ev.timeout_s == 2.0
    assert (ev.model, ev.task_set, ev.concurrency, ev.retry.max_retries) == (
        "gemini-3.1-flash-lite", "webshop", 3, 1)  # fmt: skip
    assert (ev.last_screenshots, ev.downscale) == (2, 2)
    assert ev.cache is not None and ev.cache.root == tmp_path / "gemini_cache"
    fake.script(server_error(500), server_error(500))
    v = judge(ev, goal="Go to ebay.com")
    assert v.status == "unlabeled" and v.attempts == 2  # max_retries from the config
    req = fake.requests[-1]
    assert req.path == "/v1beta/models/gemini-3.1-flash-lite:generateContent"
    assert req.headers["x-goog-api-key"] == KEY
    assert len(req.images()) == len(examples_for("webshop")) + 1
    explicit = GeminiEvaluator.from_config(cfg, api_key="from-airflow-connection")
    assert explicit.name == "gemini:gemini-3.1-flash-lite"


# ----- the model check at start-up, and one endpoint's verdicts never answering for another ------
def test_check_model_asks_the_endpoint_for_the_model(fake: FakeGemini) -> None:
    make(fake).check_model()  # the default, a served model: one models.get, nothing else
    assert fake.gets == ["/v1beta/models/gemini-3.5-flash"] and fake.requests == []


def test_a_retired_model_fails_naming_the_key_and_what_the_endpoint_offers(fake) -> None:
    ev = make(fake, model="gemini-1.5-pro")
    with pytest.raises(UnknownModelError) as caught:
        ev.check_model()
    text = str(caught.value)
    assert text.startswith("evaluator.model: 'gemini-1.5-pro' is not served")
    assert "gemini-3.1-flash-lite, gemini-3.1-pro-preview, gemini-3.5-flash" in text
    assert isinstance(caught.value, ConfigError)  # the CLI prints it as a config error
    assert fake.gets[0] == "/v1beta/models/gemini-1.5-pro" and "pageSize" in fake.gets[1]
    # the same name at generateContent: a 404 (as the real API answers), not retried
    v = judge(ev)
    assert v.status == "unlabeled" and v.reason.startswith("HTTP 404") and v.attempts == 1


def test_the_offered_models_are_listed_across_pages(fake: FakeGemini) -> None:
    fake.models = tuple(f"gemini-9.{i:03d}-flash" for i in range(130))
    with pytest.raises(UnknownModelError, match=r"gemini-9\.129-flash$"):
        make(fake, model="gemini-1.5-pro").check_model()
    assert [g.split("?")[1] for g in fake.gets[1:]] == [
        "pageSize=100",
        "pageSize=100&pageToken=100",
    ]


def test_a_refused_key_or_a_dead_endpoint_is_named_without_the_key(fake: FakeGemini) -> None:
    with pytest.raises(EndpointUnavailableError, match="HTTP 403") as refused:
        make(fake, api_key="wrong-key-987").check_model()
    assert "wrong-key-987" not in str(refused.value)
    dead = GeminiEvaluator(api_key=KEY, base_url="http://127.0.0.1:9", timeout_s=2.0)
    with pytest.raises(EndpointUnavailableError, match="could not be reached"):
        dead.check_model()


def test_check_labeling_runs_before_any_work(fake, monkeypatch) -> None:
    cfg = config_from_dict(
        {"evaluator": {"kind": "gemini", "base_url": fake.base_url, "model": "gemini-2.5-pro"}}
    )
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with pytest.raises(UnknownModelError, match=r"evaluator\.model: 'gemini-2\.5-pro'"):
        check_labeling(cfg)
    check_labeling(config_from_dict({"evaluator": {"kind": "gemini", "base_url": fake.base_url}}))
    gets = len(fake.gets)
    check_labeling(config_from_dict({}))  # the oracle needs no endpoint
    assert len(fake.gets) == gets


def test_verdicts_of_one_endpoint_never_answer_for_another(fake: FakeGemini, tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    assert judge(make(fake, cache_dir=cache_dir)).status == "success"
    with FakeGemini(api_key=KEY, default=failure()) as other:
        elsewhere = judge(make(other, cache_dir=cache_dir))
        assert (elsewhere.status, elsewhere.cache_hit, len(other.requests)) == ("failure", False, 1)
    again = judge(make(fake, cache_dir=cache_dir))
    assert (again.status, again.cache_hit) == ("success", True)
