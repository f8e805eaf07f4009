"""What every stage shares: where things live, stored manifests, and the MLflow round run.

Layout under the project's working directory (``workdir``)::

    runs/rounds/r000003/<stage>.json   manifest of each finished stage of round 3
    runs/rounds/r000003/mlflow_run_id  the round's parent MLflow run (stages nest under it)
    <data.root>/raw/                   shards as collected (oracle-labeled on the simulator)
    <data.root>/labeled/               shards after labeling: what replay reads
    runs/checkpoints/r000003/          the policy trained in round 3 (safetensors); once
                                       registered, the newest ``tracking.keep_checkpoints``
                                       rounds' are kept (the registry holds every version)
    runs/learner/checkpoints/          learner states (critics, optimizer) carried across rounds:
                                       the newest ``algorithm.keep_states`` are kept

A stage is idempotent: when its manifest exists (and says it finished), ``run`` returns it and
touches nothing. Manifests are written atomically, last, so a crash mid-stage leaves no manifest
and the stage simply runs again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from distrl_tasks.config import Config
from distrl_tasks.protocol.files import atomic_write_json, atomic_write_text


def rounds_dir(workdir: str | os.PathLike) -> Path:
    return Path(workdir) / "runs" / "rounds"


def round_dir(workdir: str | os.PathLike, round_: int) -> Path:
    return rounds_dir(workdir) / f"r{round_:06d}"


def data_root(cfg: Config, workdir: str | os.PathLike) -> Path:
    root = Path(cfg.data.root)
    return root if root.is_absolute() else Path(workdir) / root


def raw_dir(cfg: Config, workdir: str | os.PathLike) -> Path:
    return data_root(cfg, workdir) / "raw"


def labeled_dir(cfg: Config, workdir: str | os.PathLike) -> Path:
    return data_root(cfg, workdir) / "labeled"


def checkpoint_dir(workdir: str | os.PathLike, round_: int) -> Path:
    return Path(workdir) / "runs" / "checkpoints" / f"r{round_:06d}"


def prune_round_checkpoints(
    workdir: str | os.PathLike, keep: int, *, protect: Iterable[int] = ()
) -> list[int]:
    """Delete the local policies of registered rounds (``runs/checkpoints/r<round>``) but the
    ``keep`` newest rounds' and those of ``protect``; 0 keeps all.

    Only a round whose register manifest exists is a candidate: its weights are a registry
    version by then, and nothing after registration reads the local copy, while a round that
    is still training, evaluating or registering needs it. Each directory is renamed to a
    dot-name before it is removed, so a crash mid-delete leaves no half policy under a round's
    name; the next call removes what such a crash left.

    Returns:
        The rounds whose directories were deleted, oldest first.

    Raises:
        ValueError: ``keep`` is negative.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0 (0 keeps all), got {keep}")
    root = Path(workdir) / "runs" / "checkpoints"
    if keep == 0 or not root.is_dir():
        return []
    for leftover in root.glob(f".*{_PRUNING}"):
        shutil.rmtree(leftover, ignore_errors=True)
    rounds = sorted(
        int(d.name[1:]) for d in root.iterdir() if d.is_dir() and _ROUND_NAME.fullmatch(d.name)
    )
    kept = set(rounds[-keep:]) | set(protect)
    pruned = []
    for round_ in rounds:
        if round_ in kept or not (round_dir(workdir, round_) / "register.json").is_file():
            continue
        doomed = root / f".r{round_:06d}{_PRUNING}"
        checkpoint_dir(workdir, round_).rename(doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        pruned.append(round_)
    return pruned


_ROUND_NAME = re.compile(r"r\d{6,}")
_PRUNING = ".pruning"


def learner_dir(workdir: str | os.PathLike) -> Path:
    return Path(workdir) / "runs" / "learner"


def resolve(workdir: str | os.PathLike, path: str | os.PathLike) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(workdir) / p


# Manifest keys that hold paths. They are stored relative to the manifest's base directory
# (the workdir, or the directory a manifest sits in) when they lie under it, so a copied or
# moved workdir keeps working; the manifests the stages return hold absolute paths.
PATH_KEYS = ("checkpoint_dir", "dvc_file", "episode_images", "episodes_file", "shards")


def _map_paths(manifest: dict[str, Any], fn: Callable[[str], str]) -> dict[str, Any]:
    """``manifest`` with ``fn`` applied to every path its :data:`PATH_KEYS` hold."""
    out = dict(manifest)
    for key in PATH_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value:
            out[key] = fn(value)
        elif isinstance(value, list):
            out[key] = [fn(v) if isinstance(v, str) else v for v in value]
    return out


def portable_paths(manifest: dict[str, Any], base: str | os.PathLike) -> dict[str, Any]:
    """``manifest`` with its :data:`PATH_KEYS` under ``base`` written relative to it."""
    root = Path(base).resolve()

    def rel(value: str) -> str:
        path = Path(value)
        if not path.is_absolute():
            return value
        try:
            return path.resolve().relative_to(root).as_posix()
        except ValueError:  # outside the base: stays absolute
            return value

    return _map_paths(manifest, rel)


def located_paths(manifest: dict[str, Any], base: str | os.PathLike) -> dict[str, Any]:
    """Inverse of :func:`portable_paths`: relative :data:`PATH_KEYS` made absolute under
    ``base`` (as it is now, wherever the workdir was when the manifest was written)."""
    root = Path(base).resolve()
    return _map_paths(manifest, lambda v: v if Path(v).is_absolute() else str(root / v))


def read_manifest(workdir: str | os.PathLike, round_: int, stage: str) -> dict[str, Any] | None:
    path = round_dir(workdir, round_) / f"{stage}.json"
    if not path.is_file():
        return None
    return located_paths(json.loads(path.read_text()), workdir)


def write_manifest(
    workdir: str | os.PathLike, round_: int, stage: str, manifest: dict[str, Any]
) -> dict[str, Any]:
    """Store ``manifest`` atomically as the stage's record of completion (paths under
    ``workdir`` relative to it); returns it as given."""
    stored = portable_paths(manifest, workdir)
    atomic_write_json(round_dir(workdir, round_) / f"{stage}.json", stored, sort_keys=True)
    return manifest


def tracker(cfg: Config, workdir: str | os.PathLike):
    from distrl_tasks.tracking.runs import Tracker  # lazy: mlflow + pyarrow

    return Tracker.from_config(cfg, root=workdir)


def registry(cfg: Config, workdir: str | os.PathLike):
    from distrl_tasks.tracking.registry import ModelRegistry  # lazy: mlflow + pyarrow

    return ModelRegistry(tracker(cfg, workdir), cfg.tracking.model_name)


def checkout(cfg: Config, workdir: str | os.PathLike, reg: Any, version: int):
    """Registry ``version`` checked out in the project's download cache (``runs/learner/
    registry``, pruned to ``tracking.keep_downloads``): load the weights inside the block."""
    cache = learner_dir(workdir) / "registry"
    return reg.checkout(version, cache, keep=cfg.tracking.keep_downloads)


@contextlib.contextmanager
def stage_run(cfg: Config, workdir: str | os.PathLike, round_: int, stage: str) -> Iterator[Any]:
    """An MLflow run for ``stage`` nested under round ``round_``'s parent run.

    The parent is created by the first stage of the round that runs (in any process: CLI, DVC or
    an Airflow task) and its id kept in ``runs/rounds/r<round>/mlflow_run_id`` so later stages,
    even in other processes, nest under the same parent.
    """
    track = tracker(cfg, workdir)
    id_file = round_dir(workdir, round_) / "mlflow_run_id"
    run_id = id_file.read_text().strip() if id_file.is_file() else None
    if run_id is None:
        parent = track.start_run(
            f"round-{round_}",
            tags={"distrl.kind": "round", "algorithm": cfg.algorithm.name},
            round=round_,
        )
        parent.log_params(cfg)
        atomic_write_text(id_file, parent.run_id)
        run_id = parent.run_id
    with track.round_run(round_, run_id=run_id) as parent, parent.stage_run(stage) as run:
        yield run


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[int]:
    """Torch's intra-op threads set to ``threads`` (0 or None: every core this process may use)
    and restored after, so a stage's budget does not leak into whatever runs next in-process.
    Yields the count set (what a manifest or card records)."""
    import torch  # lazy: stages that never train load light

    previous = torch.get_num_threads()
    used = threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(used)
    try:
        yield used
    finally:
        torch.set_num_threads(previous)
