"""Files that are either whole or absent: atomic writes, directory swaps, strict JSON reads.

Every record the pipeline keeps (stage manifests, shard manifests, checkpoints, caches, metrics)
goes through these, so a crash or a ``kill -9`` leaves the old version or the new one, never a
half-written file, and a reader of a malformed file gets an error that names it.

Temporary names carry :data:`TEMP_MARKER` so scanners (the shard store, DVC's ignore list) can
tell a write in progress from a finished file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TEMP_MARKER = ".tmp-"


def temp_name(path: Path) -> Path:
    """A hidden sibling of ``path`` for a write in progress, unique per call."""
    return path.with_name(f".{path.name}{TEMP_MARKER}{uuid.uuid4().hex[:8]}")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, payload: bytes, *, mode: int | None = None) -> None:
    """Write ``payload`` so that ``path`` is either absent/old or complete, never partial.

    The parent directory is created. ``mode`` (e.g. ``0o600`` for secrets) is set when the
    temporary file is created, so the content is never readable with looser permissions.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


def atomic_write_text(path: str | os.PathLike, text: str, *, mode: int | None = None) -> None:
    """:func:`atomic_write` for UTF-8 text."""
    atomic_write(path, text.encode("utf-8"), mode=mode)


def atomic_write_json(
    path: str | os.PathLike, data: Any, *, sort_keys: bool = False, indent: int = 2
) -> None:
    """:func:`atomic_write` of ``data`` as indented JSON with a final newline.

    Values JSON cannot spell (paths, numpy scalars) are written as their ``str``.
    """
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, default=str, ensure_ascii=False)
    atomic_write_text(path, text + "\n")


def atomic_copy(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy ``src`` to ``dst`` through a temporary sibling and a rename."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(dst)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        if tmp.exists():
            tmp.unlink()


def publish_dir(tmp: Path, final: Path) -> None:
    """Move a finished temporary directory to ``final``, replacing an older one of that name.

    ``os.replace`` cannot replace a non-empty directory, so an existing one is first renamed
    aside; a reader may briefly see no directory of that name, never a partial one.
    """
    aside = None
    if final.exists():
        aside = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, aside)
    os.replace(tmp, final)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def atomic_directory(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary directory that becomes ``final`` when the block succeeds.

    Use it for multi-file artifacts (checkpoints): write everything into the yielded path; on
    an exception the temporary directory is removed and ``final`` is left as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}{TEMP_MARKER}{uuid.uuid4().hex[:8]}")
    try:
        tmp.mkdir()
        yield tmp
        publish_dir(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_json_object(
    path: str | os.PathLike, error: type[Exception] = ValueError, *, what: str = "file"
) -> dict[str, Any]:
    """Read a JSON object from ``path``, raising ``error`` with the path when it cannot.

    Args:
        path: the file to read.
        error: the exception type to raise (callers pass their module's error class).
        what: how a missing file is described ("checkpoint file", "config").

    Raises:
        error: the file is missing, is not valid JSON, or holds something other than an object.
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} missing: {path}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data
