"""A small in-memory POSIX-like filesystem: one per simulated device, for push/pull and dumps.

Paths are absolute after normalization (relative paths are taken from ``/``). ``/sdcard`` is an
alias of ``/storage/emulated/0`` as on Android. ``/dev/null`` swallows writes and reads empty.
The total size is capped so a misbehaving client cannot grow a device without bound.
"""

from __future__ import annotations

import posixpath
import stat
import time
from dataclasses import dataclass

SDCARD = "/storage/emulated/0"
DEFAULT_DIRS = (
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/dev",
    "/storage",
    "/storage/emulated",
    SDCARD,
    SDCARD + "/Download",
    SDCARD + "/Pictures",
    "/system",
    "/system/bin",
)
DEV_NULL = "/dev/null"


class FsError(OSError):
    """A filesystem operation failed; ``str()`` is the message a shell tool would print."""


@dataclass
class FileEntry:
    """A regular file: content, permission bits and modification time (epoch seconds)."""

    data: bytes
    mode: int = 0o644
    mtime: int = 0


@dataclass(frozen=True)
class StatResult:
    """What ``stat`` reports: full st_mode (type bits included), size and mtime."""

    mode: int
    size: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


class VirtualFS:
    """Files and directories of one device, kept in dictionaries."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.files: dict[str, FileEntry] = {}
        self.dirs: dict[str, int] = {}  # directory -> mtime
        now = int(time.time())
        for d in DEFAULT_DIRS:
            self.dirs[d] = now

    @staticmethod
    def normalize(path: str) -> str:
        """Absolute, normalized path with the ``/sdcard`` alias resolved."""
        if not path:
            raise FsError("empty path")
        p = posixpath.normpath(posixpath.join("/", path))
        if p.startswith("//"):
            p = "/" + p.lstrip("/")
        if p == "/sdcard" or p.startswith("/sdcard/"):
            p = SDCARD + p[len("/sdcard") :]
        return p

    @property
    def used_bytes(self) -> int:
        return sum(len(f.data) for f in self.files.values())

    def exists(self, path: str) -> bool:
        p = self.normalize(path)
        return p in self.files or p in self.dirs or p == DEV_NULL

    def is_dir(self, path: str) -> bool:
        return self.normalize(path) in self.dirs

    def stat(self, path: str) -> StatResult | None:
        """Stat of ``path`` or None when it does not exist."""
        p = self.normalize(path)
        if p == DEV_NULL:
            return StatResult(stat.S_IFCHR | 0o666, 0, 0)
        if p in self.dirs:
            return StatResult(stat.S_IFDIR | 0o771, 4096, self.dirs[p])
        f = self.files.get(p)
        if f is None:
            return None
        return StatResult(stat.S_IFREG | (f.mode & 0o7777), len(f.data), f.mtime)

    def read(self, path: str) -> bytes:
        p = self.normalize(path)
        if p == DEV_NULL:
            return b""
        if p in self.dirs:
            raise FsError(f"{path}: Is a directory")
        f = self.files.get(p)
        if f is None:
            raise FsError(f"{path}: No such file or directory")
        return f.data

    def write(
        self,
        path: str,
        data: bytes,
        *,
        append: bool = False,
        mode: int = 0o644,
        mtime: int | None = None,
    ) -> None:
        """Create or replace (or append to) a file; its parent directory must exist."""
        p = self.normalize(path)
        if p == DEV_NULL:
            return
        if p in self.dirs:
            raise FsError(f"{path}: Is a directory")
        parent = posixpath.dirname(p)
        if parent not in self.dirs:
            raise FsError(f"{path}: No such file or directory")
        old = self.files.get(p)
        new = (old.data + data) if (append and old is not None) else data
        grow = len(new) - (len(old.data) if old is not None else 0)
        if self.used_bytes + grow > self.max_bytes:
            raise FsError(f"{path}: No space left on device")
        stamp = int(time.time()) if mtime is None else mtime
        self.files[p] = FileEntry(new, mode & 0o7777, stamp)

    def mkdir(self, path: str, *, parents: bool = False) -> None:
        p = self.normalize(path)
        if p in self.dirs:
            if parents:
                return
            raise FsError(f"{path}: File exists")
        if p in self.files:
            raise FsError(f"{path}: File exists")
        parent = posixpath.dirname(p)
        if parent not in self.dirs:
            if not parents:
                raise FsError(f"{path}: No such file or directory")
            self.mkdir(parent, parents=True)
        self.dirs[p] = int(time.time())

    def remove(self, path: str, *, recursive: bool = False) -> None:
        p = self.normalize(path)
        if p in self.files:
            del self.files[p]
            return
        if p not in self.dirs:
            raise FsError(f"{path}: No such file or directory")
        if not recursive:
            raise FsError(f"{path}: Is a directory")
        if p == "/":
            raise FsError("/: Operation not permitted")
        prefix = p + "/"
        for f in [f for f in self.files if f.startswith(prefix)]:
            del self.files[f]
        for d in [d for d in self.dirs if d == p or d.startswith(prefix)]:
            del self.dirs[d]

    def listdir(self, path: str) -> list[tuple[str, StatResult]]:
        """Sorted (name, stat) of the direct children of a directory."""
        p = self.normalize(path)
        if p not in self.dirs:
            if p in self.files:
                raise FsError(f"{path}: Not a directory")
            raise FsError(f"{path}: No such file or directory")
        prefix = p if p.endswith("/") else p + "/"
        names = {
            entry[len(prefix) :]
            for entry in [*self.files, *self.dirs]
            if entry.startswith(prefix) and "/" not in entry[len(prefix) :] and entry != p
        }
        out = []
        for name in sorted(names):
            st = self.stat(prefix + name)
            assert st is not None
            out.append((name, st))
        return out
