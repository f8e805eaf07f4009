"""DVC versioning of the trajectory directory, for data lineage.

One call, :func:`version_directory`, does ``dvc add`` of the shard directory, pushes the new
objects to the DVC remote and commits the ``.dvc`` pointer file to git. The returned
:class:`DataVersion` carries the directory hash (``"<md5>.dir"``) that trained checkpoints record
as their ``data_version`` tag; :func:`checkout_version` brings any recorded version back, from
the local cache or the remote.

DVC runs in-process through its Python API (``dvc.repo.Repo``); git runs as an argv list. DVC's
site cache lives under ``.dvc/tmp`` of the repository (nothing is written to ``/var/tmp``) and
analytics are off, so nothing here reaches the network unless the remote itself is remote.
Every failure is a :class:`VersioningError` whose message carries git's or DVC's own words. How
git and DVC are run, and the error classes, live in :mod:`distrl_tasks.data.git_dvc` (the errors
are re-exported here).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from distrl_tasks.data.git_dvc import (
    RemoteUnavailableError,
    VersioningError,
    commit_paths,
    dvc_env,
    dvc_message,
    open_dvc,
    run_git,
)
from distrl_tasks.protocol.files import TEMP_MARKER, atomic_write

if TYPE_CHECKING:
    from dvc.repo import Repo

DEFAULT_REMOTE = "storage"  # name given to the remote that ensure_repo configures

# Files that come and go while a collection is running: an actor's per-episode journal (cleared
# once its round's shards are written) and the temporary halves of atomic writes. DVC must not
# version them, and must not list them either: in asynchronous mode actors write while the
# version stage hashes, and a file deleted between DVC's listing and its read fails the stage.
TRANSIENT_PATTERNS = (".journal/", f"*{TEMP_MARKER}*")
_DVCIGNORE_HEADER = "# transient files of a running collection (written by distrl_tasks)"

_DVC_HASH = re.compile(r"^[0-9a-f]{32}(\.dir)?$")
_URL_SCHEME = re.compile(r"^[A-Za-z][\w+.-]*://")


@dataclass(frozen=True)
class DataVersion:
    """One recorded version of a data directory.

    Attributes:
        hash: DVC's md5 of the directory, e.g. ``"3f2a...c1.dir"``; the lineage key.
        dvc_file: absolute path of the ``.dvc`` pointer file.
        git_commit: the commit that records this version (None if none does yet).
        files: number of files in the directory.
        bytes: total size of those files.
        new: True when this call recorded a version that was not committed before.
    """

    hash: str
    dvc_file: Path
    git_commit: str | None
    files: int
    bytes: int
    new: bool = False


def _normalize_url(remote_url: str) -> str:
    """URLs with a scheme pass through; local paths become absolute so clones find them."""
    url = str(remote_url).strip()
    if not url:
        raise VersioningError("remote_url is empty: give a directory or a URL for the DVC remote")
    if _URL_SCHEME.match(url) and not url.startswith("file://"):
        return url
    path = url.removeprefix("file://")
    return str(Path(path).expanduser().resolve())


def _local_path(url: str) -> Path | None:
    """The directory behind a local remote URL, or None for a non-local one."""
    if _URL_SCHEME.match(url):
        return Path(url.removeprefix("file://")) if url.startswith("file://") else None
    return Path(url)


def ensure_repo(root: str | os.PathLike, remote_url: str, *, name: str = DEFAULT_REMOTE) -> None:
    """Make ``root`` a git + DVC repository whose default remote is ``remote_url``.

    Idempotent: missing pieces are created (``git init``, ``dvc init``, the remote), present ones
    kept, and the DVC set-up files are committed only when they changed. A ``root`` inside a
    bigger git work tree becomes a DVC sub-project of it. ``.dvcignore`` gets
    :data:`TRANSIENT_PATTERNS` (collect journals, temporary files), so versioning a directory
    that actors are still writing to never reads a file that is about to vanish.

    Args:
        root: project directory (created if missing).
        remote_url: a directory (relative paths resolve against the current working directory,
            like every path in ``params.yaml``) or a URL DVC understands (``s3://...``).
        name: name of the remote in ``.dvc/config``. A local remote inside ``root`` is written
            there relative to ``.dvc/``, so a copy of the project uses its own copy.

    Raises:
        VersioningError: git is missing, or git/DVC refused (for example no commit identity).
    """
    root = Path(root).resolve()
    url = _normalize_url(remote_url)
    if not re.fullmatch(r"[\w.-]+", name):
        raise VersioningError(f"remote name {name!r} must be letters, digits, '_', '.' or '-'")
    root.mkdir(parents=True, exist_ok=True)
    top = run_git(root, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        run_git(root, "init", "-q")
        top = run_git(root, "rev-parse", "--show-toplevel")
    if not (root / ".dvc").is_dir():
        from dvc.exceptions import DvcException  # lazy: dvc
        from dvc.repo import Repo  # lazy: dvc

        subdir = Path(top.stdout.strip()).resolve() != root
        with dvc_env(root):
            try:
                Repo.init(str(root), subdir=subdir).close()
            except DvcException as exc:
                raise VersioningError(f"dvc init failed in {root}: {dvc_message(exc)}") from exc
    with open_dvc(root, "config") as repo:
        current = repo.config.read("repo")
        wanted_core = {"remote": name, "analytics": False}
        core = current["core"]
        analytics_off = str(core.get("analytics", "true")).lower() in ("false", "0", "no")
        if (
            core.get("remote") != name
            or not analytics_off
            or not _same_url(current["remote"].get(name, {}).get("url"), url, root)
        ):
            with repo.config.edit("repo") as conf:
                conf["core"].update(wanted_core)
                conf["remote"].setdefault(name, {})["url"] = _config_url(url, root)
    _ensure_dvcignore(root)
    scaffold = [p for p in (".dvc/config", ".dvc/.gitignore", ".dvcignore") if (root / p).exists()]
    commit_paths(root, scaffold, f"Set up DVC: default remote '{name}' -> {url}")


def _config_url(url: str, root: Path) -> str:
    """What to hand DVC's config editor for ``url``, so that ``.dvc/config`` holds a local
    remote inside the project relative to ``.dvc/`` (a copied or moved project then keeps its
    own remote) and every other URL as it is.

    DVC's editor, like ``dvc remote add``, reads a relative path as relative to the current
    directory and stores it relative to the config file; an absolute path is stored as is.
    """
    path = _local_path(url)
    if path is None or not path.is_absolute():
        return url
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return url
    return os.path.relpath(path.resolve(), Path.cwd())


def _ensure_dvcignore(root: Path) -> None:
    """Add :data:`TRANSIENT_PATTERNS` to ``root/.dvcignore`` where missing, keeping its lines."""
    path = root / ".dvcignore"
    text = path.read_text() if path.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [p for p in TRANSIENT_PATTERNS if p not in present]
    if not missing:
        return
    if text and not text.endswith("\n"):
        text += "\n"
    if _DVCIGNORE_HEADER not in present:
        text += _DVCIGNORE_HEADER + "\n"
    atomic_write(path, (text + "".join(f"{p}\n" for p in missing)).encode())


def _same_url(configured: str | None, wanted: str, root: Path) -> bool:
    """Whether a remote URL from ``.dvc/config`` names ``wanted`` (relative paths there are
    relative to ``.dvc/``, and a committed config may well keep them relative)."""
    if configured is None:
        return False
    if configured == wanted:
        return True
    if _URL_SCHEME.match(configured) or _URL_SCHEME.match(wanted):
        return False
    return (root / ".dvc" / configured).resolve() == Path(wanted).resolve()


def _require_dvc_repo(root: str | os.PathLike) -> Path:
    path = Path(root).resolve()
    if not (path / ".dvc").is_dir():
        raise VersioningError(
            f"{path} is not a DVC repository; call ensure_repo(root, remote) first"
        )
    return path


def _data_path(root: Path, data_dir: str | os.PathLike, *, must_exist: bool) -> Path:
    """Absolute data directory, checked to lie inside ``root`` (relative paths are from root)."""
    path = Path(data_dir)
    path = (path if path.is_absolute() else root / path).resolve()
    if path == root or root not in path.parents:
        raise VersioningError(f"data_dir {path} must be a directory inside the repository {root}")
    inside = path.relative_to(root).parts[0]
    if inside in (".git", ".dvc"):
        raise VersioningError(f"data_dir {path} lies inside {inside}/, which cannot be versioned")
    if must_exist and not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise VersioningError(f"data_dir {path} {what}")
    return path


def _read_dvc_file(dvc_file: Path, text: str | None = None) -> tuple[str, int, int]:
    """(hash, files, bytes) of the single directory output that ``dvc_file`` records."""
    try:
        doc: Any = yaml.safe_load(dvc_file.read_text() if text is None else text)
        out = doc["outs"][0]
        return str(out["md5"]), int(out.get("nfiles", 1)), int(out.get("size", 0))
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise VersioningError(f"{dvc_file} is not a valid .dvc file: {exc}") from exc


def _check_remote(repo: Repo, remote: str | None, *, create: bool) -> None:
    """Fail early, with the remote's name and URL, when a local remote is unusable."""
    remotes = repo.config["remote"]
    name = remote or repo.config["core"].get("remote")
    if not name:
        raise VersioningError("no DVC remote given and no default remote is configured")
    if name not in remotes:
        known = ", ".join(sorted(remotes)) or "none"
        raise VersioningError(f"DVC remote {name!r} is not configured (configured: {known})")
    url = str(remotes[name]["url"])
    path = _local_path(url)
    if path is None:
        return  # cloud remotes report their own connection errors through DVC
    where = f"DVC remote {name!r} at {url}"
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RemoteUnavailableError(f"{where} is unreachable: {exc}") from exc
        if not os.access(path, os.W_OK | os.X_OK):
            raise RemoteUnavailableError(f"{where} is not writable")
    elif not path.is_dir():
        raise RemoteUnavailableError(f"{where} is unreachable: no such directory")


def version_directory(
    root: str | os.PathLike,
    data_dir: str | os.PathLike,
    *,
    remote: str | None = None,
    message: str | None = None,
    push: bool = True,
) -> DataVersion:
    """Version ``data_dir`` with DVC: add, push to the remote, then commit the pointer to git.

    Pushing comes before the commit, so a commit never points at data the remote lacks; after a
    failed push, calling again finishes the job. An unchanged directory gives the same hash, an
    empty push and no new commit.

    Args:
        root: the repository prepared by :func:`ensure_repo`.
        data_dir: directory to version (relative paths are relative to ``root``).
        remote: DVC remote name to push to (None: the default remote).
        message: commit message headline (a default naming the directory is used otherwise);
            the hash is always added as a ``Data-Version:`` trailer.
        push: False to keep the objects in the local DVC cache only.

    Returns:
        The :class:`DataVersion` now recorded for ``data_dir``.

    Raises:
        VersioningError: bad paths, or git/DVC failed (DVC's message included).
        RemoteUnavailableError: the remote cannot be created or written.
    """
    root = _require_dvc_repo(root)
    data = _data_path(root, data_dir, must_exist=True)
    dvc_file = data.with_name(data.name + ".dvc")
    rel_data = data.relative_to(root).as_posix()
    if push:
        with open_dvc(root, "remote") as repo:
            _check_remote(repo, remote, create=True)
    with open_dvc(root, "add") as repo:
        repo.add([str(data)])
    digest, files, size = _read_dvc_file(dvc_file)
    if push:
        with open_dvc(root, "push") as repo:
            repo.push(targets=[str(dvc_file)], remote=remote)
    headline = message or f"Version {rel_data}: {files} files, {size} bytes"
    paths = [dvc_file.relative_to(root).as_posix()]
    if (data.parent / ".gitignore").exists():
        paths.append((data.parent / ".gitignore").relative_to(root).as_posix())
    commit = commit_paths(
        root, paths, f"{headline}\n\nData-Version: {digest}\nData-Path: {rel_data}"
    )
    if commit is None:
        last = run_git(root, "log", "-1", "--format=%H", "--", paths[0]).stdout.strip()
        return DataVersion(digest, dvc_file, last or None, files, size, new=False)
    return DataVersion(digest, dvc_file, commit, files, size, new=True)


def _find_commit(root: Path, rel_dvc: str, hash_or_rev: str) -> tuple[str, str]:
    """(commit, .dvc text) for a DVC hash (newest commit recording it) or a git revision."""
    key = hash_or_rev.strip()
    if _DVC_HASH.match(key):
        log = run_git(root, "log", "--format=%H", "--", rel_dvc).stdout.split()
        for commit in log:
            shown = run_git(root, "show", f"{commit}:{rel_dvc}", check=False)
            if shown.returncode == 0:
                digest = _read_dvc_file(root / rel_dvc, shown.stdout)[0]
                if digest == key or digest == f"{key}.dir":
                    return commit, shown.stdout
        raise VersioningError(f"no commit records data version {key} for {rel_dvc}")
    resolved = run_git(root, "rev-parse", "--verify", "--quiet", f"{key}^{{commit}}", check=False)
    if resolved.returncode != 0:
        raise VersioningError(
            f"{key!r} is neither a DVC hash (32 hex digits, optional .dir) nor a git revision"
        )
    commit = resolved.stdout.strip()
    shown = run_git(root, "show", f"{commit}:{rel_dvc}", check=False)
    if shown.returncode != 0:
        raise VersioningError(f"commit {commit[:12]} does not record {rel_dvc}")
    return commit, shown.stdout


def _has_unversioned_changes(repo: Repo, dvc_file: Path) -> bool:
    """True when the workspace copy differs from what the current .dvc file records."""
    status = repo.status(targets=[str(dvc_file)])
    for entries in status.values():
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and "modified" in entry.get("changed outs", {}).values():
                return True
    return False


def checkout_version(
    root: str | os.PathLike,
    data_dir: str | os.PathLike,
    hash_or_rev: str,
    *,
    remote: str | None = None,
    force: bool = False,
) -> DataVersion:
    """Restore ``data_dir`` exactly as a recorded version (files added since are removed).

    The ``.dvc`` file of the matching commit is checked out with git (and left staged), then DVC
    fills the directory from the local cache, pulling from the remote what the cache lacks (a
    fresh clone pulls everything).

    Args:
        root: the repository (or a git clone of it).
        data_dir: the versioned directory (relative paths are relative to ``root``).
        hash_or_rev: a DVC hash from :class:`DataVersion` (``.dir`` suffix optional) or any git
            revision (commit, tag, branch) whose tree holds the ``.dvc`` file.
        remote: DVC remote to pull from (None: the default remote).
        force: also discard changes in ``data_dir`` that were never versioned.

    Returns:
        The restored :class:`DataVersion` (``git_commit`` is the commit that recorded it).

    Raises:
        VersioningError: unknown version, unversioned changes without ``force``, DVC failure.
        RemoteUnavailableError: the data must come from a remote that cannot be reached.
    """
    from dvc.exceptions import CheckoutError  # lazy: dvc

    root = _require_dvc_repo(root)
    data = _data_path(root, data_dir, must_exist=False)
    dvc_file = data.with_name(data.name + ".dvc")
    rel_dvc = dvc_file.relative_to(root).as_posix()
    commit, text = _find_commit(root, rel_dvc, hash_or_rev)
    if not force and data.is_dir() and dvc_file.exists():
        with open_dvc(root, "status") as repo:
            if _has_unversioned_changes(repo, dvc_file):
                raise VersioningError(
                    f"{data} has changes that were never versioned; run version_directory first "
                    "or pass force=True to discard them"
                )
    run_git(root, "checkout", commit, "--", rel_dvc)
    digest, files, size = _read_dvc_file(dvc_file, text)
    restored = DataVersion(digest, dvc_file, commit, files, size, new=False)
    try:
        with open_dvc(root, "checkout") as repo:
            repo.checkout(targets=[str(dvc_file)], force=True)
        return restored
    except VersioningError as exc:
        if not isinstance(exc.__cause__, CheckoutError):
            raise
    # Some objects are missing from the local cache (always so in a fresh clone): pull them.
    with open_dvc(root, "pull") as repo:
        _check_remote(repo, remote, create=False)
        repo.pull(targets=[str(dvc_file)], remote=remote, force=True)
    return restored
