"""A VLM served over HTTP as the policy, for evaluation-only runs (the seeds' CogAgent setup).

Any server speaking the OpenAI chat-completions protocol works (vLLM serving CogAgent or Qwen-VL,
a hosted API). Each observation becomes one ``POST {base_url}/chat/completions`` whose messages are
a system prompt describing the AutoUI action format and a user turn holding the AutoUI prompt
(previous action + goal, as the local policy writes it) and the screenshot as a PNG data URL.

Failure policy: the reply text is parsed with :func:`parse_action`, so malformed text, a body that
is not a completion, a 4xx about one request, or a server that kept failing after the retries
(429/5xx/timeouts, backing off and honouring ``Retry-After``) all end as an invalid action for that
row, never an exception in a collection loop. Only misconfiguration raises
(:class:`RemoteVLMError`: bad key 401/403, unknown route or model 404), since every later step
would fail the same way.

Behaviour log-probs: the sum of the token log-probs the server returns for the reply when it
honours ``"logprobs": true``; otherwise NaN, meaning "not available". A server that rejects the
parameter (a 400 naming it) is asked once more without it and never again. These numbers come
from the server's sampler (vLLM reports raw-model log-probs, before temperature, by default), so
they are for logging only: a remote policy is not trained and must not feed importance weights.

The API key is read from the environment variable named by ``api_key_env``, sent only as the
``Authorization: Bearer`` header, and masked in every message this module logs or raises.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from distrl_tasks.agents.vlm_messages import (
    VLMObservation,
    build_messages,
    check_observation,
    read_completion,
)
from distrl_tasks.protocol.actions import Action, parse_action
from distrl_tasks.protocol.ratelimit import RetryPolicy, Sleep, parse_retry_after

try:
    import httpx
except ImportError:  # google-genai ships the drop-in fork under this name
    import httpx2 as httpx  # type: ignore[no-redef]

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
FATAL_STATUS = frozenset({401, 403, 404})  # configuration errors: retrying cannot help


class MissingApiKeyError(ValueError):
    """The configured API-key environment variable is unset or empty."""


class RemoteVLMError(RuntimeError):
    """The endpoint refused the client itself (bad key, unknown model or route)."""


@dataclass(frozen=True)
class RemoteReply:
    """The outcome for one observation.

    Attributes:
        text: the model's raw reply ("" when none came back; it parses as invalid).
        action: ``parse_action(text)``.
        log_prob: summed token log-probs of the reply; NaN when not available.
        attempts: HTTP requests made for this observation.
        latency_s: wall time from taking a concurrency slot to the final answer.
        error: why there is no usable reply (key masked); empty when the server sent text.
        prompt_tokens: the server's usage report (0 when absent).
        completion_tokens: likewise.
    """

    text: str
    action: Action
    log_prob: float
    attempts: int
    latency_s: float
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RemoteVLMPolicy:
    """A policy whose actions come from a VLM behind an OpenAI-compatible chat endpoint.

    Args:
        base_url: endpoint root, e.g. ``http://gpu-box:8000/v1`` (``/chat/completions`` is added).
        model: the served model name.
        api_key_env: environment variable holding the API key; "" = the server needs no key.
        api_key: explicit key (e.g. from an Airflow connection); overrides ``api_key_env``.
        temperature: default sampling temperature (>= 0; 0 = greedy).
        max_tokens: reply budget per action.
        timeout_s: deadline for one HTTP attempt.
        concurrency: requests in flight at once within a batch.
        retry: backoff for 429/5xx/timeouts (default: 3 retries, 1 s base, seeded jitter);
            ``Retry-After`` is honoured up to ``retry.max_delay``.
        logprobs: ask the server for token log-probs.
        history: previous actions shown in the prompt (the papers keep 1).
        sleep: async sleep used for backoff (injectable).
        transport: an httpx async transport (injectable; default: real sockets).

    Raises:
        MissingApiKeyError: ``api_key_env`` names a variable that is unset or empty.
        ValueError: any other bad argument (the message names it).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "VLM_API_KEY",
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        timeout_s: float = 60.0,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
        logprobs: bool = True,
        history: int = 1,
        sleep: Sleep = asyncio.sleep,
        transport: Any = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        for name, value, low in (
            ("max_tokens", max_tokens, 1),
            ("concurrency", concurrency, 1),
            ("history", history, 0),
        ):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self._check_temperature(temperature)
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env, "")
            if not api_key.strip():
                raise MissingApiKeyError(
                    f"environment variable {api_key_env} (the VLM API key) is unset or empty; "
                    "set it, or set api_key_env to '' for a server without authentication"
                )
        self._key = (api_key or "").strip()
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.timeout_s = float(timeout_s)
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy(max_retries=3)
        self.logprobs = logprobs
        self.history = history
        self.last_replies: list[RemoteReply] = []
        self._sleep = sleep
        self._transport = transport

    def __repr__(self) -> str:
        return f"RemoteVLMPolicy(url={self.url!r}, model={self.model!r}, auth={bool(self._key)})"

    def __reduce__(self) -> Any:
        raise TypeError("RemoteVLMPolicy may hold an API key and is not picklable; rebuild it")

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    @staticmethod
    def _check_temperature(t: float) -> float:
        if not isinstance(t, int | float) or not t >= 0 or math.isinf(t):
            raise ValueError(f"temperature must be a finite number >= 0, got {t!r}")
        return float(t)

    # ----- public API ----------------------------------------------------------------------
    def act(
        self,
        observations: Sequence[Any],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[list[str], torch.Tensor]:
        """Raw reply texts and ``[B]`` float32 behaviour log-probs (NaN = not available).

        Same shape as :meth:`AutoUIPolicy.act`. ``greedy`` sends temperature 0; ``generator``
        draws a per-request ``seed`` (honoured by vLLM and OpenAI) for reproducible sampling.
        Details per row (attempts, errors, parsed action) are left in :attr:`last_replies`.

        Raises:
            RuntimeError: called from inside a running event loop (use :meth:`act_async`).
        """
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # the normal case: no loop in this thread
            running = None
        if running is not None:
            raise RuntimeError("act() cannot run inside an event loop; await act_async()")
        return asyncio.run(
            self.act_async(
                observations, greedy=greedy, temperature=temperature, generator=generator
            )
        )

    async def act_async(
        self,
        observations: Sequence[Any],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[list[str], torch.Tensor]:
        """As :meth:`act`, for callers already in an event loop."""
        seeds = None
        if generator is not None:
            seeds = torch.randint(0, 2**31 - 1, (len(observations),), generator=generator).tolist()
        replies = await self.query(
            observations, greedy=greedy, temperature=temperature, seeds=seeds
        )
        log_probs = torch.tensor([r.log_prob for r in replies], dtype=torch.float32)
        return [r.text for r in replies], log_probs

    async def query(
        self,
        observations: Sequence[Any],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        seeds: Sequence[int] | None = None,
    ) -> list[RemoteReply]:
        """One :class:`RemoteReply` per observation, in order; at most ``concurrency`` in flight.

        Raises:
            ValueError: empty batch or a malformed observation (index named).
            RemoteVLMError: the server refused the client (401/403/404).
        """
        if len(observations) == 0:
            raise ValueError("observations must not be empty")
        checked = [check_observation(i, o) for i, o in enumerate(observations)]
        if seeds is not None and len(seeds) != len(checked):
            raise ValueError(f"{len(checked)} observations but {len(seeds)} seeds")
        t = self._check_temperature(self.temperature if temperature is None else temperature)
        t = 0.0 if greedy else t
        slots = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(
            max_connections=self.concurrency, max_keepalive_connections=self.concurrency
        )
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        async with httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=limits,
            transport=self._transport,
        ) as client:
            try:
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(
                            self._one(client, slots, obs, t, None if seeds is None else seeds[i])
                        )
                        for i, obs in enumerate(checked)
                    ]
            except* RemoteVLMError as errors:  # the group cancelled the other requests
                raise errors.exceptions[0] from None
        self.last_replies = [task.result() for task in tasks]
        return self.last_replies

    # ----- one observation -------------------------------------------------------------------
    def _payload(self, obs: VLMObservation, temperature: float, seed: int | None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": build_messages(
                obs.goal, obs.screenshot_png, obs.previous_actions, self.history
            ),
            "temperature": temperature,
            "max_tokens": self.max_tokens,
        }
        if self.logprobs:
            payload["logprobs"] = True
        if seed is not None:
            payload["seed"] = int(seed)
        return payload

    async def _one(
        self,
        client: Any,
        slots: asyncio.Semaphore,
        obs: VLMObservation,
        temperature: float,
        seed: int | None,
    ) -> RemoteReply:
        async with slots:  # the base64 payload is built inside the slot to bound memory
            start = time.monotonic()
            payload = self._payload(obs, temperature, seed)
            body, attempts, error = await self._post(client, payload)
            latency = time.monotonic() - start
        if body is not None:
            try:
                text, log_prob, p_tok, c_tok = read_completion(body)
            except ValueError as exc:
                error = self._scrub(f"malformed response: {exc}")
                log.warning("remote VLM %s: %s", self.model, error)
            else:
                error = "" if text else "empty reply"
                return RemoteReply(
                    text, parse_action(text), log_prob, attempts, latency, error, p_tok, c_tok
                )
        return RemoteReply("", parse_action(""), math.nan, attempts, latency, error)

    async def _post(self, client: Any, payload: dict[str, Any]) -> tuple[Any, int, str]:
        """``(json_body | None, attempts, error)``; raises only :class:`RemoteVLMError`."""
        attempts, retries, problem = 0, 0, ""
        while True:
            attempts += 1
            retry_after: float | None = None
            try:
                async with asyncio.timeout(self.timeout_s):
                    resp = await client.post(self.url, json=payload)
                    raw = resp.content
            except (TimeoutError, httpx.TimeoutException):
                problem, retryable = f"timed out after {self.timeout_s:g}s", True
            except httpx.TransportError as exc:
                problem, retryable = f"connection failed: {type(exc).__name__}", True
            else:
                status = resp.status_code
                if status == 200:
                    try:
                        return resp.json(), attempts, ""
                    except ValueError:
                        snippet = self._scrub(raw[:120].decode("utf-8", "replace"))
                        problem = f"malformed response: body is not JSON: {snippet!r}"
                        log.warning("remote VLM %s: %s", self.model, problem)
                        return None, attempts, problem
                detail = self._scrub(raw[:300].decode("utf-8", "replace"))
                problem = f"HTTP {status}: {detail}"
                if status in FATAL_STATUS:
                    raise RemoteVLMError(f"{self.url} refused model {self.model!r}: {problem}")
                if status == 400 and "logprobs" in payload and "logprob" in detail.lower():
                    del payload["logprobs"]
                    self.logprobs = False  # this server has no logprobs; stop asking
                    log.info("remote VLM %s does not return logprobs; log-probs are NaN", self.url)
                    continue
                retryable = status in RETRYABLE_STATUS
                retry_after = parse_retry_after(resp.headers.get("retry-after"))
            if not retryable or retries >= self.retry.max_retries:
                break
            retries += 1
            if retry_after is not None:
                retry_after = min(retry_after, self.retry.max_delay)
            delay = self.retry.delay(retries, retry_after)
            log.info(
                "remote VLM %s attempt %d failed (%s); retrying in %.2fs",
                self.model, attempts, problem, delay,
            )  # fmt: skip
            await self._sleep(delay)
        if retryable:
            problem = f"gave up after {attempts} attempts; last error: {problem}"
        log.warning("remote VLM %s: %s", self.model, problem)
        return None, attempts, problem
