"""MLflow tracking (nested round/stage runs) and the policy model registry.

Importing this package switches MLflow's telemetry and artifact progress bars off unless the
environment already decides otherwise: training must not phone home, and progress bars only
clutter Airflow logs. MLflow itself is imported lazily, on first use of a runs/registry name,
so the secret filter in :mod:`distrl_tasks.tracking.params` stays cheap to import.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from distrl_tasks.tracking.params import REDACTED, SecretFilter, is_secret_key

_LAZY = {
    "RunHandle": "runs",
    "Tracker": "runs",
    "round_run": "runs",
    "stage_run": "runs",
    "BEHAVIOR": "registry",
    "CHAMPION": "registry",
    "ModelRegistry": "registry",
    "Promotion": "registry",
    "VersionInfo": "registry",
    "eval_tasks_key": "registry",
    "format_compare_table": "registry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'distrl_tasks.tracking' has no attribute {name!r}")
    return getattr(importlib.import_module(f"distrl_tasks.tracking.{module}"), name)


__all__ = ["REDACTED", "SecretFilter", "is_secret_key", *_LAZY]
