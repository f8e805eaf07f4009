"""The local directory of downloaded registry versions: readers share it, old versions leave it.

Every collection, training start and evaluation downloads the version it runs into
``runs/learner/registry/v<N>`` (whole, through a rename), and reuses it when it is there. Left
alone the directory grows by one checkpoint per round: an Auto-UI-Base checkpoint is about a
gigabyte. :func:`prune` removes all but the newest versions, and an advisory lock per version is
the reader count that makes this safe while other processes load from the directory:

- a reader holds a *shared* ``flock`` on ``.v<N>.lock`` from before it looks for ``v<N>`` until it
  has loaded the weights (:func:`reading`);
- the pruner takes an *exclusive*, non-blocking lock on the same file and skips the version when a
  reader holds it; otherwise it renames the directory away and deletes it under that lock.

A reader that comes after the prune finds no ``v<N>`` and downloads it again. Lock files stay:
removing one while a reader waits on it would let the next pruner lock a different file. Locks
are per open file, so threads of one process exclude each other too. POSIX only (``fcntl``), as
Airflow is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from collections.abc import Collection, Iterator
from pathlib import Path

_VERSION_DIR = re.compile(r"v(\d+)")
_TRASH_PREFIX = ".trash-"


def _lock_path(dest: Path, version: int) -> Path:
    return dest / f".v{version}.lock"


@contextlib.contextmanager
def _locked(dest: Path, version: int, mode: int) -> Iterator[bool]:
    """Open the version's lock file and try ``flock(mode)``; yields whether it was taken."""
    fd = os.open(_lock_path(dest, version), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases its lock


@contextlib.contextmanager
def reading(dest: str | os.PathLike, version: int) -> Iterator[None]:
    """Hold version ``version`` of the cache ``dest`` against :func:`prune` for the block.

    Take it before checking for or downloading ``dest/v<version>`` and keep it until the files are
    loaded. Blocks only while a pruner is deleting that version.
    """
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, version, fcntl.LOCK_SH):
        yield


def cached_versions(dest: str | os.PathLike) -> list[int]:
    """The versions downloaded whole into ``dest``, oldest first."""
    root = Path(dest)
    if not root.is_dir():
        return []
    found = (_VERSION_DIR.fullmatch(d.name) for d in root.iterdir() if d.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def prune(dest: str | os.PathLike, keep: int, protect: Collection[int] = ()) -> list[int]:
    """Delete the downloaded versions older than the ``keep`` newest that no reader holds.

    Args:
        dest: the download directory.
        keep: newest versions kept (0 keeps every version).
        protect: versions kept whatever their age (the ones the registry's aliases point at,
            which the next round reads again).

    Returns:
        The versions deleted, oldest first.

    Raises:
        ValueError: ``keep`` is negative.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0 (0 keeps every version), got {keep}")
    root = Path(dest)
    versions = cached_versions(root)
    if keep == 0 or len(versions) <= keep:
        return []
    removed = []
    for version in versions[:-keep]:
        if version in protect:
            continue
        with _locked(root, version, fcntl.LOCK_EX | fcntl.LOCK_NB) as taken:
            if not taken:  # a reader is loading it: the next prune tries again
                continue
            src = root / f"v{version}"
            if not src.is_dir():  # another pruner got there first
                continue
            trash = root / f"{_TRASH_PREFIX}v{version}-{uuid.uuid4().hex}"
            os.replace(src, trash)  # atomic: readers see the whole version or none
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(version)
    for left in root.glob(f"{_TRASH_PREFIX}*"):  # a pruner killed mid-delete
        shutil.rmtree(left, ignore_errors=True)
    return removed
