"""Which local round policies ``runs/checkpoints`` keeps once rounds are registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from distrl_tasks.stages import common


def _rounds(workdir: Path, *numbers: int, registered: set[int]) -> None:
    for n in numbers:
        policy = common.checkpoint_dir(workdir, n)
        policy.mkdir(parents=True)
        (policy / "model.safetensors").write_bytes(b"w" * n)
        if n in registered:
            common.write_manifest(workdir, n, "register", {"round": n, "version": n})


def _left(workdir: Path) -> list[str]:
    return sorted(p.name for p in (workdir / "runs" / "checkpoints").iterdir())


def test_prune_keeps_the_newest_rounds_and_every_unregistered_one(tmp_path: Path) -> None:
    # round 5 is still training / evaluating: it has no register manifest, so it stays even
    # though it is old; 12 is newest by number, not by name order of the digits alone
    _rounds(tmp_path, 1, 2, 5, 9, 10, 12, registered={1, 2, 9, 10, 12})
    assert common.prune_round_checkpoints(tmp_path, 2) == [1, 2, 9]
    assert _left(tmp_path) == ["r000005", "r000010", "r000012"]
    assert common.prune_round_checkpoints(tmp_path, 2) == []  # idempotent


def test_protected_rounds_survive_and_zero_keeps_all(tmp_path: Path) -> None:
    _rounds(tmp_path, 3, 4, 7, 8, registered={3, 4, 7, 8})
    assert common.prune_round_checkpoints(tmp_path, 0) == []
    assert len(_left(tmp_path)) == 4
    assert common.prune_round_checkpoints(tmp_path, 1, protect=[4]) == [3, 7]
    assert _left(tmp_path) == ["r000004", "r000008"]


def test_a_crash_mid_delete_leaves_no_round_name_and_the_next_prune_clears_it(
    tmp_path: Path,
) -> None:
    _rounds(tmp_path, 1, 2, registered={1, 2})
    # what a process killed between the rename and the removal leaves behind
    root = tmp_path / "runs" / "checkpoints"
    common.checkpoint_dir(tmp_path, 1).rename(root / ".r000001.pruning")
    (root / "notes").mkdir()  # not a round: never touched
    assert common.prune_round_checkpoints(tmp_path, 1) == []
    assert _left(tmp_path) == ["notes", "r000002"]


def test_no_directory_and_bad_keep(tmp_path: Path) -> None:
    assert common.prune_round_checkpoints(tmp_path, 3) == []
    with pytest.raises(ValueError, match="keep must be >= 0"):
        common.prune_round_checkpoints(tmp_path, -1)
