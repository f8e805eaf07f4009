"""A round labeled by Gemini checks its key before any work, naming where a key can come from."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from distrl_tasks.config import Config, ConfigError
from distrl_tasks.evaluators.evaluator import MissingApiKeyError, require_labeling_key


def gemini_cfg() -> Config:
    cfg = Config()
    return dataclasses.replace(cfg, evaluator=dataclasses.replace(cfg.evaluator, kind="gemini"))


def test_the_oracle_needs_no_key(monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    require_labeling_key(Config())  # no error


def test_gemini_without_a_key_names_the_variable_and_the_connection(monkeypatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError) as info:
        require_labeling_key(gemini_cfg())
    assert "GEMINI_API_KEY" in str(info.value) and "gemini_default" in str(info.value)
    assert isinstance(info.value, ConfigError)  # the CLI's exit status 2
    with pytest.raises(MissingApiKeyError):
        require_labeling_key(gemini_cfg(), api_key="   ")  # blank is no key


def test_a_key_from_the_environment_or_a_connection_passes(monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k-env")
    require_labeling_key(gemini_cfg())
    monkeypatch.delenv("GEMINI_API_KEY")
    require_labeling_key(gemini_cfg(), api_key="k-from-airflow")


def test_distrl_round_with_gemini_and_no_key_stops_before_any_work(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "distrl_tasks.cli",
            "round",
            "--workdir",
            str(tmp_path),
            "--set",
            "evaluator.kind=gemini",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "GEMINI_API_KEY" in proc.stderr and "gemini_default" in proc.stderr
    assert not (tmp_path / "runs").exists()  # no demo, no farm, no MLflow store
