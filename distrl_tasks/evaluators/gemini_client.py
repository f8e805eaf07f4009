"""The thin layer over google-genai: client construction, request parts, answers and errors.

Everything SDK-specific lives here so the evaluator's retry and accounting logic reads plainly.
The SDK's own retrying is switched off (one attempt per call); retries are ours.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from typing import Any

from google import genai
from google.genai import errors, types

from distrl_tasks.config import ConfigError, EvaluatorConfig
from distrl_tasks.evaluators.gemini_prompt import InlineImage, Part
from distrl_tasks.protocol.ratelimit import parse_retry_after

API_VERSION = "v1beta"  # the generateContent endpoint family we target (and the fake serves)
PUBLIC_ENDPOINT = "https://generativelanguage.googleapis.com"  # what an empty base_url means
DEFAULT_MODEL = EvaluatorConfig().model  # one default, the config's
RETRYABLE_CODES = frozenset({408, 429, 500, 502, 503, 504})


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeout, transport) exception classes of whichever HTTP stack the SDK uses.

    google-genai runs on ``httpx`` or its drop-in fork ``httpx2``, and switches its async calls
    to ``aiohttp`` when that is installed; any of them may be present. (aiohttp's timeouts are
    ``asyncio.TimeoutError`` subclasses.)
    """
    timeouts: list[type[BaseException]] = [asyncio.TimeoutError]
    transport: list[type[BaseException]] = []
    for name in ("httpx", "httpx2", "aiohttp"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if name == "aiohttp":
            transport.append(mod.ClientConnectionError)
        else:
            timeouts.append(mod.TimeoutException)
            transport.append(mod.TransportError)
    return tuple(timeouts), tuple(transport)


TIMEOUT_ERRORS, TRANSPORT_ERRORS = _transport_errors()


def make_client(api_key: str, base_url: str | None, timeout_s: float) -> genai.Client:
    """A google-genai client for the Gemini Developer API with SDK retries disabled.

    Args:
        api_key: sent as the ``x-goog-api-key`` header, never in the URL.
        base_url: endpoint override (tests, proxies); ``None`` = Google's public endpoint.
        timeout_s: per-request timeout in seconds.
    """
    options = types.HttpOptions(
        base_url=base_url or None,
        api_version=API_VERSION,
        timeout=max(1, round(timeout_s * 1000)),  # the SDK counts milliseconds
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=api_key, http_options=options)


def to_contents(parts: list[Part]) -> list[Any]:
    """SDK parts in prompt order: text as-is, images as inline data."""
    out: list[Any] = []
    for part in parts:
        if isinstance(part, InlineImage):
            out.append(types.Part.from_bytes(data=part.data, mime_type=part.mime_type))
        else:
            out.append(types.Part.from_text(text=part))
    return out


# Deterministic judging; no tools, so automatic function calling (and its per-call log) is off.
GENERATION_CONFIG = types.GenerateContentConfig(
    temperature=0.0,
    max_output_tokens=1024,
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


@dataclass(frozen=True)
class Answer:
    """What one successful HTTP exchange produced.

    Attributes:
        text: the model's text, or ``None`` when it gave none.
        problem: why there is no text (blocked prompt, empty candidate), else ``""``.
        prompt_tokens: input tokens billed, from ``usage_metadata``.
        response_tokens: output tokens billed.
    """

    text: str | None
    problem: str
    prompt_tokens: int
    response_tokens: int


def read_response(resp: types.GenerateContentResponse) -> Answer:
    """Extract the text and token usage; a blocked or empty response becomes a ``problem``."""
    usage = resp.usage_metadata
    pt = (usage.prompt_token_count or 0) if usage else 0
    rt = (usage.candidates_token_count or 0) if usage else 0
    if not resp.candidates:
        feedback = resp.prompt_feedback
        block = feedback.block_reason if feedback else None
        if block is not None:
            name = getattr(block, "value", str(block))
            return Answer(None, f"prompt blocked ({name})", pt, rt)
        return Answer(None, "response has no candidates", pt, rt)
    cand = resp.candidates[0]
    texts = [p.text for p in (cand.content.parts or [])] if cand.content else []
    text = "".join(t for t in texts if t)
    if not text:
        reason = getattr(cand.finish_reason, "value", cand.finish_reason)
        return Answer(None, f"candidate has no text (finish_reason={reason})", pt, rt)
    return Answer(text, "", pt, rt)


@dataclass(frozen=True)
class CallError:
    """A failed attempt, classified.

    Attributes:
        retryable: worth another attempt (429, 5xx, timeouts, dropped connections).
        description: short, key-free text for logs and the verdict reason.
        retry_after: seconds the server asked us to wait, if it said.
    """

    retryable: bool
    description: str
    retry_after: float | None = None


def classify_error(exc: BaseException, timeout_s: float) -> CallError | None:
    """Map an exception from one SDK call to a :class:`CallError`; ``None`` = not ours to catch.

    Malformed bodies (the SDK raises ``ValueError`` subclasses for bad JSON or shapes) are not
    retried now: the trajectory stays unlabeled and is retried on a later labeling pass.
    """
    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        retry_after = parse_retry_after(headers.get("retry-after"))
        text = f"HTTP {code} {exc.status or ''}".strip()
        if exc.message:
            text += f": {str(exc.message)[:200]}"
        return CallError(code in RETRYABLE_CODES, text, retry_after)
    if isinstance(exc, TIMEOUT_ERRORS):
        return CallError(True, f"timed out after {timeout_s:g}s")
    if isinstance(exc, TRANSPORT_ERRORS):
        return CallError(True, f"connection error ({type(exc).__name__})")
    if isinstance(exc, ValueError):
        return CallError(False, f"malformed response ({type(exc).__name__}: {str(exc)[:200]})")
    return None


class UnknownModelError(ConfigError):
    """``evaluator.model`` names a model the endpoint does not serve (retired or misspelled)."""


class EndpointUnavailableError(RuntimeError):
    """The endpoint refused or failed the start-up check for a reason other than the model."""


def generating_models(client: genai.Client) -> list[str]:
    """Names of the endpoint's models that answer ``generateContent``, sorted."""
    names = []
    for model in client.models.list(config=types.ListModelsConfig(page_size=100)):
        actions = model.supported_actions or []
        if model.name and (not actions or "generateContent" in actions):
            names.append(model.name.removeprefix("models/"))
    return sorted(names)


def check_model(client: genai.Client, model: str, endpoint: str) -> None:
    """Ask the endpoint for ``model`` (``models.get``) so a retired name fails before any work.

    Raises:
        UnknownModelError: the endpoint answers 404; the message lists what it offers.
        EndpointUnavailableError: any other refusal or failure (bad key, outage, no route).
    """
    try:
        client.models.get(model=model)
        return
    except errors.APIError as exc:
        if int(exc.code or 0) != 404:
            raise EndpointUnavailableError(
                f"the Gemini endpoint {endpoint} refused the start-up check of "
                f"evaluator.model={model!r}: HTTP {exc.code} {exc.status or ''}".rstrip()
                + (f": {str(exc.message)[:200]}" if exc.message else "")
            ) from None
    except (*TIMEOUT_ERRORS, *TRANSPORT_ERRORS) as exc:
        raise EndpointUnavailableError(
            f"the Gemini endpoint {endpoint} could not be reached to check "
            f"evaluator.model={model!r} ({type(exc).__name__})"
        ) from None
    try:
        offered = ", ".join(generating_models(client)) or "(none)"
    except (errors.APIError, *TIMEOUT_ERRORS, *TRANSPORT_ERRORS) as exc:
        offered = f"(listing failed: {type(exc).__name__})"
    raise UnknownModelError(
        f"evaluator.model: {model!r} is not served by the Gemini endpoint {endpoint} (HTTP 404: "
        f"retired or misspelled). Models it offers for generateContent: {offered}"
    )
