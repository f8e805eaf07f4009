"""The secret filter and flattening in distrl_tasks.tracking.params (no MLflow store needed)."""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_tasks.config import load_config
from distrl_tasks.tracking.params import (
    MAX_PARAM_LENGTH,
    REDACTED,
    SecretFilter,
    flatten,
    is_secret_key,
    key_words,
    looks_like_credential,
    mlflow_key,
    secret_env_values,
    to_text,
)

FAKE_GEMINI = "AIzaSyFAKE0123456789abcdefghijklmnopqrs"  # the shape of a Google API key


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("GEMINI_API_KEY", ["gemini", "api", "key"]),
        ("geminiApiKey", ["gemini", "api", "key"]),
        ("evaluator.max-retries", ["evaluator", "max", "retries"]),
    ],
)
def test_key_words(key: str, words: list[str]) -> None:
    assert key_words(key) == words


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "evaluator.api_key",
        "GEMINI_API_KEY",
        "apiKey",
        "HF_TOKEN",
        "github.token",
        "db_password",
        "client_secret",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "google.credentials",
        "Authorization",
        "private-key",
        "session_cookie",
        "cookie",
    ],
)
def test_secret_keys_are_recognised(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "agent.max_new_tokens",  # a length, not a token
        "agent.max_prompt_tokens",
        "eval_tasks_key",  # a task-list hash
        "data.dvc_remote",
        "algorithm.lambda_",
        "author",
        "keyboard",
        "monkey",
        "sim.dynamics.rates.cookie_consent",  # a perturbation's rate
    ],
)
def test_ordinary_keys_are_not_secret(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize(
    "value",
    [
        FAKE_GEMINI,
        "sk-proj-abcdefghijklmnop1234",
        "ghp_" + "a1" * 18,
        "AKIAABCDEFGHIJKLMNOP",
        "hf_" + "Ab1" * 11,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "-----BEGIN RSA PRIVATE KEY-----",
        "Bearer abcdef123456",
        "https://alice:hunter22@example.com/repo",
        "https://generativelanguage.example/v1?key=abc123&alt=json",
        "prefix Zq8rT2vX9pL4mN7bK1cH5dF3gJ6sW0yE suffix",  # 32 random mixed characters
    ],
)
def test_credential_shaped_values(value: str) -> None:
    assert looks_like_credential(value)


@pytest.mark.parametrize(
    "value",
    [
        "0f4c2a9b8e7d6c5b4a3928171615141312.dir",  # DVC directory hash (lower-case hex)
        "5bc38ae0bfe04f078c7fba5d8bd437dd",  # MLflow run id
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256 hex
        "runs/data",
        "sqlite:///runs/mlflow.db",
        "https://generativelanguage.googleapis.com/v1beta?alt=json",
        "gemini-1.5-pro",
        "[0.25, 0.08]",
        "Search for flights from NYC to SFO on Google Flights",
    ],
)
def test_ordinary_values_pass(value: str) -> None:
    assert not looks_like_credential(value)


def test_secret_env_values_reads_only_secret_names_and_skips_short_values() -> None:
    env = {
        "GEMINI_API_KEY": "  plain-looking-value-42  ",
        "HF_TOKEN": "short",  # below min_length: too common to search for
        "HOME": "/home/someone-with-a-long-home",
        "PATH": "/usr/bin:/bin",
    }
    assert secret_env_values(env) == frozenset({"plain-looking-value-42"})
    assert secret_env_values(env, min_length=5) == frozenset({"plain-looking-value-42", "short"})


@dataclass(frozen=True)
class _Inner:
    depth: int = 2
    pair: tuple[float, float] = (0.5, 1.5)


@dataclass(frozen=True)
class _Outer:
    name: str = "x"
    inner: _Inner = field(default_factory=_Inner)


def test_flatten_nested_mappings_and_dataclasses() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": "e"}}, "f": [1, 2]}) == {
        "a.b": 1,
        "a.c.d": "e",
        "f": [1, 2],
    }
    assert flatten(_Outer()) == {"name": "x", "inner.depth": 2, "inner.pair": (0.5, 1.5)}
    with pytest.raises(TypeError, match="mapping or a dataclass"):
        flatten([1, 2])


def test_to_text_and_mlflow_key() -> None:
    assert to_text((0.25, 0.08)) == "[0.25, 0.08]"
    assert to_text({"b", "a"}) == '["a", "b"]'
    assert to_text(True) == "True"
    assert to_text(1e-4) == "0.0001"
    assert mlflow_key("a.b-c d/e") == "a.b-c d/e"
    assert mlflow_key("weird:key@{x}") == "weird_key__x_"
    assert len(mlflow_key("k" * 400)) == 250


def test_clean_real_config_keeps_every_default_and_redacts_nothing() -> None:
    cfg = load_config(None)
    clean = SecretFilter(environ={}).clean(cfg)
    flat = cfg.to_flat_dict()
    assert set(clean) == set(flat)
    assert REDACTED not in clean.values()
    assert clean["agent.max_new_tokens"] == "128"
    assert clean["sim.latency.screenshot"] == "[0.25, 0.08]"
    assert clean["tracking.tracking_uri"] == "sqlite:///runs/mlflow.db"


def test_env_var_name_fields_keep_the_name_but_not_a_pasted_key() -> None:
    filt = SecretFilter(environ={"VLM_API_KEY": "real-secret-value-99"})
    assert filt.clean({"agent.remote_api_key_env": "VLM_API_KEY"}) == {
        "agent.remote_api_key_env": "VLM_API_KEY"
    }
    assert filt.clean({"agent.remote_api_key_env": "real-secret-value-99"}) == {
        "agent.remote_api_key_env": REDACTED
    }
    assert filt.clean({"agent.remote_api_key_env": "lower-case-key"}) == {
        "agent.remote_api_key_env": REDACTED
    }


def test_clean_redacts_by_key_by_shape_and_by_environment_value() -> None:
    env_secret = "not-a-known-shape-but-in-env"
    filt = SecretFilter(environ={"GEMINI_API_KEY": env_secret})
    data = {
        "evaluator": {"api_key": "anything", "model": "gemini-1.5-pro"},
        "notes": f"copied {env_secret} by mistake",
        "endpoint": f"https://host/v1?key={FAKE_GEMINI}",
        "lr": 0.001,
    }
    assert filt.clean(data) == {
        "evaluator.api_key": REDACTED,
        "evaluator.model": "gemini-1.5-pro",
        "notes": REDACTED,
        "endpoint": REDACTED,
        "lr": "0.001",
    }


def test_clean_truncates_to_mlflow_limits() -> None:
    long = "word " * 2000
    out = SecretFilter(environ={}).clean({"text": long})["text"]
    assert len(out) == MAX_PARAM_LENGTH and out.endswith("...[truncated]")
    assert len(SecretFilter(environ={}).clean({"text": long}, max_length=50)["text"]) == 50


def test_scrub_replaces_only_the_secret_parts() -> None:
    filt = SecretFilter(environ={"MY_SERVICE_TOKEN": "tok-value-123456"})
    text = (
        f"HTTP 403 for https://h/v1?alt=json&key=abc123 with tok-value-123456 and {FAKE_GEMINI}; "
        "run 5bc38ae0bfe04f078c7fba5d8bd437dd"
    )
    assert filt.scrub(text) == (
        f"HTTP 403 for https://h/v1?alt=json&key={REDACTED} with {REDACTED} and {REDACTED}; "
        "run 5bc38ae0bfe04f078c7fba5d8bd437dd"
    )


def test_files_with_secrets(tmp_path) -> None:
    filt = SecretFilter(environ={"GEMINI_API_KEY": "env-held-secret-value"})
    (tmp_path / "sub").mkdir()
    (tmp_path / "config.json").write_text(json.dumps({"lr": 1e-4}))
    (tmp_path / "sub" / "meta.json").write_text('{"note": "env-held-secret-value"}')
    (tmp_path / "weights.safetensors").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "leak.bin").write_bytes(b"\x00\x01" + FAKE_GEMINI.encode() + b"\x02")
    hits = filt.files_with_secrets(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in hits] == ["leak.bin", "sub/meta.json"]
    # Large binaries are not scanned (weights would only produce false alarms).
    assert filt.files_with_secrets(tmp_path, max_scan_bytes=4) == [tmp_path / "sub" / "meta.json"]


def test_vocabularies_are_checked_for_real_secrets_not_for_shapes(tmp_path) -> None:
    filt = SecretFilter(environ={"GEMINI_API_KEY": "env-held-secret-value"})
    # a learned SentencePiece vocabulary can contain a key-shaped piece by coincidence ...
    (tmp_path / "spiece.model").write_bytes(b"\x0a\x05" + FAKE_GEMINI.encode() + b"\x15")
    assert filt.files_with_secrets(tmp_path) == []
    # ... but never the bytes of a real secret
    (tmp_path / "spiece.model").write_bytes(b"\x0a\x05env-held-secret-value\x15")
    assert filt.files_with_secrets(tmp_path) == [tmp_path / "spiece.model"]


@settings(max_examples=60, deadline=None)
@given(
    secret=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=8, max_size=40),
    before=st.text(alphabet=string.printable, max_size=20),
    after=st.text(alphabet=string.printable, max_size=20),
    key=st.sampled_from(["notes", "evaluator.base_url", "agent.checkpoint_dir", "x.y.z"]),
)
def test_env_secret_never_survives_clean_or_scrub(
    secret: str, before: str, after: str, key: str
) -> None:
    filt = SecretFilter(environ={"SERVICE_API_KEY": secret})
    value = before + secret + after
    cleaned = filt.clean({key: value, "nested": {"list": [value, 1]}})
    assert all(secret not in v for v in cleaned.values())
    assert secret not in filt.scrub(value)


def test_working_directory_variables_are_not_secrets(tmp_path) -> None:
    filt = SecretFilter(environ={"PWD": "/work/project", "OLDPWD": "/home/user/elsewhere"})
    (tmp_path / "notes.txt").write_text("trained in /work/project from /home/user/elsewhere")
    assert filt.files_with_secrets(tmp_path) == []
    assert SecretFilter(environ={"DB_PASSWORD": "/work/project"}).files_with_secrets(tmp_path)
