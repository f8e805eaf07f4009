"""Tests of the shard schema, atomic/idempotent writes, verification and filtered reads."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import logging
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from distrl_tasks.data import schema as S
from distrl_tasks.data import trajectories as T
from distrl_tasks.data.schema import SchemaError
from distrl_tasks.data.shards import (
    QUARANTINE,
    ShardConflictError,
    read_shards,
    verify_shards,
    write_shard,
)
from distrl_tasks.protocol.actions import ActionType

T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (shade % 256, 0, 0)).save(buf, "PNG")
    return buf.getvalue()


def trajectory(
    tid: str,
    rewards: list[float],
    *,
    rnd: int = 0,
    pv: int = 0,
    split: str = "train",
    dim: int = 4,
    gamma: float = 0.5,
    labeled: bool = True,
) -> list[dict]:
    """Rows of one well-formed trajectory with hand-made returns."""
    n = len(rewards)
    mc = T.discounted_returns(np.array(rewards), gamma)
    rows = []
    for t in range(n):
        last = t == n - 1
        rows.append(
            {
                "trajectory_id": tid,
                "step": t,
                "round": rnd,
                "task": "Open the settings",
                "task_set": "general",
                "split": split,
                "device": "emulator-5554",
                "policy_version": pv,
                "prompt": f"Previous Actions: Goal: Open the settings step {t}",
                "action": '"action_type": "DUAL_POINT", "touch_point": "[0.5, 0.5]"',
                "action_type": "DUAL_POINT",
                "invalid": False,
                "touch_point": [0.5, 0.25],
                "lift_point": [0.5, 0.25],
                "screenshot_png": png(t),
                "final_screenshot_png": png(200) if last else None,
                "image_features": np.linspace(-1, 1, dim) + t,
                "final_image_features": np.ones(dim) if last else None,
                "behavior_log_prob": -1.5,
                "reward": rewards[t] if labeled else None,
                "penalty": 0.0,
                "done": last,
                "mc_return": float(mc[t]) if labeled else None,
                "trajectory_reward": float(sum(rewards)) if labeled else None,
                "evaluator": "oracle" if labeled else None,
                "label_status": "labeled" if labeled else "unlabeled",
                "started_at": T0 + dt.timedelta(seconds=10 * t),
                "ended_at": T0 + dt.timedelta(seconds=10 * t + 2),
            }
        )
    return rows


def two_trajectories(**kw) -> list[dict]:
    return trajectory("a", [0.0, 0.0, 1.0], **kw) + trajectory("b", [0.0, 0.0], **kw)


# --- schema ---------------------------------------------------------------------------------


def test_schema_has_contract_columns_and_renders_markdown():
    contract = [
        "trajectory_id",
        "step",
        "task",
        "task_set",
        "split",
        "device",
        "policy_version",
        "prompt",
        "action",
        "action_type",
        "screenshot_png",
        "behavior_log_prob",
        "reward",
        "penalty",
        "done",
        "mc_return",
        "evaluator",
        "round",
        "image_features",
        "invalid",
        "label_status",
        "trajectory_reward",
        "final_screenshot_png",
    ]
    assert set(contract) <= set(S.COLUMN_NAMES)
    schema = S.trajectory_schema(1408)
    assert schema.field("image_features").type == pa.list_(pa.float16(), 1408)
    assert schema.metadata[b"schema_version"] == str(S.SCHEMA_VERSION).encode()
    assert set(S.ACTION_TYPES) == {t.value for t in ActionType}
    md = S.schema_markdown(1408)
    assert md.count("\n| `") == len(S.COLUMNS)
    assert "| `screenshot_png` | binary | no |" in md


@pytest.mark.parametrize(
    ("change", "column", "problem"),
    [
        (lambda r: r[0].pop("task"), "task", "row 0 has no value"),
        (lambda r: [x.pop("task") for x in r], "task", "missing"),
        (lambda r: r[0].update(bogus=1), "bogus", "unknown"),
        (lambda r: r[1].update(split="validation"), "split", "not in"),
        (lambda r: r[0].update(action_type="CLICK"), "action_type", "not in"),
        (lambda r: r[0].update(screenshot_png=b"JPEG"), "screenshot_png", "not PNG"),
        (lambda r: r[0].update(touch_point=[1.5, 0.2]), "touch_point", "[0, 1]"),
        (lambda r: r[0].update(behavior_log_prob=0.7), "behavior_log_prob", "<= 0"),
        (lambda r: r[0].update(penalty=0.4), "penalty", "<= 0"),
        (lambda r: r[0].update(reward=None), "reward", "labeled rows"),
        (lambda r: r[1].update(step=5), "step", "0..n-1"),
        (lambda r: r[0].update(done=True), "done", "last step"),
        (lambda r: r[2].update(final_screenshot_png=None), "final_screenshot_png", "required"),
        (lambda r: r[0].update(final_screenshot_png=png(1)), "final_screenshot_png", "last step"),
        (lambda r: r[1].update(device="emulator-5556"), "device", "one value per trajectory"),
        (lambda r: r[1].update(image_features=[1.0, 2.0]), "image_features", "expected 4"),
        (lambda r: r[0].update(image_features=[1e6] * 4), "image_features", "float16 range"),
        (lambda r: r[2].update(final_image_features=[np.nan] * 4), "final_image_f", "float16"),
        (lambda r: r[0].update(step="zero"), "step", "cannot convert"),
        (lambda r: [x.update(round=3) for x in r], "round", "expected 0"),
        (lambda r: r[0].update(round=3), "round", "one value per trajectory"),
    ],
)
def test_validation_errors_name_the_column(tmp_path, change, column, problem):
    rows = trajectory("a", [0.0, 0.0, 1.0])
    change(rows)
    with pytest.raises(SchemaError) as err:
        write_shard(rows, tmp_path, round=0)
    assert column in str(err.value) and problem in str(err.value)
    assert not list(tmp_path.glob("*.parquet"))


def test_table_input_is_cast_and_missing_optional_columns_are_nulls(tmp_path):
    table = pa.Table.from_pylist(trajectory("a", [0.0, 1.0]))
    table = table.drop_columns(["typed_text"] if "typed_text" in table.column_names else [])
    table = table.drop_columns(["touch_point", "lift_point", "image_features"])
    table = table.drop_columns(["final_image_features"])
    info = write_shard(table, tmp_path, round=0, feature_dim=8)
    back = read_shards(tmp_path)
    assert info.feature_dim == 8 and back.num_rows == 2
    assert back.column("typed_text").null_count == 2
    assert back.schema.field("step").type == pa.int32()  # pylist gave int64: cast safely
    with pytest.raises(SchemaError, match="feature_dim"):
        write_shard(table, tmp_path / "other", round=0)


def test_float16_features_round_trip(tmp_path):
    rows = trajectory("a", [0.0, 1.0], dim=1408)
    write_shard(rows, tmp_path, round=0)
    back = read_shards(tmp_path)
    assert back.schema.field("image_features").type == pa.list_(pa.float16(), 1408)
    got = np.asarray(back.column("image_features")[1].values.to_numpy(), dtype=np.float32)
    want = np.asarray(rows[1]["image_features"], dtype=np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert back.column("final_image_features").null_count == 1


def test_add_returns_hand_computed():
    table = pa.Table.from_pylist(trajectory("a", [0.0, 0.5, 1.0]))
    out = T.add_returns(table.drop_columns(["mc_return"]), gamma=0.5)
    # G2 = 1, G1 = 0.5 + 0.5 * 1 = 1, G0 = 0 + 0.5 * 1 = 0.5
    assert out.column("mc_return").to_pylist() == [0.5, 1.0, 1.0]
    assert out.column("trajectory_reward").to_pylist() == [1.5, 1.5, 1.5]
    unlabeled = pa.Table.from_pylist(trajectory("u", [0.0, 1.0], labeled=False))
    assert T.add_returns(unlabeled, 0.5).column("mc_return").null_count == 2


def test_gamma_check_rejects_inconsistent_mc_return(tmp_path):
    rows = trajectory("a", [0.0, 1.0], gamma=0.9)
    with pytest.raises(SchemaError, match=r"mc_return.*gamma=0\.5"):
        write_shard(rows, tmp_path, round=0, gamma=0.5)
    assert write_shard(rows, tmp_path, round=0, gamma=0.9).gamma == 0.9


def test_group_trajectories_and_final_observation():
    rows = trajectory("z", [0.0, 1.0], rnd=1) + trajectory("y", [1.0], rnd=2)
    rows += trajectory("x", [0.0], rnd=2)
    rows[-1]["started_at"] = rows[-1]["ended_at"] = T0 + dt.timedelta(days=1)
    table = pa.Table.from_pylist(rows[::-1])  # shuffled order in, canonical order out
    groups = T.group_trajectories(table)
    assert [g.column("trajectory_id")[0].as_py() for g in groups] == ["z", "y", "x"]
    assert groups[0].column("step").to_pylist() == [0, 1]
    obs = T.observations(groups[0])
    assert obs == [png(0), png(1), png(200)]


# --- writing --------------------------------------------------------------------------------


def test_manifest_records_checksum_and_contents(tmp_path):
    info = write_shard(two_trajectories(), tmp_path, round=0, name="worker-0")
    manifest = json.loads((tmp_path / "worker-0.manifest.json").read_text())
    data = (tmp_path / "worker-0.parquet").read_bytes()
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest() == info.sha256
    assert manifest["rows"] == 5 and manifest["trajectories"] == 2
    assert manifest["rounds"] == [0] and manifest["policy_versions"] == [0]
    assert manifest["schema_version"] == S.SCHEMA_VERSION and manifest["feature_dim"] == 4
    assert dt.datetime.fromisoformat(manifest["created_at"]).tzinfo is not None
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # temp files cleaned up


def test_identical_rewrite_is_noop_and_different_content_conflicts(tmp_path):
    first = write_shard(two_trajectories(), tmp_path, round=0, name="w0")
    mtime = (tmp_path / "w0.parquet").stat().st_mtime_ns
    rows = two_trajectories()[::-1]  # same content, other row order
    again = write_shard(rows, tmp_path, round=0, name="w0")
    assert again == first and (tmp_path / "w0.parquet").stat().st_mtime_ns == mtime
    changed = two_trajectories()
    changed[0]["prompt"] = "something else"
    with pytest.raises(ShardConflictError, match="w0"):
        write_shard(changed, tmp_path, round=0, name="w0")
    replaced = write_shard(changed, tmp_path, round=0, name="w0", overwrite=True)
    assert replaced.sha256 != first.sha256
    assert read_shards(tmp_path).column("prompt")[0].as_py() == "something else"


def test_shards_of_schema_version_3_read_without_the_removed_column(tmp_path):
    # version 4 removed screen_elements; a version-3 shard that has it reads as today's do
    assert S.SCHEMA_VERSION == 4 and "screen_elements" not in S.COLUMN_NAMES
    first = write_shard(two_trajectories(), tmp_path, round=0, name="v3")
    today = read_shards(tmp_path)
    stored = pq.read_table(first.path)
    listed = pa.array(["Settings [0.9500, 0.9000]"] * stored.num_rows)
    pq.write_table(
        stored.append_column("screen_elements", listed),
        first.path,
        compression="zstd",
        store_schema=False,
    )
    manifest = json.loads(first.manifest_path.read_text())
    manifest.update(schema_version=3, sha256=hashlib.sha256(first.path.read_bytes()).hexdigest())
    first.manifest_path.write_text(json.dumps(manifest))
    assert read_shards(tmp_path).equals(today)
    assert read_shards(tmp_path, columns=["trajectory_id", "prompt"]).num_rows == today.num_rows
    with pytest.raises(SchemaError, match="screen_elements"):
        read_shards(tmp_path, columns=["screen_elements"])
    with pytest.raises(SchemaError, match=r"unknown column.*screen_elements"):
        write_shard([{**two_trajectories()[0], "screen_elements": None}], tmp_path, round=0)
    # the same rows again: the old shard holds them as readers see it, so nothing is written
    mtime = first.path.stat().st_mtime_ns
    again = write_shard(two_trajectories(), tmp_path, round=0, name="v3")
    assert again.schema_version == 3 and first.path.stat().st_mtime_ns == mtime
    # other rows conflict as over any shard, and overwriting makes it a version-4 shard
    changed = two_trajectories()
    changed[0]["prompt"] = "something else"
    with pytest.raises(ShardConflictError, match="v3"):
        write_shard(changed, tmp_path, round=0, name="v3")
    replaced = write_shard(changed, tmp_path, round=0, name="v3", overwrite=True)
    assert replaced.schema_version == 4
    assert "screen_elements" not in pq.read_schema(first.path).names


def test_default_name_is_content_addressed(tmp_path):
    a = write_shard(two_trajectories(rnd=7), tmp_path, round=7)
    b = write_shard(two_trajectories(rnd=7), tmp_path, round=7)
    assert a.name == b.name and a.name.startswith("round-000007-")
    assert len(list(tmp_path.glob("*.parquet"))) == 1
    with pytest.raises(ValueError, match="bad shard name"):
        write_shard(two_trajectories(rnd=7), tmp_path, round=7, name="../escape")


# --- crashes and quarantine -----------------------------------------------------------------


def _age(path: Path, seconds: float = 3600) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_crash_leftovers_are_quarantined_and_never_read(tmp_path, caplog):
    write_shard(trajectory("good", [1.0]), tmp_path, round=0, name="good")
    # A crash mid-write leaves a temp file; another shard gets truncated on disk.
    bad = write_shard(trajectory("bad", [0.0, 1.0]), tmp_path, round=0, name="bad")
    data = bad.path.read_bytes()
    bad.path.write_bytes(data[: len(data) // 2])
    leftover = tmp_path / ".w3.parquet.tmp-1234abcd"
    leftover.write_bytes(data[:100])
    _age(leftover)
    fresh = tmp_path / ".w4.parquet.tmp-feedbeef"  # a write still in flight: left alone
    fresh.write_bytes(b"partial")
    with caplog.at_level(logging.WARNING, logger="distrl_tasks.data.shards"):
        table = read_shards(tmp_path)
    assert table.column("trajectory_id").to_pylist() == ["good"]
    qdir = tmp_path / QUARANTINE
    assert sorted(p.name for p in qdir.iterdir() if not p.name.endswith(".reason")) == [
        ".w3.parquet.tmp-1234abcd",
        "bad.manifest.json",  # the manifest travels with its broken data file
        "bad.parquet",
    ]
    assert "checksum mismatch" in (qdir / "bad.parquet.reason").read_text()
    assert "bad.parquet" in caplog.text and "checksum mismatch" in caplog.text
    assert "interrupted write" in caplog.text
    assert fresh.exists() and not leftover.exists()


def test_missing_manifest_and_unreadable_parquet_are_quarantined(tmp_path):
    info = write_shard(trajectory("a", [1.0]), tmp_path, round=0, name="nomani")
    info.manifest_path.unlink()
    garbage = b"not a parquet file at all"
    (tmp_path / "junk.parquet").write_bytes(garbage)
    manifest = dict(info.to_json(), name="junk", file="junk.parquet")
    manifest["sha256"] = hashlib.sha256(garbage).hexdigest()
    (tmp_path / "junk.manifest.json").write_text(json.dumps(manifest))
    report = verify_shards(tmp_path)
    reasons = {q.original.name: q.reason for q in report.quarantined}
    assert "missing manifest" in reasons["nomani.parquet"]
    assert "unreadable parquet" in reasons["junk.parquet"]
    assert not report.ok and report.shards == []
    assert read_shards(tmp_path).num_rows == 0
    assert verify_shards(tmp_path).ok  # nothing left to quarantine


def test_orphan_manifest_is_skipped_while_young(tmp_path):
    info = write_shard(trajectory("a", [1.0]), tmp_path, round=0, name="half")
    info.path.unlink()  # crash between manifest and data
    report = verify_shards(tmp_path)
    assert report.ok and report.skipped == [info.manifest_path]
    _age(info.manifest_path)
    assert verify_shards(tmp_path).quarantined[0].original == info.manifest_path
    # Rewriting the shard after the crash works.
    assert write_shard(trajectory("a", [1.0]), tmp_path, round=0, name="half").rows == 1


# --- reading --------------------------------------------------------------------------------


def test_filters_by_round_policy_version_and_split(tmp_path):
    write_shard(trajectory("r0", [1.0], rnd=0, pv=1), tmp_path, round=0)
    r1 = trajectory("r1-train", [1.0], rnd=1, pv=2) + trajectory("r1-test", [0.0], rnd=1, pv=2)
    r1[-1]["split"] = "test"
    write_shard(r1, tmp_path, round=1)
    write_shard(trajectory("r2", [0.0, 1.0], rnd=2, pv=3), tmp_path, round=2)

    def ids(**kw) -> list[str]:
        t = read_shards(tmp_path, **kw)
        return sorted(set(t.column("trajectory_id").to_pylist()))

    assert ids() == ["r0", "r1-test", "r1-train", "r2"]
    assert ids(rounds=[1, 2]) == ["r1-test", "r1-train", "r2"]
    assert ids(policy_versions=[1, 3]) == ["r0", "r2"]
    assert ids(split="test") == ["r1-test"]
    assert ids(rounds=[1], split="train") == ["r1-train"]
    assert ids(rounds=[9]) == []
    cols = read_shards(tmp_path, rounds=[2], columns=["trajectory_id", "step", "reward"])
    assert cols.column_names == ["trajectory_id", "step", "reward"]
    assert cols.column("step").to_pylist() == [0, 1]
    with pytest.raises(SchemaError, match="nope"):
        read_shards(tmp_path, columns=["nope"])


def test_shards_with_different_feature_sizes_are_refused(tmp_path):
    write_shard(trajectory("a", [1.0], dim=4), tmp_path, round=0)
    write_shard(trajectory("b", [1.0], dim=8, rnd=1), tmp_path, round=1)
    assert read_shards(tmp_path, rounds=[1]).num_rows == 1
    with pytest.raises(SchemaError, match="feature size"):
        read_shards(tmp_path)


def test_table_features_are_inferred_and_checked(tmp_path):
    rows = trajectory("a", [0.0, 1.0], dim=3)
    table = pa.Table.from_pylist(rows)  # features arrive as variable-size double lists
    assert write_shard(table, tmp_path, round=0).feature_dim == 3
    bad = np.array([[np.inf, 0, 0], [0, 0, 0]], dtype=np.float16).reshape(-1)
    feats = pa.FixedSizeListArray.from_arrays(pa.array(bad, pa.float16()), 3)
    table = table.set_column(table.column_names.index("image_features"), "image_features", feats)
    with pytest.raises(SchemaError, match=r"image_features.*finite"):
        write_shard(table, tmp_path / "x", round=0)


def test_rewrite_over_a_corrupt_shard_quarantines_it(tmp_path):
    info = write_shard(two_trajectories(), tmp_path, round=0, name="w")
    info.path.write_bytes(b"corrupted")
    again = write_shard(two_trajectories(), tmp_path, round=0, name="w")
    assert again.sha256 == info.sha256 and read_shards(tmp_path).num_rows == 5
    assert (tmp_path / QUARANTINE / "w.parquet").read_bytes() == b"corrupted"
