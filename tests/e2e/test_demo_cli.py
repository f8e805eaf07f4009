"""`distrl demo` end to end: a real farm, the expert over ADB, the success table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _distrl(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "distrl_tasks.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_demo_prints_a_success_table_per_split() -> None:
    proc = _distrl("demo", "--showcase-only", "--devices", "3", "--tasks-per-split", "3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {
        m.group(1): (int(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^(\w+/\w+)\s+(\d+)\s+([\d.]+)%", proc.stdout, re.M)
    }
    assert set(rows) == {"general/train", "general/test", "webshop/train", "webshop/test"}
    for split, (episodes, success) in rows.items():
        assert episodes == 3, split
        assert success == 100.0, (split, proc.stdout)
    assert "ADB server on 127.0.0.1:" in proc.stdout


def test_demo_rejects_a_bad_config_cleanly() -> None:
    proc = _distrl("demo", "--set", "sim.devices=0")
    assert proc.returncode == 2
    assert "sim.devices" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_demo_rejects_a_negative_budget_before_any_work() -> None:
    proc = _distrl("demo", "--budget-s", "-5")
    assert proc.returncode == 2
    assert "--budget-s: must be >= 0" in proc.stderr
    assert "Traceback" not in proc.stderr and "== 1." not in proc.stdout


@pytest.mark.slow
def test_full_demo_runs_bootstrap_and_a_round_end_to_end(tmp_path: Path) -> None:
    """The README's main job, shrunk: showcase, SFT bootstrap, one RL round, the tables."""
    tiny = {
        "agent.sft.episodes_per_device": 2,
        "agent.sft.steps": 3,
        "agent.sft.vocab_size": 512,
        "orchestration.eval_tasks": 2,
        "orchestration.episodes_per_device": 1,
        "algorithm.actor_epochs": 1,
        "algorithm.batch_size": 2,
        "sim.port": 0,
    }
    sets = [arg for key, value in tiny.items() for arg in ("--set", f"{key}={value}")]
    proc = _distrl(
        "demo",
        "--rounds",
        "1",
        "--devices",
        "2",
        "--tasks-per-split",
        "1",
        "--budget-s",
        "600",
        "--workdir",
        str(tmp_path / "demo"),
        *sets,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "== 2. Bootstrap" in out and "SFT policy success on test" in out
    assert "round (1 rounds' episodes, at most 600 s of wall clock) of distrl" in out
    assert re.search(r"^\s+SFT\s+\S*\s*[\d.]+%", out, re.M), out[-2000:]
    assert re.search(r"^\s+1\s+[\d.]+%\s+[\d.]+%", out, re.M), out[-2000:]
    assert (tmp_path / "demo" / "runs" / "mlflow.db").is_file()
