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
