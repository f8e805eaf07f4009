"""The learning benchmark (Table 1 on the simulator): DistRL, GRPO, GiGPO (asynchronous) vs DigiRL
and Filtered BC (synchronous), same SFT policy, devices and wall-clock budget; 3 seeds.

Usage::

    .venv/bin/python benchmarks/learning.py              # the full preset (~9 h; docs/running.md)
    .venv/bin/python benchmarks/learning.py --smoke      # tiny settings: checks the machinery
    .venv/bin/python benchmarks/learning.py --budget-s 300 --seeds 1 --task-sets general

Same flags as ``distrl bench learning``; the logic lives in :mod:`distrl_tasks.bench.learning`.
Run it from the repository root (relative paths and ``./params.yaml`` are taken from there).
Writes the table and plots into ``benchmarks/RESULTS.md`` and ``benchmarks/plots/`` (unless
``--no-results``) and everything into MLflow under ``--workdir``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from distrl_tasks.cli.bench import main

if __name__ == "__main__":
    sys.exit(main())
