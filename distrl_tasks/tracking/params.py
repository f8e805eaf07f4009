"""Turn configuration and tags into MLflow-safe strings, with secrets kept out.

Everything the tracking code writes as a run parameter, run tag or model-version tag goes through
:class:`SecretFilter` first. A value is replaced by :data:`REDACTED` when

* its key names a secret (``api_key``, ``token``, ``password``, ``secret``, ``credentials``, ...;
  matched on whole words, so ``max_new_tokens`` is not one),
* it looks like a credential on its own (Google/OpenAI/GitHub/AWS/Slack/Hugging Face key shapes,
  JWTs, PEM private keys, ``Bearer`` headers, URLs with a password or a ``?key=`` query,
  long mixed-case random-looking strings), or
* it contains the value of a secret-named environment variable (``GEMINI_API_KEY``, ``HF_TOKEN``,
  ...) as seen when the filter was built, so a key pasted into an innocent field is still caught.

This module does not import MLflow, so it is cheap to use and to test.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REDACTED = "[redacted]"
MAX_PARAM_LENGTH = 6000  # MLflow's limit on a param value
MAX_TAG_LENGTH = 8000  # MLflow's limit on a run tag value
MAX_KEY_LENGTH = 250  # MLflow's limit on param / tag / metric names
_TRUNCATION_MARK = "...[truncated]"

# Single words that make a key secret; plurals such as "tokens" (a length) are deliberately absent.
_SECRET_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "credential",
        "credentials",
        "passphrase",
        "passwd",
        "password",
        "passwords",
        "pwd",
        "secret",
        "secrets",
        "token",
    }
)
# Adjacent word pairs that make a key secret ("key" alone is not: eval_tasks_key is a hash).
_SECRET_PAIRS = frozenset(
    {
        ("access", "key"),
        ("api", "key"),
        ("client", "secret"),
        ("encryption", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("signing", "key"),
    }
)

# Adjacent pairs in which a secret word names no secret (the simulator's cookie-consent banner).
_BENIGN_PAIRS = frozenset({("cookie", "consent")})

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")

# Credential shapes worth catching even under an innocent key. Kept specific on purpose: hex
# digests (DVC hashes, run ids, git commits) must pass untouched.
_VALUE_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"AIza[0-9A-Za-z_\-]{30,}",  # Google API key (Gemini)
        r"\bsk-[A-Za-z0-9_\-]{16,}",  # OpenAI-style secret key
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub token
        r"\bgithub_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained token
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack token
        r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face token
        r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",  # PEM private key
        r"(?i)\bbearer\s+[A-Za-z0-9_\-.=+/]{8,}",  # Authorization header value
        r"[A-Za-z][\w+.\-]*://[^/\s:@]+:[^/\s@]+@",  # URL with user:password@
    )
)
_QUERY_PARAM = re.compile(r"[?&;]([^=&#;\s]+)=([^&#;\s]*)")
_QUERY_SECRET_NAMES = frozenset({"key", "sig", "signature"})  # e.g. Google's ?key=<api key>
# A long unbroken run of letters+digits mixing upper case, lower case and digits: random keys.
_RANDOM_RUN = re.compile(r"[A-Za-z0-9_\-+=]{32,}")
_ENV_VAR_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_MLFLOW_KEY_CHARS = re.compile(r"[^\w.\- /]")


def key_words(key: str) -> list[str]:
    """Lower-case words of a key: ``"GEMINI_API_KEY"`` or ``"geminiApiKey"`` -> gemini, api, key."""
    return [w for w in _NON_WORD.split(_CAMEL_BOUNDARY.sub("_", key).lower()) if w]


_MODEL_SUFFIXES = {".safetensors", ".model"}  # learned weights and vocabularies


def is_secret_key(key: str) -> bool:
    """Whether a (dotted, snake, kebab or camel case) key names a secret."""
    words = key_words(key)
    benign = {
        i + k
        for i, pair in enumerate(itertools.pairwise(words))
        if pair in _BENIGN_PAIRS
        for k in (0, 1)
    }
    if any(w in _SECRET_WORDS for i, w in enumerate(words) if i not in benign):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def _is_secret_query(name: str) -> bool:
    return name.lower() in _QUERY_SECRET_NAMES or is_secret_key(name)


def _is_random_run(text: str) -> bool:
    for match in _RANDOM_RUN.finditer(text):
        run = match.group(0)
        if any(c.isupper() for c in run) and any(c.islower() for c in run):
            if any(c.isdigit() for c in run):
                return True
    return False


def looks_like_credential(text: str) -> bool:
    """Whether ``text`` contains something shaped like a credential (see the module docstring)."""
    if any(p.search(text) for p in _VALUE_PATTERNS):
        return True
    if any(_is_secret_query(name) and value for name, value in _QUERY_PARAM.findall(text)):
        return True
    return _is_random_run(text)


def secret_env_values(
    environ: Mapping[str, str] | None = None, *, min_length: int = 8
) -> frozenset[str]:
    """Values of environment variables whose names look secret (short values are ignored).

    Args:
        environ: the environment to read (default ``os.environ``).
        min_length: values shorter than this are too common ("1", "true") to search for.
    """
    env = os.environ if environ is None else environ
    return frozenset(
        value.strip()
        for name, value in env.items()
        if is_secret_key(name)
        and name.upper() not in _PUBLIC_ENV
        and len(value.strip()) >= min_length
    )


# Shell variables whose names happen to contain a secret word ("pwd" = password) but hold paths.
_PUBLIC_ENV = frozenset({"PWD", "OLDPWD"})


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted-key view of nested mappings and dataclasses; other values are leaves.

    ``{"a": {"b": 1}, "c": [1, 2]}`` -> ``{"a.b": 1, "c": [1, 2]}``.
    """
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    if not isinstance(data, Mapping):
        if not prefix:
            raise TypeError(f"flatten expects a mapping or a dataclass, got {type(data).__name__}")
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) or (
            dataclasses.is_dataclass(value) and not isinstance(value, type)
        ):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def to_text(value: Any) -> str:
    """MLflow string form of a leaf value: JSON for containers, ``str`` otherwise."""
    if isinstance(value, list | tuple | dict | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return json.dumps(list(items) if isinstance(items, tuple | set | frozenset) else items)
    return str(value)


def mlflow_key(key: str) -> str:
    """A key MLflow accepts: unsupported characters become ``_``, length capped at 250."""
    cleaned = _MLFLOW_KEY_CHARS.sub("_", str(key)).strip("/ ") or "_"
    return cleaned[:MAX_KEY_LENGTH]


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(_TRUNCATION_MARK)] + _TRUNCATION_MARK


class SecretFilter:
    """Redacts secrets from everything the tracking code writes.

    Args:
        environ: environment whose secret-named variables are searched for (default: the process
            environment, read once here).
        extra_values: further literal strings that must never be written.
        min_env_length: shorter environment values are not searched for.
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        extra_values: Iterable[str] = (),
        *,
        min_env_length: int = 8,
    ) -> None:
        values = set(secret_env_values(environ, min_length=min_env_length))
        values.update(v for v in extra_values if v)
        # Longest first so a scrub never leaves the tail of a longer secret behind.
        self._values = tuple(sorted(values, key=len, reverse=True))

    def is_secret(self, key: str, value: Any) -> bool:
        """Whether ``key``/``value`` must not be written as is.

        A secret-named key ending in ``env`` (``remote_api_key_env``) names the environment
        variable that holds the secret; its value is kept when it is such a variable name.
        """
        text = to_text(value)
        if is_secret_key(key):
            words = key_words(key)
            if not (words[-1] == "env" and _ENV_VAR_NAME.match(text)):
                return True
        return any(v in text for v in self._values) or looks_like_credential(text)

    def clean(self, data: Any, *, max_length: int = MAX_PARAM_LENGTH) -> dict[str, str]:
        """Flatten ``data`` and return MLflow-ready ``{key: text}`` with secrets redacted.

        Args:
            data: a mapping (nested allowed) or a dataclass such as ``Config``.
            max_length: values longer than this are truncated (MLflow rejects them otherwise).
        """
        out: dict[str, str] = {}
        for key, value in flatten(data).items():
            text = REDACTED if self.is_secret(key, value) else to_text(value)
            out[mlflow_key(key)] = _truncate(text, max_length)
        return out

    def scrub(self, text: str, *, max_length: int = MAX_TAG_LENGTH) -> str:
        """Free text (an error message) with every secret-looking part replaced by REDACTED."""
        for value in self._values:
            text = text.replace(value, REDACTED)
        for pattern in _VALUE_PATTERNS:
            text = pattern.sub(REDACTED, text)
        text = _QUERY_PARAM.sub(
            lambda m: (
                m.group(0)
                if not _is_secret_query(m.group(1))
                else m.group(0)[0] + f"{m.group(1)}={REDACTED}"
            ),
            text,
        )
        text = _RANDOM_RUN.sub(
            lambda m: REDACTED if _is_random_run(m.group(0)) else m.group(0), text
        )
        return _truncate(text, max_length)

    def files_with_secrets(
        self, directory: str | Path, *, max_scan_bytes: int = 1 << 20
    ) -> list[Path]:
        """Files under ``directory`` that contain a known secret value or a credential shape.

        Text-like files (json, yaml, txt, ...) are always read; other files only when no larger
        than ``max_scan_bytes`` (weights are binary and would only produce false alarms). Model
        files (safetensors weights, SentencePiece ``.model`` vocabularies) are checked for the
        known secret values only: a credential *shape* inside a learned vocabulary is a
        coincidence (it can hold any short string), a real key's bytes never are.
        """
        text_suffixes = {".json", ".yaml", ".yml", ".txt", ".md", ".cfg", ".ini", ".toml", ".env"}
        needles = [v.encode() for v in self._values]
        patterns = [re.compile(p.pattern.encode()) for p in _VALUE_PATTERNS]
        hits = []
        for path in sorted(Path(directory).rglob("*")):
            if not path.is_file():
                continue
            if path.suffix.lower() not in text_suffixes and path.stat().st_size > max_scan_bytes:
                continue
            blob = path.read_bytes()
            shapes = path.suffix.lower() not in _MODEL_SUFFIXES
            if any(n in blob for n in needles) or (
                shapes and any(p.search(blob) for p in patterns)
            ):
                hits.append(path)
        return hits
