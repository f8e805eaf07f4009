"""MLflow runs: one parent run per training round, one nested run per stage.

Layout in the experiment (``cfg.tracking.experiment``)::

    round-3                      tags distrl.kind=round, distrl.round=3; params = flat config
    ├── collect                  tags distrl.kind=stage, distrl.stage=collect, mlflow.parentRunId
    ├── train                    metrics losses/..., train/...
    └── evaluate                 metrics eval/...

Everything goes through an explicit :class:`mlflow.MlflowClient` bound to one tracking URI, never
through MLflow's process-global "active run", so several trackers (tests, threads) cannot collide.
A relative ``sqlite:///runs/mlflow.db`` is resolved against the project root and its directory is
created; new experiments keep their artifacts under ``<root>/runs/mlartifacts``.

Metric names are namespaced (``losses/``, ``rollout/``, ``eval/``, ``train/``, ``data/``,
``perf/``); a name outside those namespaces is an error so dashboards stay predictable.

What is logged inside one run (:class:`RunHandle`, the metric-name check and the tag names above)
lives in :mod:`distrl_tasks.tracking.run_handle` and is re-exported here; this module keeps the
store and experiment (:class:`Tracker`) and the round/stage context of a process.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from distrl_tasks.tracking.params import MAX_TAG_LENGTH, SecretFilter
from distrl_tasks.tracking.run_handle import (
    ERROR_TAG,  # noqa: F401
    KIND_TAG,
    METRIC_NAMESPACES,  # noqa: F401
    PARENT_TAG,
    ROUND_TAG,
    RUN_NAME_TAG,
    STAGE_TAG,  # noqa: F401
    RunHandle,
    check_metric_name,  # noqa: F401
)

# The run handle, its tags and metric naming live in run_handle; imported back so
# `from distrl_tasks.tracking.runs import X` keeps working.
from distrl_tasks.tracking.stores import local_store_file

if TYPE_CHECKING:
    from distrl_tasks.config import Config

DEFAULT_ARTIFACT_ROOT = "runs/mlartifacts"
CONFIG_ARTIFACT = "config/params.json"

_ACTIVE_ROUND: contextvars.ContextVar[RunHandle | None] = contextvars.ContextVar(
    "distrl_active_round", default=None
)


def resolve_tracking_uri(uri: str, root: str | Path = ".") -> str:
    """Make a local tracking URI absolute (relative to ``root``) and create its directory.

    ``sqlite:///runs/mlflow.db`` -> ``sqlite:////<root>/runs/mlflow.db``; an absolute
    ``sqlite:////...`` keeps its path; a bare directory path becomes a ``file://`` store; remote
    URIs (``http://``, ``databricks``, ...) pass through unchanged.

    Raises:
        ValueError: an empty URI or an in-memory SQLite store (it would vanish per connection).
    """
    if not uri or not uri.strip():
        raise ValueError("tracking.tracking_uri: must not be empty")
    base = Path(root).resolve()
    if uri.startswith("sqlite:"):
        if not uri.startswith("sqlite:///"):
            raise ValueError(
                f"tracking.tracking_uri: {uri!r} is an in-memory or malformed SQLite URI; "
                "use sqlite:///relative/path.db or sqlite:////absolute/path.db"
            )
        path = local_store_file(uri, base)
        if path is None:
            raise ValueError(f"tracking.tracking_uri: {uri!r} names no database file")
        path.parent.mkdir(parents=True, exist_ok=True)
        _, sep, query = uri.partition("?")
        return f"sqlite:///{path}{sep}{query}"
    if "://" in uri or uri.startswith("databricks"):
        return uri
    path = Path(uri)
    path = path if path.is_absolute() else base / path
    path.mkdir(parents=True, exist_ok=True)
    return path.as_uri()


def _is_local(uri: str) -> bool:
    return uri.startswith(("sqlite:", "file:"))


class Tracker:
    """A tracking store plus experiment, and the secret filter applied to all it writes.

    Args:
        tracking_uri: MLflow tracking (and registry) URI; relative SQLite paths are under ``root``.
        experiment: experiment name, created on first use.
        root: project working directory that relative paths are resolved against.
        artifact_root: where a new experiment stores artifacts (relative to ``root`` unless it
            is a URI); ignored for remote tracking servers, which choose their own.
        secret_filter: the filter for params and tags (default: one reading ``os.environ``).
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment: str,
        *,
        root: str | Path = ".",
        artifact_root: str = DEFAULT_ARTIFACT_ROOT,
        secret_filter: SecretFilter | None = None,
    ) -> None:
        if not experiment:
            raise ValueError("tracking.experiment: must not be empty")
        self.root = Path(root).resolve()
        self.tracking_uri = resolve_tracking_uri(tracking_uri, self.root)
        self.experiment_name = experiment
        self.filter = secret_filter or SecretFilter()
        self.client = MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.tracking_uri)
        self._artifact_location = self._artifact_location_for(artifact_root)
        self._experiment_id: str | None = None

    @classmethod
    def from_config(
        cls,
        cfg: Config,
        *,
        root: str | Path = ".",
        artifact_root: str | None = None,
        secret_filter: SecretFilter | None = None,
    ) -> Tracker:
        """The tracker ``cfg.tracking`` describes (``artifact_root`` overrides the config's)."""
        return cls(
            cfg.tracking.tracking_uri,
            cfg.tracking.experiment,
            root=root,
            artifact_root=artifact_root or cfg.tracking.artifact_root,
            secret_filter=secret_filter,
        )

    def _artifact_location_for(self, artifact_root: str) -> str | None:
        if "://" in artifact_root:
            return artifact_root
        if not _is_local(self.tracking_uri):
            return None
        path = Path(artifact_root)
        path = path if path.is_absolute() else self.root / path
        path.mkdir(parents=True, exist_ok=True)
        return path.as_uri()

    @property
    def experiment_id(self) -> str:
        """Id of the experiment, created (with the artifact location) if it does not exist."""
        if self._experiment_id is not None:
            return self._experiment_id
        found = self.client.get_experiment_by_name(self.experiment_name)
        if found is None:
            try:
                self._experiment_id = self.client.create_experiment(
                    self.experiment_name, artifact_location=self._artifact_location
                )
                return self._experiment_id
            except MlflowException as exc:  # another process created it first
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                found = self.client.get_experiment_by_name(self.experiment_name)
        if found is None or found.lifecycle_stage == "deleted":
            raise ValueError(
                f"tracking.experiment: experiment {self.experiment_name!r} is deleted; "
                "restore it in MLflow or choose another name"
            )
        self._experiment_id = found.experiment_id
        return self._experiment_id

    def start_run(
        self,
        name: str,
        *,
        tags: Mapping[str, Any] | None = None,
        parent: RunHandle | None = None,
        round: int | None = None,
    ) -> RunHandle:
        """Create a run (nested under ``parent`` when given) and return its handle."""
        all_tags = dict(self.filter.clean(dict(tags or {}), max_length=MAX_TAG_LENGTH))
        all_tags[RUN_NAME_TAG] = name
        if parent is not None:
            all_tags[PARENT_TAG] = parent.run_id
        if round is not None:
            all_tags[ROUND_TAG] = str(round)
        run = self.client.create_run(self.experiment_id, tags=all_tags, run_name=name)
        return RunHandle(self, run.info.run_id, round)

    def resume(self, run_id: str) -> RunHandle:
        """Handle on an existing run of this experiment (e.g. a round opened by another process)."""
        try:
            run = self.client.get_run(run_id)
        except MlflowException as exc:
            raise ValueError(f"run {run_id!r} does not exist in {self.tracking_uri}") from exc
        if run.info.experiment_id != self.experiment_id:
            raise ValueError(
                f"run {run_id!r} belongs to experiment {run.info.experiment_id}, "
                f"not {self.experiment_name!r}"
            )
        round_tag = run.data.tags.get(ROUND_TAG)
        return RunHandle(self, run_id, int(round_tag) if round_tag is not None else None)

    def child_runs(self, parent_run_id: str) -> list[Any]:
        """Runs nested directly under ``parent_run_id``, oldest first."""
        return self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{PARENT_TAG}` = '{parent_run_id}'",
            order_by=["attributes.start_time ASC"],
        )

    @contextlib.contextmanager
    def round_run(
        self,
        round: int,
        *,
        params: Any = None,
        tags: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> Iterator[RunHandle]:
        """Parent run of one round; stages nest under it via :meth:`RunHandle.stage_run`.

        Args:
            round: the round number (tag ``distrl.round``).
            params: a ``Config`` or (nested) mapping logged as flattened, filtered params and as
                the artifact ``config/params.json``.
            tags: extra tags (filtered).
            run_id: reattach to a round run created earlier (another Airflow task); it is then
                left in its state on success and only marked FAILED on error.
        """
        if isinstance(round, bool) or not isinstance(round, int) or round < 0:
            raise ValueError(f"round must be a non-negative integer, got {round!r}")
        if run_id is None:
            handle = self.start_run(
                f"round-{round}", tags={KIND_TAG: "round", **(tags or {})}, round=round
            )
            if params is not None:
                handle.log_params(params)
                handle.log_dict(self.filter.clean(params), CONFIG_ARTIFACT)
        else:
            handle = self.resume(run_id)
            if handle.round != round:
                raise ValueError(f"run {run_id!r} is round {handle.round}, not round {round}")
            if tags:
                handle.set_tags(tags)
        token = _ACTIVE_ROUND.set(handle)
        try:
            with handle._finish(end_on_success=run_id is None):
                yield handle
        finally:
            _ACTIVE_ROUND.reset(token)


@contextlib.contextmanager
def round_run(
    cfg: Config,
    round: int,
    *,
    root: str | Path = ".",
    run_id: str | None = None,
    tags: Mapping[str, Any] | None = None,
    tracker: Tracker | None = None,
) -> Iterator[RunHandle]:
    """Parent run of one round, with the flattened (secret-free) config as its params.

    Tags ``algorithm`` and ``mode`` come from the config. Inside the block, the module-level
    :func:`stage_run` nests stage runs under this round.

    Args:
        cfg: the run's configuration.
        round: round number.
        root: project working directory (relative tracking paths resolve against it).
        run_id: reattach to an already created round run instead of creating one.
        tags: extra tags.
        tracker: reuse an existing tracker (default: one built from ``cfg.tracking``).
    """
    tracker = tracker or Tracker.from_config(cfg, root=root)
    base_tags = {"algorithm": cfg.algorithm.name, "mode": cfg.algorithm.mode, **(tags or {})}
    with tracker.round_run(round, params=cfg, tags=base_tags, run_id=run_id) as handle:
        yield handle


@contextlib.contextmanager
def stage_run(
    name: str, *, params: Any = None, tags: Mapping[str, Any] | None = None
) -> Iterator[RunHandle]:
    """A stage run nested under the innermost active :func:`round_run` of this context.

    Raises:
        RuntimeError: no round run is active.
    """
    parent = _ACTIVE_ROUND.get()
    if parent is None:
        raise RuntimeError(f"stage_run({name!r}) must be used inside round_run(...)")
    with parent.stage_run(name, params=params, tags=tags) as child:
        yield child


def active_round() -> RunHandle | None:
    """The innermost active round run of this context, if any."""
    return _ACTIVE_ROUND.get()
