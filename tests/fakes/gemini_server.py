"""A scriptable fake of the Gemini ``generateContent`` endpoint, served over real HTTP.

Runs on :class:`fakes.scripted_http.ScriptedHTTPServer` (loopback, a free port), so the real
google-genai client talks to it unchanged. Tests script the replies in order (success,
429 with ``Retry-After``, 5xx, hangs, malformed JSON, blocked prompts) and inspect every
request afterwards: path, headers, decoded parts and arrival times.

Usage::

    with FakeGemini(api_key="test-key") as fake:
        fake.script(rate_limited(0.2), answer("Q: ...\\nStatus: success"))
        ev = GeminiEvaluator(api_key="test-key", base_url=fake.base_url, ...)
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from fakes.scripted_http import ScriptedHTTPServer

_PATH = re.compile(r"^/(?P<version>v1beta|v1)/models/(?P<model>[^/:]+):generateContent$")
_MODEL = re.compile(r"^/(?P<version>v1beta|v1)/models/(?P<model>[^/:]+)$")
_LIST = re.compile(r"^/(?P<version>v1beta|v1)/models/?$")
# What the fake endpoint serves unless a test says otherwise: current stable and preview names.
CURRENT_MODELS = ("gemini-3.5-flash", "gemini-3.1-flash-lite", "gemini-3.1-pro-preview")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP reply.

    Attributes:
        status: HTTP status code.
        body: raw response body.
        headers: extra response headers.
        delay_s: seconds to wait before answering (a hang, when past the client's timeout).
    """

    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")


def answer(text: str, *, prompt_tokens: int = 1200, response_tokens: int = 60) -> Reply:
    """A normal 200 answer carrying ``text`` and token usage."""
    return Reply(
        body=_json(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": prompt_tokens,
                    "candidatesTokenCount": response_tokens,
                    "totalTokenCount": prompt_tokens + response_tokens,
                },
            }
        )
    )


def success(note: str = "The screen shows the finished task.") -> Reply:
    """An answer that judges success."""
    return answer(f"Q: What should I see?\nA: I should see it done. {note}\nStatus: success")


def failure(note: str = "The screen does not show the finished task.") -> Reply:
    """An answer that judges failure."""
    return answer(f"Q: What should I see?\nA: I should see it done. {note}\nStatus: failure")


def blocked(reason: str = "SAFETY", *, prompt_tokens: int = 900) -> Reply:
    """A 200 with no candidates: the prompt was blocked (``promptFeedback.blockReason``)."""
    return Reply(
        body=_json(
            {
                "promptFeedback": {"blockReason": reason},
                "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": 900},
            }
        )
    )


def error(code: int, message: str = "", *, retry_after: float | None = None) -> Reply:
    """A Google-style JSON error, optionally with a ``Retry-After`` header (seconds)."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    status = _STATUS_NAMES.get(code, "UNKNOWN")
    body = {"error": {"code": code, "message": message or status.lower(), "status": status}}
    return Reply(status=code, body=_json(body), headers=headers)


def rate_limited(retry_after: float = 0.2) -> Reply:
    """HTTP 429 asking the client to wait ``retry_after`` seconds."""
    return error(429, "Resource has been exhausted (e.g. check quota).", retry_after=retry_after)


def server_error(code: int = 500) -> Reply:
    """A 5xx error."""
    return error(code, "An internal error has occurred.")


def malformed() -> Reply:
    """A 200 whose body is not JSON."""
    return Reply(body=b'{"candidates": [ {"content": ')


def hang(seconds: float, then: Reply | None = None) -> Reply:
    """Answer only after ``seconds`` (released early when the server stops)."""
    base = then or success()
    return Reply(base.status, base.body, dict(base.headers), delay_s=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw: bytes
    received_at: float  # time.monotonic() on arrival

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def model(self) -> str | None:
        m = _PATH.match(self.path)
        return m.group("model") if m else None

    @property
    def api_version(self) -> str | None:
        m = _PATH.match(self.path)
        return m.group("version") if m else None

    def parts(self) -> list[dict[str, Any]]:
        """Every part of every content, in order."""
        return [p for c in self.json.get("contents", []) for p in c.get("parts", [])]

    def texts(self) -> list[str]:
        return [p["text"] for p in self.parts() if "text" in p]

    def images(self) -> list[tuple[str, bytes]]:
        """``(mime_type, bytes)`` of each inline image, in order."""
        out = []
        for p in self.parts():
            blob = p.get("inlineData") or p.get("inline_data")
            if blob is not None:
                mime = blob.get("mimeType") or blob.get("mime_type")
                out.append((mime, _b64(blob["data"])))
        return out

    def kinds(self) -> list[str]:
        """``"text"`` / ``"image"`` per part: the shape of the prompt."""
        return ["text" if "text" in p else "image" for p in self.parts()]


def _b64(data: str) -> bytes:
    """Decode standard or URL-safe base64 (the SDK sends the URL-safe alphabet), padded or not."""
    data = data.replace("-", "+").replace("_", "/")
    return base64.b64decode(data + "=" * (-len(data) % 4), validate=True)


Responder = Callable[[RecordedRequest], Reply]


class FakeGemini(ScriptedHTTPServer):
    """The fake server. Scripted replies are used first, then ``responder``, then ``default``.

    Args:
        api_key: when set, requests without this ``x-goog-api-key`` get HTTP 403.
        default: reply when nothing is scripted (default: a success answer).
        responder: computes a reply from the request (e.g. by goal) when the script is empty.
        models: the models the endpoint serves; any other answers 404, as a retired one does on
            the real API (``models.get`` and ``generateContent`` alike).
    """

    name = "fake-gemini"
    content_type = "application/json; charset=UTF-8"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default: Reply | None = None,
        responder: Responder | None = None,
        models: tuple[str, ...] = CURRENT_MODELS,
    ) -> None:
        super().__init__(default=default or success(), responder=responder)
        self.api_key = api_key
        self.models = models

    def record(
        self, path: str, headers: Mapping[str, str], raw: bytes, received_at: float
    ) -> RecordedRequest:
        return RecordedRequest("POST", path, dict(headers), raw, received_at)

    def refuse(self, req: RecordedRequest) -> Reply | None:
        if self.api_key is not None and req.headers.get("x-goog-api-key") != self.api_key:
            return error(403, "API key not valid. Please pass a valid API key.")
        m = _PATH.match(req.path)
        if m is None:
            return error(404, f"no such method: {req.path}")
        if m["model"] not in self.models:
            return error(404, _not_found(m["model"], m["version"]))
        return None

    def get(self, path: str, query: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """``models.get`` and ``models.list`` (paged by ``pageSize``/``pageToken``)."""
        if self.api_key is not None and headers.get("x-goog-api-key") != self.api_key:
            reply = error(403, "API key not valid. Please pass a valid API key.")
            return reply.status, reply.body
        if m := _MODEL.match(path):
            if m["model"] not in self.models:
                reply = error(404, _not_found(m["model"], m["version"]))
                return reply.status, reply.body
            return 200, _json(_model_resource(m["model"]))
        if _LIST.match(path):
            args = parse_qs(query)
            size = int(args.get("pageSize", ["50"])[0])
            start = int(args.get("pageToken", ["0"])[0] or 0)
            page = {"models": [_model_resource(n) for n in self.models[start : start + size]]}
            if start + size < len(self.models):
                page["nextPageToken"] = str(start + size)
            return 200, _json(page)
        reply = error(404, f"no such resource: {path}")
        return reply.status, reply.body


def _not_found(model: str, version: str) -> str:
    return (
        f"models/{model} is not found for API version {version}, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their "
        "supported methods."
    )


def _model_resource(name: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
    }
