"""A scriptable fake of an OpenAI-compatible ``/v1/chat/completions`` endpoint (as vLLM serves).

Runs on :class:`fakes.scripted_http.ScriptedHTTPServer` (loopback, a free port). Tests script
replies in order (completions with or without token log-probs, malformed text, non-JSON bodies,
429 with ``Retry-After``, 5xx, slow answers), or compute them from the request with a
``responder``; every request is recorded (headers, JSON body, arrival time, decoded images) and
the peak number of requests in flight is tracked.

Usage::

    with FakeVLM(api_key="k") as fake:
        fake.script(rate_limited(0.2), completion('Action Plan: ...'))
        policy = RemoteVLMPolicy(fake.base_url, "cogagent", api_key="k")
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fakes.scripted_http import ScriptedHTTPServer

PATH = "/v1/chat/completions"
DATA_URL_PREFIX = "data:image/png;base64,"


@dataclass(frozen=True)
class Reply:
    """One scripted reply: either a completion (``text`` set) or a raw ``body``.

    A completion is rendered per request: its token log-probs are included only when the
    request asked for ``logprobs``, as a real server does.
    """

    status: int = 200
    text: str | None = None
    token_logprobs: tuple[float, ...] = ()
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    prompt_tokens: int = 1000
    finish_reason: str = "stop"


def completion(
    text: str, *, token_logprobs: Sequence[float] = (), prompt_tokens: int = 1000
) -> Reply:
    """A 200 chat completion whose message content is ``text``."""
    return Reply(text=text, token_logprobs=tuple(token_logprobs), prompt_tokens=prompt_tokens)


def error(code: int, message: str = "", *, retry_after: float | None = None) -> Reply:
    """An OpenAI-style JSON error, optionally with ``Retry-After`` (seconds)."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    body = {"error": {"message": message or f"error {code}", "type": "server_error", "code": code}}
    return Reply(status=code, body=json.dumps(body).encode(), headers=headers)


def rate_limited(retry_after: float = 0.2) -> Reply:
    """HTTP 429 asking the client to wait ``retry_after`` seconds."""
    return error(429, "Rate limit reached, please retry later.", retry_after=retry_after)


def server_error(code: int = 500) -> Reply:
    """A 5xx error."""
    return error(code, "The server had an error while processing your request.")


def bad_json() -> Reply:
    """A 200 whose body is cut off mid-JSON."""
    return Reply(body=b'{"choices": [{"message": ')


def slow(seconds: float, then: Reply | None = None) -> Reply:
    """``then`` (default: a done action) after ``seconds`` (released early on stop)."""
    base = then or completion('"action_type": "STATUS_TASK_COMPLETE"')
    return Reply(
        base.status,
        base.text,
        base.token_logprobs,
        base.body,
        dict(base.headers),
        seconds,
        base.prompt_tokens,
        base.finish_reason,
    )


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]  # lower-cased names
    raw: bytes
    received_at: float  # time.monotonic()

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.json["messages"]

    def system_text(self) -> str:
        return "".join(m["content"] for m in self.messages if m["role"] == "system")

    def user_parts(self) -> list[dict[str, Any]]:
        return [p for m in self.messages if m["role"] == "user" for p in m["content"]]

    def user_text(self) -> str:
        return "\n".join(p["text"] for p in self.user_parts() if p["type"] == "text")

    def image_urls(self) -> list[str]:
        return [p["image_url"]["url"] for p in self.user_parts() if p["type"] == "image_url"]

    def images(self) -> list[bytes]:
        """Decoded PNG data URLs (raises when an image is not a PNG data URL)."""
        out = []
        for url in self.image_urls():
            if not url.startswith(DATA_URL_PREFIX):
                raise ValueError(f"not a PNG data URL: {url[:40]!r}")
            out.append(base64.b64decode(url[len(DATA_URL_PREFIX) :], validate=True))
        return out


Responder = Callable[[RecordedRequest], Reply]


def _render(reply: Reply, req: RecordedRequest, model: str) -> bytes:
    if reply.text is None:
        return reply.body
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": reply.text},
        "finish_reason": reply.finish_reason,
        "logprobs": None,
    }
    if req.json.get("logprobs") and reply.token_logprobs:
        choice["logprobs"] = {
            "content": [
                {"token": f"tok{i}", "logprob": lp, "bytes": None, "top_logprobs": []}
                for i, lp in enumerate(reply.token_logprobs)
            ]
        }
    n_out = max(1, len(reply.token_logprobs))
    body = {
        "id": f"chatcmpl-{int(req.received_at * 1e6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": n_out,
            "total_tokens": reply.prompt_tokens + n_out,
        },
    }
    return json.dumps(body).encode()


class FakeVLM(ScriptedHTTPServer):
    """The fake server. Scripted replies are used first, then ``responder``, then ``default``.

    Args:
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get HTTP 401
            (whose message echoes the key that was sent, as careless servers do).
        models: served model names; a request for another gets 404.
        supports_logprobs: when False, a request with ``logprobs`` gets 400 naming it.
        default: the reply when nothing is scripted.
        responder: computes a reply from the request when the script is empty.
    """

    name = "fake-vlm"
    url_suffix = "/v1"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: Sequence[str] = ("cogagent-chat",),
        supports_logprobs: bool = True,
        default: Reply | None = None,
        responder: Responder | None = None,
    ) -> None:
        default = default or completion('"action_type": "STATUS_TASK_COMPLETE"')
        super().__init__(default=default, responder=responder)
        self.api_key = api_key
        self.models = tuple(models)
        self.supports_logprobs = supports_logprobs

    def record(
        self, path: str, headers: Mapping[str, str], raw: bytes, received_at: float
    ) -> RecordedRequest:
        return RecordedRequest(path, dict(headers), raw, received_at)

    def refuse(self, req: RecordedRequest) -> Reply | None:
        sent = req.headers.get("authorization", "")
        if self.api_key is not None and sent != f"Bearer {self.api_key}":
            return error(401, f"Incorrect API key provided: {sent.removeprefix('Bearer ')}")
        if req.path != PATH:
            return error(404, f"no route {req.path}")
        try:
            body = req.json
        except ValueError:
            return error(400, "request body is not JSON")
        if body.get("model") not in self.models:
            return error(404, f"The model `{body.get('model')}` does not exist.")
        if body.get("logprobs") and not self.supports_logprobs:
            return error(400, "logprobs is not supported by this server")
        return None

    def render(self, reply: Reply, req: RecordedRequest) -> bytes:
        return _render(reply, req, self.models[0] if self.models else "")
