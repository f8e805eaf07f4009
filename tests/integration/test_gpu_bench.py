"""benchmarks/gpu.py on tiny configs on the CPU: the same code that measures the GPU figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "benchmarks" / "gpu.py"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_gpu_benchmark_runs_its_tiny_configs_on_cpu() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--steps", "1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    training = [r for r in rows if "optimizer_steps_per_s" in r]
    inference = [r for r in rows if "actions_per_s" in r]
    assert {(r["model"], r.get("algorithm")) for r in training} == {
        ("autoui-tiny", "distrl"),
        ("autoui-tiny", "digirl"),
        ("qwen2.5-vl-tiny", None),
        ("vlm-policy-tiny", "score+lora-step"),
    }
    assert all(r["optimizer_steps_per_s"] > 0 and r["device"] == "cpu" for r in training)
    assert {(r["model"], r["inference_batch"]) for r in inference} == {
        (m, b) for m in ("autoui-tiny", "qwen2.5-vl-tiny", "vlm-policy-tiny") for b in (8, 32)
    }
    assert all(r["actions_per_s"] > 0 for r in inference)
    vlm = next(r for r in training if r["model"] == "qwen2.5-vl-tiny")
    assert 0 < vlm["lora_trainable_m"] * 1e6 < vlm["params_b"] * 1e9  # adapters only


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU-only host")
def test_gpu_benchmark_refuses_to_report_cuda_figures_without_cuda() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "no CUDA device" in proc.stderr
