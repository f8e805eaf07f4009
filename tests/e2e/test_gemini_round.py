"""A whole `distrl round` labeled by Gemini: the real google-genai client against the fake server.

The round runs every real stage on the simulator (the bootstrap is skipped by registering a
policy first: its SFT takes minutes and has tests of its own). The fake server answers a 429 and
a 503 first (the client retries both), then judges by goal. The round must end with a registered
version trained on Gemini's labels, and print and log Gemini's agreement with the oracle.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.gemini_server import FakeGemini, Reply, failure, rate_limited, server_error, success
from fakes.projects import TINY_PARAMS, register_initial_policy

from distrl_tasks.config import load_config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.stages import common
from distrl_tasks.tracking.registry import ModelRegistry

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
KEY = "test-gemini-key"
_GOAL = re.compile(r"Task: (?P<goal>.+)\nAnswer in this format", re.S)


def judge_by_goal(request) -> Reply:
    """Success for goals that open an app or search, failure otherwise: a fixed, goal-based rule
    (whatever the screen shows), so Gemini and the oracle may disagree."""
    goal = _GOAL.search(request.texts()[-1]).group("goal").lower()
    return success() if goal.startswith(("open", "search")) else failure()


def _round(project: Path, cwd: Path, *overrides: str) -> subprocess.CompletedProcess:
    """``distrl round --workdir project`` started from ``cwd``, labeled by Gemini."""
    env = {**os.environ, "GEMINI_API_KEY": KEY, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "distrl_tasks.cli", "round", "--workdir", str(project)]
    command += ["--config", str(project / "params.yaml"), "--rounds", "1"]
    for override in ("evaluator.kind=gemini", *overrides):
        command += ["--set", override]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_distrl_round_labeled_by_gemini_registers_a_version(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text(TINY_PARAMS)
    first = register_initial_policy(project)
    elsewhere = tmp_path / "elsewhere"  # the command starts here; nothing may be written here
    elsewhere.mkdir()
    with FakeGemini(api_key=KEY, responder=judge_by_goal) as fake:
        fake.script(rate_limited(0.2), server_error(503))
        proc = _round(project, elsewhere, f"evaluator.base_url={fake.base_url}")
        requests, gets = list(fake.requests), list(fake.gets)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert KEY not in proc.stdout + proc.stderr  # the key is never printed
    # the model was checked before any work; every relative path landed in the workdir
    assert gets[0] == "/v1beta/models/gemini-3.5-flash"
    assert list(elsewhere.iterdir()) == []
    assert len(list((project / "runs" / "gemini_cache").glob("??/*.json"))) == 2

    cfg = load_config(project / "params.yaml")
    labeled = read_shards(common.labeled_dir(cfg, project)).to_pylist()
    finals = [r for r in labeled if r["done"]]
    assert len(finals) == 2 and all(r["evaluator"].startswith("gemini") for r in finals)
    assert len(requests) >= 2 + 2  # the 429 and the 503 were retried
    label = common.read_manifest(project, 1, "label")
    assert label["labeled"] == 2 and label["evaluator"] == "gemini"
    agreement = label["agreement"]
    assert agreement["with"] == "oracle" and agreement["rollout/agreement_compared"] == 2
    assert sum(agreement["confusion"].values()) == 2
    assert "Agreement: gemini vs oracle" in proc.stderr  # printed for the user
    # Gemini labels after collection: DistRL takes learner rounds at the ratio, and says so
    assert "learner rounds at the replay ratio instead" in proc.stderr
    registry = ModelRegistry.from_config(cfg, root=project)
    newest = registry.alias_version("behavior")
    assert newest is not None and newest.version == first + 1 and newest.round == 1
    trained = common.read_manifest(project, 1, "train")
    assert newest.data_version == trained["data_version"] != ""
    metrics = json.dumps(label)
    assert "nan" not in metrics.lower()


def test_a_retired_gemini_model_stops_the_round_before_any_work(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text(TINY_PARAMS)
    with FakeGemini(api_key=KEY) as fake:
        proc = _round(
            project,
            tmp_path,
            f"evaluator.base_url={fake.base_url}",
            "evaluator.model=gemini-1.5-pro",
        )
        requests = list(fake.requests)
    assert proc.returncode == 2, proc.stderr[-2000:]  # a config error
    assert "evaluator.model: 'gemini-1.5-pro' is not served" in proc.stderr
    assert "gemini-3.5-flash" in proc.stderr  # what the endpoint offers
    assert requests == [] and not (project / "runs").exists()  # nothing collected, nothing written
