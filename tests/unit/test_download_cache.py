"""The registry download cache: which versions a prune deletes, and the lock readers hold."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from distrl_tasks.tracking import download_cache


def _versions(root: Path, *numbers: int) -> None:
    for n in numbers:
        (root / f"v{n}").mkdir(parents=True)
        (root / f"v{n}" / "model.safetensors").write_bytes(b"w" * n)


def test_prune_keeps_the_newest_and_the_protected(tmp_path: Path) -> None:
    _versions(tmp_path, 1, 2, 3, 10, 11)
    (tmp_path / ".v12-abc123").mkdir()  # a download in flight: not a version yet
    (tmp_path / "notes").mkdir()
    assert download_cache.cached_versions(tmp_path) == [1, 2, 3, 10, 11]  # by number, not name
    assert download_cache.prune(tmp_path, keep=2, protect={2}) == [1, 3]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [
        ".v12-abc123",
        "notes",
        "v10",
        "v11",
        "v2",
    ]
    assert download_cache.prune(tmp_path, keep=2, protect={2}) == []  # idempotent


def test_prune_edge_cases(tmp_path: Path) -> None:
    assert download_cache.prune(tmp_path / "absent", keep=1) == []
    _versions(tmp_path, 1, 2)
    assert download_cache.prune(tmp_path, keep=0) == []  # 0 keeps all
    assert download_cache.prune(tmp_path, keep=5) == []
    (tmp_path / ".trash-v0-dead").mkdir()  # left by a pruner killed mid-delete
    assert download_cache.prune(tmp_path, keep=1) == [1]
    assert download_cache.cached_versions(tmp_path) == [2]
    assert not (tmp_path / ".trash-v0-dead").exists()
    with pytest.raises(ValueError, match="keep must be >= 0"):
        download_cache.prune(tmp_path, keep=-1)


def test_a_version_held_by_a_reader_survives_until_released(tmp_path: Path) -> None:
    _versions(tmp_path, 1, 2, 3)
    with download_cache.reading(tmp_path, 1):
        with download_cache.reading(tmp_path, 1):  # readers share
            assert download_cache.prune(tmp_path, keep=1) == [2]
        assert (tmp_path / "v1" / "model.safetensors").read_bytes() == b"w"
    assert download_cache.prune(tmp_path, keep=1) == [1]
    assert download_cache.cached_versions(tmp_path) == [3]


def test_a_reader_in_another_process_holds_its_version(tmp_path: Path) -> None:
    """The lock is the OS's: a reader process keeps its version until it exits."""
    _versions(tmp_path, 1, 2)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import sys
                from distrl_tasks.tracking import download_cache
                with download_cache.reading({str(tmp_path)!r}, 1):
                    print("held", flush=True)
                    sys.stdin.readline()
            """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "held"
        assert download_cache.prune(tmp_path, keep=1) == []
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.wait(timeout=30) == 0
    finally:
        reader.kill()
    assert download_cache.prune(tmp_path, keep=1) == [1]
