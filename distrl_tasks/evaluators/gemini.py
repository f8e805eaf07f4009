"""Gemini as a trajectory judge: few-shot prompt, rate limits, retries, caching and accounting.

One :meth:`GeminiEvaluator.judge` call: take the last ``last_screenshots`` frames, look the
answer up in the on-disk cache, else wait for a concurrency slot, build the prompt, take a
rate-limit token, call ``generateContent`` (retrying 429/5xx/timeouts with seeded exponential
backoff that honours ``Retry-After``), parse ``Status:`` and record tokens, cost and latency.

The API key is held in a masking wrapper and scrubbed from every message this module writes:
it never reaches logs, exceptions, reprs or the cache.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distrl_tasks.evaluators.evaluator import (
    API_KEY_ENV,
    Evaluator,
    MissingApiKeyError,
    Verdict,
    unlabeled,
)
from distrl_tasks.evaluators.gemini_cache import VerdictCache, cache_key
from distrl_tasks.evaluators.gemini_client import (
    DEFAULT_MODEL,
    GENERATION_CONFIG,
    PUBLIC_ENDPOINT,
    Answer,
    check_model,
    classify_error,
    make_client,
    read_response,
    to_contents,
)
from distrl_tasks.evaluators.gemini_prompt import PROMPT_VERSION, build_prompt, parse_status
from distrl_tasks.protocol.ratelimit import Clock, RetryPolicy, Sleep, TokenBucket

if TYPE_CHECKING:
    from distrl_tasks.config import Config

log = logging.getLogger(__name__)


class _Secret:
    """Holds a credential; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the secret masked."""
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "_Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # refuse to be pickled along with an evaluator
        raise TypeError("an API key is not picklable; rebuild the evaluator from config")


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens: the stage manifests' cost estimate (set your model's price)."""

    input_per_million: float = 1.25
    output_per_million: float = 5.0

    def cost(self, prompt_tokens: int, response_tokens: int) -> float:
        """Estimated price of one exchange."""
        return (
            prompt_tokens * self.input_per_million + response_tokens * self.output_per_million
        ) / 1e6


@dataclass
class LabelStats:
    """Running totals over every verdict this evaluator produced (for stage manifests)."""

    labels: int = 0
    success: int = 0
    failure: int = 0
    unlabeled: int = 0
    cache_hits: int = 0
    calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    response_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def add(self, v: Verdict) -> None:
        self.labels += 1
        setattr(self, v.status, getattr(self, v.status) + 1)
        self.cache_hits += int(v.cache_hit)
        self.calls += v.calls
        self.attempts += v.attempts
        self.prompt_tokens += v.prompt_tokens
        self.response_tokens += v.response_tokens
        self.cost_usd += v.cost_usd
        self.latency_s += v.latency_s


@dataclass
class _LoopState:
    """Per-event-loop resources: asyncio primitives and HTTP pools cannot cross loops."""

    loop: asyncio.AbstractEventLoop
    client: Any
    slots: asyncio.Semaphore


@dataclass
class _Usage:
    attempts: int = 0
    prompt_tokens: int = 0
    response_tokens: int = 0
    problems: list[str] = field(default_factory=list)


class GeminiEvaluator(Evaluator):
    """Judges trajectories with Gemini through google-genai.

    Args:
        api_key: Gemini API key (prefer :meth:`from_config`, which reads ``GEMINI_API_KEY``).
        model: model name, e.g. ``gemini-3.5-flash``.
        base_url: endpoint override; empty/``None`` = Google's public endpoint.
        task_set: which few-shot examples to show (``general`` or ``webshop``).
        concurrency: requests in flight at once.
        requests_per_minute: rate budget shared by all attempts, retries included.
        burst: token-bucket capacity (default: ``concurrency``).
        retry: backoff policy (default: 5 retries, 1 s base, seeded jitter).
        timeout_s: per-attempt deadline in seconds.
        last_screenshots: how many final frames are judged.
        downscale: images are sent at ``width // downscale x height // downscale``.
        cache_dir: response cache directory; ``None`` disables caching.
        pricing: token prices for the cost estimate.
        clock: monotonic clock for latency and rate limiting (injectable for tests).
        sleep: async sleep used for backoff and rate waits (injectable for tests).
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        task_set: str = "general",
        concurrency: int = 4,
        requests_per_minute: float = 60,
        burst: int | None = None,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        last_screenshots: int = 1,
        downscale: int = 4,
        cache_dir: str | os.PathLike[str] | None = None,
        pricing: Pricing | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise MissingApiKeyError(
                f"no Gemini API key: set {API_KEY_ENV} or pass api_key (got an empty value)"
            )
        for name, value in (
            ("concurrency", concurrency),
            ("last_screenshots", last_screenshots),
            ("downscale", downscale),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if task_set not in ("general", "webshop"):
            raise ValueError(f"task_set must be 'general' or 'webshop', got {task_set!r}")
        self._key = _Secret(api_key.strip())
        self.model = model
        self.base_url = base_url or None
        self.task_set = task_set
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.last_screenshots = last_screenshots
        self.downscale = downscale
        self.retry = retry or RetryPolicy()
        self.pricing = pricing or Pricing()
        self.cache = VerdictCache(cache_dir) if cache_dir is not None else None
        self.bucket = TokenBucket(
            requests_per_minute, burst=burst or concurrency, clock=clock, sleep=sleep
        )
        self.stats = LabelStats()
        self.name = f"gemini:{model}"
        self._clock = clock
        self._sleep = sleep
        self._state: _LoopState | None = None

    @classmethod
    def from_config(
        cls,
        cfg: Config,
        *,
        api_key: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> GeminiEvaluator:
        """Build from ``cfg.evaluator`` (model, base_url, limits, frames, downscale).

        Args:
            cfg: the project config; ``cfg.env.task_set`` picks the few-shot examples.
            api_key: explicit key (e.g. from an Airflow connection); else ``GEMINI_API_KEY``.
            cache_dir: cache directory; default ``cfg.evaluator.cache_dir``.
            **overrides: any other constructor argument (pricing, timeout_s, retry, ...).

        Raises:
            MissingApiKeyError: no key given and ``GEMINI_API_KEY`` is unset or empty.
        """
        ev = cfg.evaluator
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        if not key.strip():
            raise MissingApiKeyError(f"no Gemini API key: set {API_KEY_ENV} or pass api_key")
        kwargs: dict[str, Any] = {
            "model": ev.model,
            "base_url": ev.base_url or None,
            "task_set": cfg.env.task_set,
            "concurrency": ev.concurrency,
            "requests_per_minute": ev.requests_per_minute,
            "retry": RetryPolicy(max_retries=ev.max_retries),
            "last_screenshots": ev.last_screenshots,
            "downscale": ev.downscale,
            "cache_dir": cache_dir or Path(ev.cache_dir),
            "timeout_s": ev.timeout_s,
        }
        kwargs.update(overrides)
        return cls(api_key=key, **kwargs)

    def __repr__(self) -> str:
        return (
            f"GeminiEvaluator(model={self.model!r}, base_url={self.base_url!r}, "
            f"task_set={self.task_set!r}, prompt_version={PROMPT_VERSION!r})"
        )

    def __reduce__(self) -> Any:
        raise TypeError("GeminiEvaluator holds an API key and is not picklable")

    @property
    def endpoint(self) -> str:
        """The endpoint asked: ``base_url`` or Google's public one (part of the cache key)."""
        return (self.base_url or PUBLIC_ENDPOINT).rstrip("/")

    def check_model(self) -> None:
        """Fail now, before any work, when the endpoint does not serve ``model``.

        Raises:
            UnknownModelError: the model is unknown or retired; the message lists the offered ones.
            EndpointUnavailableError: the key is refused or the endpoint cannot be reached.
        """
        client = make_client(self._key.get(), self.base_url, self.timeout_s)
        try:
            check_model(client, self.model, self.endpoint)
        except Exception as exc:  # scrub the key from whatever the server echoed, then re-raise
            exc.args = tuple(self._key.scrub(str(a)) for a in exc.args)
            raise
        finally:
            client.close()

    # ----- per-loop resources ---------------------------------------------------------------
    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            client = make_client(self._key.get(), self.base_url, self.timeout_s)
            self._state = _LoopState(loop, client, asyncio.Semaphore(self.concurrency))
        return self._state

    async def aclose(self) -> None:
        """Close the HTTP connections opened in the current event loop."""
        state, self._state = self._state, None
        if state is not None and state.loop is asyncio.get_running_loop():
            await state.client.aio.aclose()

    async def judge_many(
        self, items: Sequence[tuple[str, Sequence[bytes]]], *, progress: bool = False
    ) -> list[Verdict]:
        """As :meth:`Evaluator.judge_many`, closing this loop's connections afterwards."""
        try:
            return await super().judge_many(items, progress=progress)
        finally:
            await self.aclose()

    # ----- judging ----------------------------------------------------------------------------
    async def judge(self, goal: str, screenshots: Sequence[bytes]) -> Verdict:
        """Judge the last ``last_screenshots`` frames against ``goal`` (see module docstring).

        Raises:
            ValueError / TypeError: empty goal, no screenshots, or non-bytes screenshots.
        """
        if not isinstance(goal, str) or not goal.strip():
            raise ValueError(f"goal must be a non-empty string, got {goal!r}")
        if isinstance(screenshots, bytes | bytearray) or not screenshots:
            raise ValueError("screenshots must be a non-empty list of image bytes")
        shots = [bytes(s) for s in list(screenshots)[-self.last_screenshots :]]
        start = self._clock()
        key = cache_key(shots, goal, PROMPT_VERSION, self.model, self.downscale, self.endpoint)
        verdict = self._from_cache(key, start)
        if verdict is None:
            verdict = await self._judge_uncached(goal, shots, start)
            if verdict.labeled and self.cache is not None:
                self.cache.put(
                    key,
                    verdict,
                    goal=goal,
                    model=self.model,
                    endpoint=self.endpoint,
                    prompt_version=PROMPT_VERSION,
                )
        self.stats.add(verdict)
        return verdict

    def _from_cache(self, key: str, start: float) -> Verdict | None:
        entry = self.cache.get(key) if self.cache is not None else None
        if entry is None:
            return None
        return Verdict(
            status=entry["status"],
            reason=str(entry.get("reason", "")),
            evaluator=self.name,
            latency_s=self._clock() - start,
            cache_hit=True,
            raw_text=str(entry.get("raw_text", "")),
        )

    async def _judge_uncached(self, goal: str, shots: list[bytes], start: float) -> Verdict:
        usage = _Usage()
        state = self._loop_state()
        # The slot is taken before the prompt is built, so a large batch holds at most
        # `concurrency` prompts (a few dozen images each) in memory at once.
        async with state.slots:
            try:
                # Rendering the few-shot screens (first call only) and resizing are CPU work.
                parts = await asyncio.to_thread(
                    build_prompt, goal, shots, task_set=self.task_set, downscale=self.downscale
                )
            except ValueError as exc:
                return unlabeled(f"bad input: {exc}", evaluator=self.name)
            answer = await self._call_with_retries(state.client, to_contents(parts), usage)
        common: dict[str, Any] = {
            "evaluator": self.name,
            "calls": 1,
            "attempts": usage.attempts,
            "latency_s": self._clock() - start,
            "prompt_tokens": usage.prompt_tokens,
            "response_tokens": usage.response_tokens,
            "cost_usd": self.pricing.cost(usage.prompt_tokens, usage.response_tokens),
        }
        if isinstance(answer, str):  # no usable answer: the string says why
            return unlabeled(self._key.scrub(answer), **common)
        raw = self._key.scrub(answer.text or "")
        if answer.text is None:
            return unlabeled(self._key.scrub(answer.problem), **common)
        status, reason = parse_status(raw)
        return Verdict(status=status, reason=reason, raw_text=raw, **common)  # type: ignore[arg-type]

    async def _call_with_retries(
        self, client: Any, contents: list[Any], usage: _Usage
    ) -> Answer | str:
        """Attempts until an answer, a non-retryable error, or the retry budget runs out.

        Returns:
            The :class:`Answer`, or a string explaining why there is none.
        """
        for attempt in range(self.retry.max_retries + 1):
            await self.bucket.acquire()
            usage.attempts += 1
            try:
                resp = await asyncio.wait_for(
                    client.aio.models.generate_content(
                        model=self.model, contents=contents, config=GENERATION_CONFIG
                    ),
                    timeout=self.timeout_s,
                )
                answer = read_response(resp)
            except Exception as exc:  # classified below; anything unknown propagates
                err = classify_error(exc, self.timeout_s)
                if err is None:
                    raise
                problem = self._key.scrub(err.description)
            else:
                usage.prompt_tokens += answer.prompt_tokens
                usage.response_tokens += answer.response_tokens
                return answer
            usage.problems.append(problem)
            if not err.retryable:
                return problem
            if attempt < self.retry.max_retries:
                delay = self.retry.delay(attempt + 1, err.retry_after)
                log.info(
                    "%s attempt %d failed (%s); retrying in %.2fs",
                    self.name, attempt + 1, problem, delay,
                )  # fmt: skip
                await self._sleep(delay)
        log.warning("%s gave up after %d attempts: %s", self.name, usage.attempts, problem)
        return f"gave up after {usage.attempts} attempts; last error: {problem}"
