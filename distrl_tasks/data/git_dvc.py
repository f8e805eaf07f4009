"""Running git and DVC for the data versioning, and the errors they end in.

git runs as an argv list (:func:`run_git`), DVC in-process through ``dvc.repo.Repo``
(:func:`open_dvc`) inside :func:`dvc_env`, which keeps DVC's analytics off, its site cache under
``.dvc/tmp`` of the repository and its hints quiet, one operation at a time per process. Every
failure becomes a :class:`VersioningError` carrying git's or DVC's own words. This is the
plumbing under :mod:`distrl_tasks.data.versioning`, kept apart so that module reads as the
versioning steps (add, push, commit, find, checkout) and this one as how a command is run; the
versioning module re-exports the two error classes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dvc.repo import Repo

_ENV_LOCK = threading.RLock()  # the DVC context edits os.environ; one at a time per process


class VersioningError(RuntimeError):
    """git or DVC could not version, push or restore the data (the message says why)."""


class RemoteUnavailableError(VersioningError):
    """The DVC remote cannot be reached, created or written."""


def run_git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git`` in ``root``; raise VersioningError with git's message when it fails."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise VersioningError(
            "git is not installed (no `git` executable on PATH); DVC versioning needs git"
        ) from None
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise VersioningError(f"git {args[0]} failed in {root}: {detail}")
    return proc


def dvc_message(exc: BaseException) -> str:
    """DVC's message plus the cause it wraps (e.g. the OS error behind an upload failure)."""
    msg = str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in msg:
        msg = f"{msg}: {cause}"
    return msg


@contextlib.contextmanager
def dvc_env(root: Path) -> Iterator[None]:
    """Keep DVC offline, quiet and inside ``root`` for the duration of one operation."""
    overrides = {"DVC_NO_ANALYTICS": "1"}
    if "DVC_SITE_CACHE_DIR" not in os.environ:
        overrides["DVC_SITE_CACHE_DIR"] = str(root / ".dvc" / "tmp" / "site-cache")
    dvc_logger = logging.getLogger("dvc")
    with _ENV_LOCK:
        saved = {key: os.environ.get(key) for key in overrides}
        level = dvc_logger.level
        os.environ.update(overrides)
        dvc_logger.setLevel(logging.WARNING)  # hide DVC's "run git add ..." hints
        try:
            yield
        finally:
            dvc_logger.setLevel(level)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextlib.contextmanager
def open_dvc(root: Path, action: str) -> Iterator[Repo]:
    """Open the DVC repo at ``root``; DVC exceptions become VersioningError('dvc <action> ...')."""
    from dvc.exceptions import DvcException  # lazy: dvc
    from dvc.repo import Repo  # lazy: dvc

    with dvc_env(root):
        try:
            with Repo(str(root)) as repo:
                yield repo
        except DvcException as exc:
            raise VersioningError(f"dvc {action} failed in {root}: {dvc_message(exc)}") from exc


def commit_paths(root: Path, paths: list[str], message: str) -> str | None:
    """Stage and commit exactly ``paths`` (other staged work is left alone); None if unchanged."""
    status = run_git(root, "status", "--porcelain", "--", *paths).stdout.strip()
    if not status:
        return None
    run_git(root, "add", "--", *paths)
    run_git(root, "commit", "-q", "-m", message, "--", *paths)
    return run_git(root, "rev-parse", "HEAD").stdout.strip()
