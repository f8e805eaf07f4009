"""The Gemini judge's pure parts: prompt, status parsing, few-shot screens, pacing and cache."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from PIL import Image

from distrl_tasks.evaluators.evaluator import Verdict
from distrl_tasks.evaluators.gemini_cache import VerdictCache, cache_key
from distrl_tasks.evaluators.gemini_examples import GENERAL, WEBSHOP, examples_for, render_example
from distrl_tasks.evaluators.gemini_prompt import (
    EXAMPLES_HEADER,
    PROMPT_VERSION,
    YOUR_TURN_HEADER,
    InlineImage,
    build_prompt,
    downscale_image,
    parse_status,
)
from distrl_tasks.protocol.ratelimit import RetryPolicy, TokenBucket, parse_retry_after


def _png(w: int, h: int, color: tuple[int, int, int] = (200, 30, 30), fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format=fmt)
    return buf.getvalue()


def _size(img: InlineImage) -> tuple[int, int]:
    return Image.open(io.BytesIO(img.data)).size


# ----- status parsing ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Q: ...\nA: I see the alarm.\nStatus: success", "success"),
        ("Q: ...\nA: nothing.\nStatus: failure", "failure"),
        ("**Status:** Success", "success"),
        ("## Status: **FAILURE**.", "failure"),
        ("status : successful", "success"),
        ("Status:failed", "failure"),
        ("Status: failure\n(correction) Status: success", "success"),  # the last one decides
    ],
)
def test_parse_status_labels(text: str, status: str) -> None:
    assert parse_status(text)[0] == status


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "empty answer"),
        ("   ", "empty answer"),
        ("The task looks done to me.", "no 'Status:' line"),
        ("Status: success or failure", "ambiguous status"),
        ("Status: unclear", "unknown status 'unclear'"),
    ],
)
def test_parse_status_unparseable_is_unlabeled_not_failure(text: str | None, why: str) -> None:
    status, reason = parse_status(text)
    assert status == "unlabeled"
    assert why in reason


def test_parse_status_reason_is_the_explanation() -> None:
    text = "Q: What should I see?\nA: I should see 6:00 PM. The list shows it.\nStatus: success"
    assert parse_status(text) == ("success", "I should see 6:00 PM. The list shows it.")


# ----- images ----------------------------------------------------------------------------------
def test_downscale_divides_each_side_and_outputs_png() -> None:
    small = downscale_image(_png(270, 600), 4)
    assert small.mime_type == "image/png" and small.data.startswith(b"\x89PNG")
    assert _size(small) == (67, 150)
    assert _size(downscale_image(_png(270, 600, fmt="JPEG"), 3)) == (90, 200)
    assert _size(downscale_image(_png(3, 3), 8)) == (1, 1)  # never zero-sized


def test_downscale_factor_one_keeps_original_bytes_and_type() -> None:
    jpeg = _png(40, 80, fmt="JPEG")
    img = downscale_image(jpeg, 1)
    assert img.mime_type == "image/jpeg" and img.data == jpeg


def test_downscale_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="not a PNG or JPEG"):
        downscale_image(b"GIF89a....", 4)
    with pytest.raises(ValueError, match="cannot decode image/png"):
        downscale_image(b"\x89PNG\r\n\x1a\n" + b"garbage", 4)
    with pytest.raises(ValueError, match="factor must be >= 1"):
        downscale_image(_png(4, 4), 0)


# ----- prompt structure --------------------------------------------------------------------------
def test_prompt_structure_follows_digirl_judge() -> None:
    shot = _png(270, 600)
    parts = build_prompt("Set an alarm for 6pm", [shot], task_set="general", downscale=4)
    assert isinstance(parts[0], str) and parts[0].startswith("You're an expert judge")
    assert parts[1] == EXAMPLES_HEADER
    turn = parts.index(YOUR_TURN_HEADER)
    examples = parts[2:turn]
    assert len(examples) == 2 * len(GENERAL)
    for image, text in zip(examples[0::2], examples[1::2], strict=True):
        assert isinstance(image, InlineImage) and isinstance(text, str)
        assert text.startswith("Task: ") and "\nQ: " in text and "\nA: I should see " in text
        assert text.splitlines()[-1] in ("Status: success", "Status: failure")
    tail = parts[turn + 1 :]
    assert tail[0] == "Screenshot:" and isinstance(tail[1], InlineImage)
    assert _size(tail[1]) == (67, 150)
    assert tail[2].startswith("Task: Set an alarm for 6pm\n")
    assert tail[2].splitlines()[-2].startswith("Status: success or failure")
    assert tail[2].endswith('Start your answer with "Q:".')
    assert len(tail) == 3


def test_prompt_with_several_screenshots_orders_them_oldest_first() -> None:
    shots = [_png(80, 160, (10 * i, 0, 0)) for i in range(3)]
    parts = build_prompt("Go to ebay.com", shots, task_set="webshop", downscale=2)
    tail = parts[parts.index(YOUR_TURN_HEADER) + 1 :]
    assert tail[0].startswith("3 screenshots follow, oldest first")
    labels = [p for p in tail if isinstance(p, str) and p.startswith("Screenshot ")]
    assert labels == ["Screenshot 1 of 3:", "Screenshot 2 of 3:", "Screenshot 3 of 3:"]
    imgs = [p for p in tail if isinstance(p, InlineImage)]
    reds = [Image.open(io.BytesIO(i.data)).convert("RGB").getpixel((0, 0))[0] for i in imgs]
    assert reds == [0, 10, 20] and _size(imgs[0]) == (40, 80)
    assert sum(isinstance(p, InlineImage) for p in parts) == len(WEBSHOP) + 3


def test_prompt_rejects_bad_input_naming_the_problem() -> None:
    with pytest.raises(ValueError, match="at least one screenshot"):
        build_prompt("Open the clock", [])
    with pytest.raises(ValueError, match="goal must not be empty"):
        build_prompt("  ", [_png(8, 8)])
    with pytest.raises(ValueError, match="screenshot 2 of 2: not a PNG or JPEG"):
        build_prompt("Open the clock", [_png(8, 8), b"nope"])
    with pytest.raises(ValueError, match="unknown task set 'shopping'"):
        build_prompt("Open the clock", [_png(8, 8)], task_set="shopping")


def test_prompt_version_is_a_stable_nonempty_string() -> None:
    assert isinstance(PROMPT_VERSION, str) and PROMPT_VERSION.strip()


# ----- few-shot examples are real simulator screens with truthful labels -------------------------
@pytest.mark.parametrize("example", GENERAL + WEBSHOP, ids=lambda e: f"{e.status}:{e.goal[:30]}")
def test_example_label_matches_the_simulator_check(example) -> None:
    png, sim_success = render_example(example)
    assert png.startswith(b"\x89PNG")
    assert Image.open(io.BytesIO(png)).size == (270, 600)
    assert sim_success == (example.status == "success"), example.observe


def test_each_task_set_shows_both_outcomes_and_repeats_a_screen_only_to_contrast_goals() -> None:
    for task_set in ("general", "webshop"):
        examples = examples_for(task_set)
        assert {e.status for e in examples} == {"success", "failure"}
        by_screen: dict[bytes, list] = {}
        for e in examples:
            by_screen.setdefault(render_example(e)[0], []).append(e)
        for same in by_screen.values():
            # one screen may appear twice only as a lesson: different goals, opposite verdicts
            assert len(same) == 1 or (
                len(same) == 2
                and same[0].goal != same[1].goal
                and {same[0].status, same[1].status} == {"success", "failure"}
            )


# ----- rate limiting and backoff --------------------------------------------------------------
class FakeTime:
    """A clock whose async sleep advances it instantly and records each wait."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_token_bucket_spaces_requests_at_the_budget() -> None:
    t = FakeTime()
    bucket = TokenBucket(30, burst=2, clock=t.clock, sleep=t.sleep)  # one token per 2 s

    async def run() -> list[float]:
        return [await bucket.acquire() for _ in range(5)]

    waits = asyncio.run(run())
    assert waits == [0.0, 0.0, pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0)]
    assert t.now == pytest.approx(106.0)
    t.now += 60.0  # idle for a minute refills only up to the burst size
    waits = asyncio.run(run())
    assert waits[:2] == [0.0, 0.0] and waits[2] == pytest.approx(2.0)


def test_token_bucket_partial_refill_and_validation() -> None:
    t = FakeTime()
    bucket = TokenBucket(60, burst=1, clock=t.clock, sleep=t.sleep)  # one token per second

    async def run() -> tuple[float, float]:
        first = await bucket.acquire()
        t.now += 0.25
        return first, await bucket.acquire()

    assert asyncio.run(run()) == (0.0, pytest.approx(0.75))
    with pytest.raises(ValueError, match="requests_per_minute must be > 0"):
        TokenBucket(0)
    with pytest.raises(ValueError, match="burst must be >= 1"):
        TokenBucket(10, burst=0)


def test_retry_policy_is_exponential_capped_seeded_and_honours_retry_after() -> None:
    exact = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [exact.delay(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert exact.delay(1, retry_after=3.5) == 3.5  # the server's wait wins when longer
    assert exact.delay(3, retry_after=0.2) == 4.0  # ...and never shortens our backoff

    a = [RetryPolicy(jitter=0.5, seed=7).delay(n) for n in (1, 2, 3)]
    b = [RetryPolicy(jitter=0.5, seed=7).delay(n) for n in (1, 2, 3)]
    assert a == b  # seeded
    for n, d in zip((1, 2, 3), a, strict=True):
        assert 0.5 * 2 ** (n - 1) <= d <= 2 ** (n - 1)  # jitter shaves at most half
    with pytest.raises(ValueError, match="retry numbers start at 1"):
        exact.delay(0)
    with pytest.raises(ValueError, match="jitter must be in"):
        RetryPolicy(jitter=1.5)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("0.2", 0.2), (" 3 ", 3.0), (None, None), ("-1", None), ("soon", None), ("nan", None)],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


# ----- response cache ----------------------------------------------------------------------------
def test_cache_key_depends_on_every_component() -> None:
    img = _png(8, 8)
    real, test = "https://generativelanguage.googleapis.com", "http://127.0.0.1:8123"
    base = cache_key([img], "Open the clock", "v1", "gemini-3.5-flash", 4, real)
    assert len(base) == 64
    assert base == cache_key([img], "Open the clock", "v1", "gemini-3.5-flash", 4, real)
    variants = [
        cache_key([_png(8, 8, (0, 0, 0))], "Open the clock", "v1", "gemini-3.5-flash", 4, real),
        cache_key([img], "Open the calendar", "v1", "gemini-3.5-flash", 4, real),
        cache_key([img], "Open the clock", "v2", "gemini-3.5-flash", 4, real),
        cache_key([img], "Open the clock", "v1", "gemini-3.1-flash-lite", 4, real),
        cache_key([img], "Open the clock", "v1", "gemini-3.5-flash", 2, real),
        cache_key([img, img], "Open the clock", "v1", "gemini-3.5-flash", 4, real),
        cache_key([img], "Open the clock", "v1", "gemini-3.5-flash", 4, test),  # another server
    ]
    assert len({base, *variants}) == 8


def test_cache_round_trip_is_atomic_json_and_skips_unlabeled(tmp_path) -> None:
    cache = VerdictCache(tmp_path / "c")
    key = cache_key([_png(8, 8)], "Open the clock", PROMPT_VERSION, "m", 4, "http://e")
    assert cache.get(key) is None and len(cache) == 0
    v = Verdict("success", reason="clock open", raw_text="Status: success", prompt_tokens=7)
    path = cache.put(key, v, goal="Open the clock")
    assert path == tmp_path / "c" / key[:2] / f"{key}.json"
    stored = json.loads(path.read_text())
    assert stored["status"] == "success" and stored["goal"] == "Open the clock"
    assert cache.get(key)["reason"] == "clock open" and len(cache) == 1
    assert not list(path.parent.glob("*.tmp"))  # the temp file was renamed away
    with pytest.raises(ValueError, match="unlabeled verdicts are not cached"):
        cache.put(key, Verdict("unlabeled", reason="429"))
    path.write_text("{ half a file")  # a corrupt entry is a miss, not a crash
    assert cache.get(key) is None
    with pytest.raises(ValueError, match="64-char hex"):
        cache.get("../../etc/passwd")
