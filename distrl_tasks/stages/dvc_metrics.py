"""What the DVC front end (``dvc.yaml``) adds to the stages: metrics, plot data, the data hash.

- :func:`write_metrics` writes ``metrics.json`` (the newest evaluated round's success rates) and
  the per-round plot data (one CSV row per evaluated round) that ``dvc metrics`` / ``dvc plots``
  read. Both are built only from the stage manifests, so they can be rebuilt at any time.
- :func:`dvc_hash` is DVC's own hash of a directory, computed with DVC's hashing code
  (``dvc_data``) and the repository's ``.dvcignore``. Under ``dvc repro`` the separate `version`
  stage does not run (its ``dvc add`` would overlap the pipeline's outputs); the lineage tag
  ``data_version`` is then this hash of the labeled shards, which is exactly the md5 that
  ``dvc.lock`` records for them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

from distrl_tasks.config import Config
from distrl_tasks.protocol.files import atomic_write_json, atomic_write_text
from distrl_tasks.stages import common

PLOT_FIELDS = ("round", "test_success_rate", "train_success_rate", "trajectories")
_ROUND_DIR = re.compile(r"^r(\d{6})$")


def dvc_hash(path: str | os.PathLike) -> str:
    """DVC's md5 of ``path``: ``"<md5>.dir"`` for a directory, ``"<md5>"`` for a file.

    Files the enclosing DVC repository's ``.dvcignore`` excludes are left out, as ``dvc repro``
    leaves them out, so the result equals the ``md5`` that ``dvc.lock`` records for ``path``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    from dvc.exceptions import NotDvcRepoError  # lazy: dvc (the CLI imports this module)
    from dvc.fs import LocalFileSystem  # lazy: dvc
    from dvc.ignore import DvcIgnoreFilter  # lazy: dvc
    from dvc.repo import Repo  # lazy: dvc
    from dvc_data.hashfile.build import build  # lazy: dvc
    from dvc_data.hashfile.db import HashFileDB  # lazy: dvc

    target = Path(path).resolve()
    if not target.exists():
        raise FileNotFoundError(f"cannot hash {target}: it does not exist")
    fs = LocalFileSystem()
    try:
        root = Repo.find_root(str(target.parent), fs=fs)
    except NotDvcRepoError:  # not inside a DVC repository: nothing to ignore
        ignore = None
    else:
        ignore = DvcIgnoreFilter(fs, root)
    # dry_run: hashes only; the object database is never written (its path need not exist).
    odb = HashFileDB(fs, str(target.parent / ".dvc-hash-unused"))
    _, _, obj = build(odb, str(target), fs, "md5", dry_run=True, ignore=ignore)
    return str(obj.hash_info.value)


def labeled_data_version(cfg: Config, workdir: str | os.PathLike = ".") -> str:
    """DVC's hash of the labeled shards (``<data.root>/labeled``): the ``data_version`` tag.

    Raises:
        FileNotFoundError: there are no labeled shards yet (run collect and label first).
    """
    labeled = common.labeled_dir(cfg, workdir)
    if not labeled.is_dir() or not any(labeled.glob("*.parquet")):
        raise FileNotFoundError(
            f"no labeled shards in {labeled}: run `distrl collect` and `distrl label` first"
        )
    return dvc_hash(labeled)


def _collect_totals(cfg: Config, workdir: str | os.PathLike, round_: int) -> tuple[int, int, int]:
    """(trajectories, labeled, successes) of every worker's collect manifest of ``round_``."""
    totals = [0, 0, 0]
    raw = common.raw_dir(cfg, workdir)
    for path in sorted(raw.glob(f"collect-r{round_:06d}-w*.json")):
        manifest = json.loads(path.read_text())
        if manifest.get("split", "train") != "train":
            continue
        for i, key in enumerate(("trajectories", "labeled", "successes")):
            totals[i] += int(manifest.get(key, 0))
    return totals[0], totals[1], totals[2]


def round_rows(cfg: Config, workdir: str | os.PathLike = ".") -> list[dict[str, Any]]:
    """One row per round that has an evaluate manifest, oldest round first.

    ``test_success_rate`` is the evaluation's success rate on the test tasks;
    ``train_success_rate`` is the behavior policy's success rate over the round's labeled
    training episodes (all workers pooled); ``trajectories`` counts those episodes.
    """
    rows = []
    base = common.rounds_dir(workdir)
    dirs = sorted(p for p in base.iterdir() if _ROUND_DIR.match(p.name)) if base.is_dir() else []
    for path in dirs:
        round_ = int(_ROUND_DIR.match(path.name).group(1))
        evaluation = common.read_manifest(workdir, round_, "evaluate")
        if evaluation is None:
            continue
        trajectories, labeled, successes = _collect_totals(cfg, workdir, round_)
        rows.append(
            {
                "round": round_,
                "test_success_rate": float(evaluation["success_rate"]),
                "train_success_rate": successes / labeled if labeled else 0.0,
                "trajectories": trajectories,
            }
        )
    return rows


def write_metrics(
    cfg: Config,
    *,
    workdir: str | os.PathLike = ".",
    metrics_path: str | os.PathLike = "metrics.json",
    plots_path: str | os.PathLike = "plots/success_per_round.csv",
) -> dict[str, Any]:
    """Write ``metrics.json`` (newest evaluated round) and the per-round plot CSV.

    ``metrics.json`` holds ``round``, ``test_success_rate``, ``train_success_rate``,
    ``trajectories`` and, once the round is registered, ``registered_version``.

    Args:
        cfg: the configuration (``data.root`` locates the collect manifests).
        workdir: the project working directory the stages ran in.
        metrics_path: where ``metrics.json`` goes (relative to the current directory).
        plots_path: where the plot CSV (columns :data:`PLOT_FIELDS`) goes.

    Returns:
        The metrics written.

    Raises:
        FileNotFoundError: no round has been evaluated under ``workdir`` yet.
    """
    rows = round_rows(cfg, workdir)
    if not rows:
        raise FileNotFoundError(
            f"no evaluated round under {common.rounds_dir(workdir)}: run `distrl evaluate` first"
        )
    metrics: dict[str, Any] = dict(rows[-1])
    registered = common.read_manifest(workdir, metrics["round"], "register")
    if registered is not None:
        metrics["registered_version"] = int(registered["version"])
    atomic_write_json(metrics_path, metrics, sort_keys=True)
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=PLOT_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(plots_path, table.getvalue())
    return metrics
