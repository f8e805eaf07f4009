"""One MLflow run: the tags that label it and the logging helpers the stages call on it.

:class:`RunHandle` writes metrics (namespaced, checked by :func:`check_metric_name`), params,
tags and artifacts into one run through the tracker's client, nests stage runs under itself and
marks itself FINISHED, FAILED or KILLED. It lives apart from :mod:`distrl_tasks.tracking.runs`,
which owns the store and experiment (:class:`~distrl_tasks.tracking.runs.Tracker`) and the
round/stage context of a process, because what happens inside a run does not depend on how the
run was found or created; the tag names are here because every run carries them, and ``runs``
imports them from here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from distrl_tasks.tracking.params import MAX_TAG_LENGTH, SecretFilter

# critic/: the critic's pre-fit and calibration; async/: the continuous learner and its actors
METRIC_NAMESPACES = ("losses", "rollout", "eval", "train", "data", "perf", "critic", "async")
KIND_TAG = "distrl.kind"  # "round" or "stage"
ROUND_TAG = "distrl.round"
STAGE_TAG = "distrl.stage"
ERROR_TAG = "distrl.error"
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag (the UI draws the tree from it)
RUN_NAME_TAG = "mlflow.runName"
_BATCH_METRICS = 1000  # MLflow's per-request limits
_BATCH_PARAMS = 100

_log = logging.getLogger(__name__)


def check_metric_name(name: str) -> str:
    """Return ``name`` if it is ``<namespace>/<rest>`` with a known namespace, else raise."""
    namespace, _, rest = name.partition("/")
    if namespace not in METRIC_NAMESPACES or not rest:
        raise ValueError(
            f"metric {name!r} is not namespaced: use one of "
            f"{', '.join(n + '/' for n in METRIC_NAMESPACES)} followed by a name"
        )
    return name


class RunOwner(Protocol):
    """What a run needs from whoever created it (:class:`~distrl_tasks.tracking.runs.Tracker`).

    Declared here so that this module never imports ``runs``: the tracker depends on run
    handles, not the other way round.
    """

    client: MlflowClient
    filter: SecretFilter

    def start_run(
        self,
        name: str,
        *,
        tags: Mapping[str, Any] | None = None,
        parent: RunHandle | None = None,
        round: int | None = None,
    ) -> RunHandle: ...


@dataclass
class RunHandle:
    """One MLflow run and the logging helpers the stages use.

    Attributes:
        tracker: the tracker (client, experiment, secret filter) the run lives in.
        run_id: MLflow run id.
        round: the round the run belongs to, when known.
    """

    tracker: RunOwner
    run_id: str
    round: int | None = None

    @property
    def client(self) -> MlflowClient:
        return self.tracker.client

    def log_metrics(
        self, metrics: Mapping[str, Any], step: int | None = None, *, prefix: str | None = None
    ) -> None:
        """Log numeric metrics at ``step`` (default 0) in one batch.

        Args:
            metrics: ``{"losses/actor": 0.3}``, or bare names together with ``prefix``.
            step: the x-axis value (e.g. the optimizer step or the round).
            prefix: a namespace put in front of every name (``"eval"`` -> ``eval/<name>``).

        Raises:
            ValueError: a name outside the known namespaces, or a non-numeric value.
        """
        stamp = int(time.time() * 1000)
        batch = []
        for name, value in metrics.items():
            key = check_metric_name(f"{prefix.rstrip('/')}/{name}" if prefix else str(name))
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"metric {key!r}: expected a number, got {value!r}") from None
            if math.isnan(number):  # MLflow stores NaN, but charts and comparisons choke on it
                raise ValueError(f"metric {key!r} is NaN")
            batch.append(Metric(key, number, stamp, int(step or 0)))
        for i in range(0, len(batch), _BATCH_METRICS):
            self.client.log_batch(self.run_id, metrics=batch[i : i + _BATCH_METRICS])

    def log_params(self, params: Any) -> dict[str, str]:
        """Log a ``Config`` or (nested) mapping as flattened params, secrets redacted.

        Returns:
            The exact ``{key: value}`` that was written.
        """
        clean = self.tracker.filter.clean(params)
        items = [Param(k, v) for k, v in clean.items()]
        for i in range(0, len(items), _BATCH_PARAMS):
            self.client.log_batch(self.run_id, params=items[i : i + _BATCH_PARAMS])
        return clean

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        """Set run tags, secrets redacted."""
        clean = self.tracker.filter.clean(dict(tags), max_length=MAX_TAG_LENGTH)
        items = [RunTag(k, v) for k, v in clean.items()]
        for i in range(0, len(items), _BATCH_PARAMS):
            self.client.log_batch(self.run_id, tags=items[i : i + _BATCH_PARAMS])

    def log_artifacts(self, directory: str | Path, artifact_path: str | None = None) -> None:
        """Upload a directory's files under ``artifact_path`` of the run.

        Raises:
            ValueError: the directory is missing or empty, or a file in it holds a secret.
        """
        path = Path(directory)
        if not path.is_dir():
            raise ValueError(f"artifact directory {str(path)!r} does not exist")
        if not any(p.is_file() for p in path.rglob("*")):
            raise ValueError(f"artifact directory {str(path)!r} holds no files")
        leaks = self.tracker.filter.files_with_secrets(path)
        if leaks:
            names = ", ".join(str(p.relative_to(path)) for p in leaks)
            raise ValueError(f"refusing to upload {str(path)!r}: secret-like content in {names}")
        self.client.log_artifacts(self.run_id, str(path), artifact_path)

    def log_dict(self, data: Mapping[str, Any], artifact_file: str) -> None:
        """Write ``data`` as pretty JSON to ``artifact_file`` (e.g. ``config/params.json``)."""
        parent, _, filename = artifact_file.rpartition("/")
        with tempfile.TemporaryDirectory(prefix="distrl-artifact-") as tmp:
            local = Path(tmp) / filename
            local.write_text(json.dumps(dict(data), indent=2, sort_keys=True, default=str) + "\n")
            leaks = self.tracker.filter.files_with_secrets(tmp)
            if leaks:
                raise ValueError(f"refusing to upload {artifact_file!r}: it holds a secret")
            self.client.log_artifact(self.run_id, str(local), parent or None)

    @contextlib.contextmanager
    def stage_run(
        self, name: str, *, params: Any = None, tags: Mapping[str, Any] | None = None
    ) -> Iterator[RunHandle]:
        """A run nested under this one, FINISHED on success and FAILED/KILLED otherwise."""
        if not name or "/" in name:
            raise ValueError(f"stage name must be a non-empty word, got {name!r}")
        child = self.tracker.start_run(
            name,
            tags={KIND_TAG: "stage", STAGE_TAG: name, **(tags or {})},
            parent=self,
            round=self.round,
        )
        if params is not None:
            child.log_params(params)
        with child._finish(end_on_success=True):
            yield child

    def end(self, status: str = "FINISHED") -> None:
        """Mark the run terminated with ``status`` (FINISHED, FAILED or KILLED)."""
        if status not in ("FINISHED", "FAILED", "KILLED"):
            raise ValueError(f"run status must be FINISHED, FAILED or KILLED, got {status!r}")
        self.client.set_terminated(self.run_id, status=status)

    def _mark_ended(self, status: str, error: str | None) -> None:
        """Record a failure without ever hiding the exception that caused it."""
        try:
            if error is not None:
                self.client.set_tag(self.run_id, ERROR_TAG, error)
            self.end(status)
        except Exception as exc:  # e.g. the store itself is unreachable
            _log.warning("could not mark run %s %s: %s", self.run_id, status, exc)

    @contextlib.contextmanager
    def _finish(self, *, end_on_success: bool) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            message = self.tracker.filter.scrub(f"{type(exc).__name__}: {exc}", max_length=1000)
            self._mark_ended("FAILED", message)
            raise
        except BaseException:  # KeyboardInterrupt, task cancelled by the scheduler
            self._mark_ended("KILLED", None)
            raise
        if end_on_success:
            self.end("FINISHED")
