"""The MLflow model registry of trained policies, with ``behavior`` and ``champion`` aliases.

Each trained checkpoint directory (safetensors + json from ``AutoUIPolicy.save``) is uploaded as
plain files to a run's artifacts and registered as a version of ``cfg.tracking.model_name`` whose
source is that artifact directory; nothing is pickled. Versions carry the tags ``round``,
``algorithm``, ``policy_version``, ``data_version`` (the DVC hash of the training data),
``eval_success_rate`` and ``eval_tasks`` (a key of the evaluated task list).

Aliases:

* ``behavior`` — the policy the actors run; moved by the learner with :meth:`set_behavior`.
* ``champion`` — the best evaluated policy; :meth:`promote_if_better` moves it only when the
  challenger's success rate is strictly higher than the champion's on the *same* task list.
  Every evaluation is also kept as a tag ``eval_success_rate.<tasks key>``, so a champion
  evaluated on several task lists can be compared on each.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mlflow.artifacts
from mlflow.exceptions import MlflowException

from distrl_tasks.tracking import download_cache
from distrl_tasks.tracking.runs import KIND_TAG, STAGE_TAG, Tracker
from distrl_tasks.tracking.versions import (
    EVAL_TASKS_TAG,
    SCORE_TAG_PREFIX,
    STEPS_TAG,
    VersionInfo,
    check_rate,
    check_tasks_key,
)

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from distrl_tasks.config import Config

BEHAVIOR = "behavior"
CHAMPION = "champion"
DEFAULT_MODEL_NAME = "distrl-policy"
PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".bin", ".ckpt", ".joblib")  # torch/HF pickles


@dataclass(frozen=True)
class Promotion:
    """Outcome of :meth:`ModelRegistry.promote_if_better`.

    Attributes:
        promoted: whether ``champion`` moved to the challenger.
        champion: the champion version after the call.
        previous: the champion version before the call (None if there was none).
        reason: one line explaining the decision.
    """

    promoted: bool
    champion: int | None
    previous: int | None
    reason: str


class ModelRegistry:
    """Registered versions of one policy model and its aliases.

    Args:
        tracker: tracking store and experiment (runs for the checkpoint artifacts live there).
        model_name: registered model name.
    """

    def __init__(self, tracker: Tracker, model_name: str = DEFAULT_MODEL_NAME) -> None:
        if not model_name or "'" in model_name:
            raise ValueError(f"tracking.model_name: invalid registered model name {model_name!r}")
        self.tracker = tracker
        self.model_name = model_name
        self._model_ready = False

    @classmethod
    def from_config(
        cls, cfg: Config, *, root: str | Path = ".", tracker: Tracker | None = None
    ) -> ModelRegistry:
        """The registry ``cfg.tracking`` describes."""
        return cls(tracker or Tracker.from_config(cfg, root=root), cfg.tracking.model_name)

    @property
    def client(self) -> Any:
        return self.tracker.client

    def _ensure_model(self) -> None:
        if self._model_ready:
            return
        try:
            self.client.create_registered_model(
                self.model_name, description="Android device-control policy (AutoUI format)"
            )
        except MlflowException as exc:  # exists already (this or another process made it)
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        self._model_ready = True

    def register_checkpoint(
        self,
        checkpoint_dir: str | Path,
        *,
        round: int,
        algorithm: str,
        policy_version: int,
        data_version: str,
        eval_success_rate: float | None = None,
        eval_tasks_key: str | None = None,
        steps: int | None = None,
        run_id: str | None = None,
        artifact_path: str = "checkpoint",
        tags: Mapping[str, Any] | None = None,
    ) -> int:
        """Upload a checkpoint directory and register it as a new version.

        Args:
            checkpoint_dir: local directory of plain files (safetensors, json, tokenizer).
            round: training round that produced it.
            algorithm: ``distrl``, ``digirl`` or ``filtered_bc``.
            policy_version: the learner's policy version counter.
            data_version: DVC hash of the data it was trained on ("" when unversioned).
            eval_success_rate: success rate on ``eval_tasks_key``'s tasks, if already evaluated.
            eval_tasks_key: identifier of the evaluated task list (see :func:`eval_tasks_key`).
            steps: optimizer steps taken so far.
            run_id: run to attach the artifacts to (e.g. the ``register`` stage run); default: a
                new run named ``register-v<policy_version>`` in the experiment.
            artifact_path: directory name of the checkpoint inside the run's artifacts.
            tags: extra version tags (secrets filtered).

        Returns:
            The new version number.

        Raises:
            ValueError: a missing/empty directory, pickle files in it, the run already holding a
                checkpoint at ``artifact_path``, or an invalid tag value.
        """
        path = Path(checkpoint_dir)
        if not path.is_dir():
            raise ValueError(f"checkpoint directory {str(path)!r} does not exist")
        files = [p for p in path.rglob("*") if p.is_file()]
        if not files:
            raise ValueError(f"checkpoint directory {str(path)!r} holds no files")
        pickles = [p.name for p in files if p.suffix.lower() in PICKLE_SUFFIXES]
        if pickles:
            raise ValueError(
                f"checkpoint {str(path)!r} contains pickle files {pickles}; save weights as "
                "safetensors (AutoUIPolicy.save) instead"
            )
        if isinstance(round, bool) or not isinstance(round, int) or round < 0:
            raise ValueError(f"round must be a non-negative integer, got {round!r}")
        if isinstance(policy_version, bool) or not isinstance(policy_version, int):
            raise ValueError(f"policy_version must be an integer, got {policy_version!r}")
        if not algorithm:
            raise ValueError("algorithm must not be empty")
        if not isinstance(data_version, str):
            raise ValueError(f"data_version must be a string (DVC hash), got {data_version!r}")
        version_tags: dict[str, Any] = {
            **(tags or {}),
            "round": round,
            "algorithm": algorithm,
            "policy_version": policy_version,
            "data_version": data_version,
            "eval_success_rate": "",
        }
        if eval_success_rate is not None:
            key = check_tasks_key(eval_tasks_key or "")
            rate = check_rate(eval_success_rate)
            version_tags.update(
                {"eval_success_rate": repr(rate), EVAL_TASKS_TAG: key, SCORE_TAG_PREFIX + key: rate}
            )
        if steps is not None:
            version_tags[STEPS_TAG] = int(steps)

        if run_id is None:
            handle = self.tracker.start_run(
                f"register-v{policy_version}",
                tags={KIND_TAG: "stage", STAGE_TAG: "register"},
                round=round,
            )
        else:
            handle = self.tracker.resume(run_id)
        if self.client.list_artifacts(handle.run_id, artifact_path):
            raise ValueError(
                f"run {handle.run_id} already holds artifacts at {artifact_path!r}; pass another "
                "artifact_path or run"
            )
        handle.log_artifacts(path, artifact_path)
        if run_id is None:
            handle.end("FINISHED")
        source = f"{self.client.get_run(handle.run_id).info.artifact_uri}/{artifact_path}"
        self._ensure_model()
        clean_tags = self.tracker.filter.clean(version_tags)
        mv = self.client.create_model_version(
            self.model_name, source, run_id=handle.run_id, tags=clean_tags
        )
        return int(mv.version)

    def _info(self, mv: ModelVersion, aliases: Mapping[str, int]) -> VersionInfo:
        version = int(mv.version)
        return VersionInfo(
            version=version,
            run_id=mv.run_id or "",
            source=mv.source,
            tags=dict(mv.tags),
            aliases=tuple(sorted(a for a, v in aliases.items() if int(v) == version)),
        )

    def _aliases(self) -> dict[str, int]:
        try:
            model = self.client.get_registered_model(self.model_name)
        except MlflowException as exc:
            if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                return {}
            raise
        return {alias: int(v) for alias, v in model.aliases.items()}

    def get_version(self, version: int) -> VersionInfo:
        """One version's info.

        Raises:
            ValueError: no such version.
        """
        try:
            mv = self.client.get_model_version(self.model_name, str(int(version)))
        except MlflowException as exc:
            raise ValueError(f"{self.model_name} has no version {version!r}") from exc
        return self._info(mv, self._aliases())

    def alias_version(self, alias: str) -> VersionInfo | None:
        """The version ``alias`` points at, or None when the alias is not set."""
        target = self._aliases().get(alias)
        return None if target is None else self.get_version(target)

    def set_alias(self, alias: str, version: int) -> None:
        """Point ``alias`` at ``version`` (which must exist)."""
        self.get_version(version)
        self.client.set_registered_model_alias(self.model_name, alias, str(int(version)))

    def set_behavior(self, version: int) -> None:
        """Make ``version`` the policy the actors run."""
        self.set_alias(BEHAVIOR, version)

    def record_eval(self, version: int, eval_success_rate: float, eval_tasks_key: str) -> None:
        """Store an evaluation of ``version`` on the task list ``eval_tasks_key``."""
        key = check_tasks_key(eval_tasks_key)
        rate = repr(check_rate(eval_success_rate))
        self.get_version(version)
        for tag, value in (
            ("eval_success_rate", rate),
            (EVAL_TASKS_TAG, key),
            (SCORE_TAG_PREFIX + key, rate),
        ):
            self.client.set_model_version_tag(self.model_name, str(int(version)), tag, value)

    def promote_if_better(
        self, version: int, eval_success_rate: float, eval_tasks_key: str
    ) -> Promotion:
        """Record the evaluation, then move ``champion`` to ``version`` if it strictly wins.

        The champion is compared only by its score on the same task list; if it was never
        evaluated on that list, nothing moves (evaluate it there and call again). Ties keep the
        incumbent.
        """
        self.record_eval(version, eval_success_rate, eval_tasks_key)
        rate = check_rate(eval_success_rate)
        version = int(version)
        champion = self.alias_version(CHAMPION)
        if champion is None:
            self.set_alias(CHAMPION, version)
            return Promotion(True, version, None, "no champion yet")
        if champion.version == version:
            return Promotion(False, version, version, "already the champion")
        incumbent = champion.score_on(eval_tasks_key)
        if incumbent is None:
            return Promotion(
                False,
                champion.version,
                champion.version,
                f"champion v{champion.version} was never evaluated on tasks {eval_tasks_key}",
            )
        if rate > incumbent:
            self.set_alias(CHAMPION, version)
            return Promotion(True, version, champion.version, f"{rate:.4f} beats {incumbent:.4f}")
        return Promotion(
            False,
            champion.version,
            champion.version,
            f"{rate:.4f} does not beat champion v{champion.version} ({incumbent:.4f})",
        )

    def download_version(self, version: int, dest_dir: str | Path) -> Path:
        """Download a version's checkpoint files to ``dest_dir/v<version>`` and return that path.

        Versions are immutable, so an existing ``v<version>`` directory (always written whole,
        via a temporary directory and a rename) is reused without downloading again.
        """
        info = self.get_version(version)
        dest = Path(dest_dir)
        final = dest / f"v{info.version}"
        if final.is_dir():
            return final
        dest.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".v{info.version}-", dir=dest))
        try:
            local = mlflow.artifacts.download_artifacts(
                artifact_uri=info.source, dst_path=str(tmp), tracking_uri=self.tracker.tracking_uri
            )
            try:
                os.replace(local, final)
            except OSError:  # another process finished the same download first
                if not final.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final

    @contextlib.contextmanager
    def checkout(self, version: int, dest_dir: str | Path, keep: int = 0) -> Iterator[Path]:
        """Download (or reuse) a version into ``dest_dir`` and hold it there for the block.

        Load the weights inside the block: while it runs no :func:`download_cache.prune` deletes
        the version. Afterwards the cache keeps the ``keep`` newest versions plus those the
        registry's aliases point at, deleting older ones no other reader holds.

        Args:
            version: the registry version.
            dest_dir: the download directory (``runs/learner/registry``).
            keep: newest downloaded versions kept (``tracking.keep_downloads``; 0 keeps all).
        """
        with download_cache.reading(dest_dir, version):
            path = self.download_version(version, dest_dir)
            if keep:
                protect = {version, *self._aliases().values()}
                download_cache.prune(dest_dir, keep, protect=protect)
            yield path

    def load_by_alias(self, alias: str, dest_dir: str | Path) -> Path:
        """Download the checkpoint ``alias`` points at; returns the local directory.

        Raises:
            ValueError: the alias is not set.
        """
        info = self.alias_version(alias)
        if info is None:
            raise ValueError(f"{self.model_name} has no alias {alias!r} (set_behavior first?)")
        return self.download_version(info.version, dest_dir)

    def compare_versions(self) -> list[VersionInfo]:
        """All versions, oldest first, with their tags and aliases."""
        aliases = self._aliases()
        if not aliases and not self._exists():
            return []
        found = self.client.search_model_versions(f"name='{self.model_name}'")
        rows = [self._info(mv, aliases) for mv in found]
        return sorted(rows, key=lambda r: r.version)

    def _exists(self) -> bool:
        try:
            self.client.get_registered_model(self.model_name)
        except MlflowException:
            return False
        return True
