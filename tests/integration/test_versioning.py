"""DVC versioning with the real ``dvc`` package and the real ``git`` in temporary repositories.

Nothing is mocked: each test builds a git + DVC project under ``tmp_path`` with a local
directory as the DVC remote. Git and DVC read no system or user configuration (see
:func:`isolated`), and DVC's analytics and site cache are kept off the network and inside tmp.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from distrl_tasks.data.versioning import (
    DEFAULT_REMOTE,
    TRANSIENT_PATTERNS,
    DataVersion,
    RemoteUnavailableError,
    VersioningError,
    checkout_version,
    ensure_repo,
    version_directory,
)

pytestmark = [
    pytest.mark.integration,
    # DVC 3.67 calls a pygtrie API that pygtrie deprecates; not ours to fix.
    pytest.mark.filterwarnings("ignore:_NoneStep.value:DeprecationWarning"),
]

DATA = "runs/data"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by relative path, with its exact bytes."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def write_files(directory: Path, files: dict[str, bytes]) -> None:
    for rel, content in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def dir_hash(files: dict[str, bytes]) -> str:
    """DVC 3's directory hash, computed by hand: md5 of the sorted JSON list of file md5s."""
    entries = [
        {"md5": hashlib.md5(content).hexdigest(), "relpath": rel}
        for rel, content in sorted(files.items())
    ]
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode()).hexdigest() + ".dir"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No system/global git or DVC config, no analytics, DVC caches inside tmp."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "gitconfig").write_text("")
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("DVC_SITE_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    monkeypatch.setenv("DVC_GLOBAL_CONFIG_DIR", str(home / "dvc-global"))
    monkeypatch.setenv("DVC_SYSTEM_CONFIG_DIR", str(home / "dvc-system"))


def new_git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "config", "user.name", "Versioning Test")
    git(path, "config", "user.email", "versioning@test.invalid")
    return path


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return tmp_path / "dvc-remote"


@pytest.fixture
def project(tmp_path: Path, remote: Path) -> Path:
    root = new_git_repo(tmp_path / "project")
    ensure_repo(root, str(remote))
    return root


V1 = {
    "round-0000/shard-a.parquet": random.Random(1).randbytes(3000),
    "round-0000/shard-b.parquet": random.Random(2).randbytes(1500),
    "manifest.json": b'{"shards": 2}\n',
}


def test_ensure_repo_creates_git_dvc_and_remote_idempotently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bare directory: git identity only from the environment, as on a CI worker.
    for key in ("GIT_AUTHOR", "GIT_COMMITTER"):
        monkeypatch.setenv(f"{key}_NAME", "CI")
        monkeypatch.setenv(f"{key}_EMAIL", "ci@test.invalid")
    root = tmp_path / "fresh" / "project"
    monkeypatch.chdir(tmp_path)
    ensure_repo(root, "remotes/store")  # relative to the working directory

    assert (root / ".git").is_dir() and (root / ".dvc").is_dir()
    config = (root / ".dvc" / "config").read_text()
    assert f"remote = {DEFAULT_REMOTE}" in config
    assert f"url = {tmp_path / 'remotes' / 'store'}" in config
    assert "analytics = False" in config
    assert set(git(root, "ls-files").split()) == {".dvc/.gitignore", ".dvc/config", ".dvcignore"}
    assert commit_count(root) == 1
    assert "remotes/store" in git(root, "log", "-1", "--format=%s")
    assert list((root / ".dvc" / "tmp" / "site-cache" / "repo").iterdir())  # not /var/tmp

    ensure_repo(root, str(tmp_path / "remotes" / "store"))
    assert commit_count(root) == 1
    assert git(root, "status", "--porcelain") == ""

    # A new URL for the remote is a configuration change: committed once.
    ensure_repo(root, str(tmp_path / "other"))
    assert commit_count(root) == 2
    assert f"url = {tmp_path / 'other'}" in (root / ".dvc" / "config").read_text()


def test_version_directory_adds_pushes_and_commits(project: Path, remote: Path) -> None:
    write_files(project / DATA, V1)
    version = version_directory(project, DATA)

    assert version.hash == dir_hash(V1)
    assert version.files == 3
    assert version.bytes == sum(len(c) for c in V1.values())
    assert version.new is True
    assert version.dvc_file == project / "runs" / "data.dvc"
    assert yaml.safe_load(version.dvc_file.read_text())["outs"][0]["md5"] == version.hash
    assert version.git_commit == git(project, "rev-parse", "HEAD")
    body = git(project, "log", "-1", "--format=%B")
    assert f"Data-Version: {version.hash}" in body
    assert body.startswith("Version runs/data: 3 files, 4514 bytes")
    tracked = set(git(project, "ls-files", "runs").split())
    assert tracked == {"runs/data.dvc", "runs/.gitignore"}  # the data itself stays out of git
    # The remote holds the directory listing and every file, by md5.
    digest = version.hash.removesuffix(".dir")
    assert (remote / "files" / "md5" / digest[:2] / (digest[2:] + ".dir")).is_file()
    for content in V1.values():
        md5 = hashlib.md5(content).hexdigest()
        assert (remote / "files" / "md5" / md5[:2] / md5[2:]).read_bytes() == content


def test_collect_journals_and_temp_files_are_never_versioned(project: Path) -> None:
    # Asynchronous actors write their per-episode journal and atomic-write temporaries inside
    # the tracked directory while the version stage hashes it; DVC must not even list them (a
    # journal cleared between DVC's listing and its read used to fail the stage).
    write_files(project / DATA, V1)
    first = version_directory(project, DATA)
    transient = {
        "raw/.journal/r000001-w00-train/ep-abc.parquet": b"half an episode",
        "raw/.journal/r000001-w00-train/.ep-abc.manifest.json.tmp-1a2b3c4d": b"{",
        "round-0000/.shard-c.parquet.tmp-99": b"partial",
        ".tmp-state": b"partial",
    }
    write_files(project / DATA, transient)
    again = version_directory(project, DATA)
    assert (again.hash, again.files, again.new) == (first.hash, 3, False)
    lines = (project / ".dvcignore").read_text().splitlines()
    assert set(TRANSIENT_PATTERNS) <= set(lines)


def test_ensure_repo_adds_the_transient_patterns_once_and_keeps_the_users_lines(
    project: Path, remote: Path
) -> None:
    ignore = project / ".dvcignore"
    ignore.write_text("# mine\nscratch/")  # no final newline: appending must not glue lines
    ensure_repo(project, str(remote))
    ensure_repo(project, str(remote))
    lines = ignore.read_text().splitlines()
    assert lines[:2] == ["# mine", "scratch/"]
    assert [line for line in lines if line in TRANSIENT_PATTERNS] == list(TRANSIENT_PATTERNS)
    assert git(project, "status", "--porcelain") == ""  # the change is committed with the set-up


def test_unchanged_directory_is_a_no_op(project: Path) -> None:
    write_files(project / DATA, V1)
    first = version_directory(project, project / DATA, message="round 0 data")
    commits = commit_count(project)
    # Unrelated work in the repository is neither committed nor mistaken for a data change.
    (project / "train.py").write_text("print('wip')\n")
    git(project, "add", "train.py")
    (project / "notes.txt").write_text("untracked\n")
    again = version_directory(project, DATA)

    assert again == DataVersion(first.hash, first.dvc_file, first.git_commit, 3, first.bytes)
    assert again.new is False
    assert commit_count(project) == commits
    assert git(project, "log", "-1", "--format=%s") == "round 0 data"
    assert git(project, "status", "--porcelain") == "A  train.py\n?? notes.txt"

    (project / DATA / "manifest.json").write_bytes(b"{}")
    assert version_directory(project, DATA).new
    assert git(project, "show", "--name-only", "--format=") == "runs/data.dvc"
    assert git(project, "status", "--porcelain") == "A  train.py\n?? notes.txt"


def test_changed_directory_gets_new_hash_and_old_version_restores_bit_for_bit(
    project: Path,
) -> None:
    data = project / DATA
    write_files(data, V1)
    v1 = version_directory(project, DATA)
    before = snapshot(data)

    (data / "manifest.json").write_bytes(b'{"shards": 3}\n')
    (data / "round-0000" / "shard-b.parquet").unlink()
    write_files(data, {"round-0001/shard-c.parquet": random.Random(3).randbytes(700)})
    after = snapshot(data)
    v2 = version_directory(project, DATA)
    assert v2.hash == dir_hash(after) != v1.hash
    assert v2.new and v2.git_commit != v1.git_commit
    assert (v2.files, v2.bytes) == (3, 3000 + 14 + 700)

    restored = checkout_version(project, DATA, v1.hash)
    assert snapshot(data) == before
    assert (restored.hash, restored.git_commit, restored.files) == (v1.hash, v1.git_commit, 3)

    # Git revisions work too, and the hash without its ".dir" suffix.
    assert checkout_version(project, DATA, v2.git_commit or "").hash == v2.hash
    assert snapshot(data) == after
    checkout_version(project, DATA, v1.hash.removesuffix(".dir"))
    assert snapshot(data) == before


def test_fresh_clone_pulls_versions_from_the_remote(project: Path, tmp_path: Path) -> None:
    data = project / DATA
    write_files(data, V1)
    v1 = version_directory(project, DATA)
    write_files(data, {"round-0001/shard-c.parquet": b"second round"})
    v2 = version_directory(project, DATA)
    expected_v2 = snapshot(data)

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(project), str(clone))
    assert not (clone / DATA).exists()  # only the pointer travels through git
    assert not list((clone / ".dvc").glob("cache/files/md5/*"))

    assert checkout_version(clone, DATA, "HEAD").hash == v2.hash
    assert snapshot(clone / DATA) == expected_v2
    checkout_version(clone, DATA, v1.hash)
    assert snapshot(clone / DATA) == V1


def test_checkout_keeps_unversioned_changes_unless_forced(project: Path) -> None:
    data = project / DATA
    write_files(data, V1)
    v1 = version_directory(project, DATA)
    (data / "manifest.json").write_bytes(b"edited but never versioned")

    with pytest.raises(VersioningError, match=r"never versioned.*force=True"):
        checkout_version(project, DATA, v1.hash)
    assert (data / "manifest.json").read_bytes() == b"edited but never versioned"

    checkout_version(project, DATA, v1.hash, force=True)
    assert snapshot(data) == V1


def test_unreachable_remote_fails_before_anything_is_committed(
    project: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the remote's parent should be")
    ensure_repo(project, str(blocker / "remote"))
    commits = commit_count(project)
    write_files(project / DATA, V1)

    with pytest.raises(RemoteUnavailableError, match=r"remote 'storage' at .*not-a-directory"):
        version_directory(project, DATA)
    assert commit_count(project) == commits
    # Without a push the version is still recorded, from the local cache.
    assert version_directory(project, DATA, push=False).hash == dir_hash(V1)


def test_pull_from_a_missing_remote_is_reported(
    project: Path, remote: Path, tmp_path: Path
) -> None:
    write_files(project / DATA, V1)
    v1 = version_directory(project, DATA)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(project), str(clone))
    shutil.rmtree(remote)

    with pytest.raises(RemoteUnavailableError, match="unreachable: no such directory"):
        checkout_version(clone, DATA, v1.hash)


def test_dvc_failure_carries_dvcs_message(project: Path) -> None:
    write_files(project / DATA, V1)
    git(project, "add", DATA)  # the data is already in git: DVC refuses to take it over
    with pytest.raises(VersioningError) as info:
        version_directory(project, DATA)
    message = str(info.value)
    assert message.startswith("dvc add failed")
    assert "already tracked by SCM" in message
    assert "Traceback" not in message


@pytest.mark.parametrize(
    ("data_dir", "match"),
    [
        ("missing", "does not exist"),
        ("..", "must be a directory inside the repository"),
        (".", "must be a directory inside the repository"),
        (".dvc/tmp", r"inside \.dvc/"),
        ("afile", "is not a directory"),
    ],
)
def test_bad_data_dir_is_named(project: Path, data_dir: str, match: str) -> None:
    (project / "afile").write_text("x")
    with pytest.raises(VersioningError, match=match):
        version_directory(project, data_dir)


def test_unknown_versions_and_non_repos_are_clear_errors(project: Path, tmp_path: Path) -> None:
    write_files(project / DATA, V1)
    version_directory(project, DATA)
    with pytest.raises(VersioningError, match=r"no commit records data version 0{32}"):
        checkout_version(project, DATA, "0" * 32 + ".dir")
    with pytest.raises(VersioningError, match=r"neither a DVC hash .* nor a git revision"):
        checkout_version(project, DATA, "no-such-branch")
    first = git(project, "rev-list", "--max-parents=0", "HEAD")
    with pytest.raises(VersioningError, match=r"does not record runs/data\.dvc"):
        checkout_version(project, DATA, first)

    plain = new_git_repo(tmp_path / "plain")
    with pytest.raises(VersioningError, match="not a DVC repository; call ensure_repo"):
        version_directory(plain, ".")
    with pytest.raises(VersioningError, match="remote_url is empty"):
        ensure_repo(plain, " ")


def test_missing_git_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(VersioningError, match="git is not installed"):
        ensure_repo(tmp_path / "project", str(tmp_path / "remote"))


def test_subdirectory_of_a_git_repo_becomes_a_dvc_subproject(tmp_path: Path, remote: Path) -> None:
    outer = new_git_repo(tmp_path / "mono")
    root = outer / "ml"
    ensure_repo(root, str(remote))
    assert (root / ".dvc").is_dir() and not (root / ".git").exists()
    write_files(root / "data", V1)
    version = version_directory(root, "data")
    assert version.hash == dir_hash(V1)
    assert "ml/data.dvc" in git(outer, "ls-files").split()
    assert os.path.isdir(remote / "files")
