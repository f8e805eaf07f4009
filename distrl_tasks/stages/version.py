"""The version stage: DVC-version the trajectory data and return its hash (for lineage).

The whole ``data.root`` (raw and labeled shards of every round) is one DVC-tracked directory;
its hash is the ``data_version`` tag of every checkpoint trained on it. The default remote is a
local directory (``data.dvc_remote``). Commits in the project's git repository touch only the
``.dvc`` file and ``.gitignore``; when no git identity is configured, a pipeline identity is used
for those commits so a fresh machine works out of the box.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from distrl_tasks.config import Config
from distrl_tasks.stages import common

PIPELINE_IDENTITY = {
    "GIT_AUTHOR_NAME": "distrl pipeline",
    "GIT_AUTHOR_EMAIL": "distrl-pipeline@localhost",
    "GIT_COMMITTER_NAME": "distrl pipeline",
    "GIT_COMMITTER_EMAIL": "distrl-pipeline@localhost",
}


def _has_git_identity(workdir: Path) -> bool:
    if os.environ.get("GIT_AUTHOR_EMAIL") and os.environ.get("GIT_COMMITTER_EMAIL"):
        return True
    probe = subprocess.run(
        ["git", "config", "user.email"], cwd=workdir, capture_output=True, text=True, check=False
    )
    return probe.returncode == 0 and bool(probe.stdout.strip())


def run(cfg: Config, *, round: int, workdir: str | os.PathLike = ".") -> dict[str, Any]:
    """Version ``data.root`` with DVC; returns ``{"data_version": hash, ...}``."""
    from distrl_tasks.data.versioning import (
        ensure_repo,
        version_directory,
    )  # lazy: pyarrow + pandas

    done = common.read_manifest(workdir, round, "version")
    if done is not None:
        return {**done, "reused": True}
    root = Path(workdir).resolve()
    data = common.data_root(cfg, root)
    if not data.is_dir():
        raise FileNotFoundError(f"no trajectory data at {data}: run collect and label first")
    remote = common.resolve(root, cfg.data.dvc_remote)
    saved = {k: os.environ.get(k) for k in PIPELINE_IDENTITY}
    if not _has_git_identity(root):
        os.environ.update(PIPELINE_IDENTITY)
    try:
        with common.stage_run(cfg, root, round, "version") as run_:
            ensure_repo(root, str(remote))
            version = version_directory(root, data, message=f"data of round {round}", push=True)
            run_.set_tags({"data_version": version.hash})
            run_.log_metrics({"data/files": version.files, "data/bytes": version.bytes}, step=round)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    manifest = {
        "round": round,
        "data_version": version.hash,
        "dvc_file": str(version.dvc_file),
        "git_commit": version.git_commit,
        "files": version.files,
        "bytes": version.bytes,
        "reused": False,
    }
    return common.write_manifest(root, round, "version", manifest)
