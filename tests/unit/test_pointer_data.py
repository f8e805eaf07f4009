"""The pointer's elements through the data path (issue 51): the shards' ``elements`` column,
older shards without it, the training batch's observations and the label stage's fallback rate."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from distrl_tasks.algorithms.batch import batch_from_trajectories, batch_from_transitions
from distrl_tasks.analysis.episodes import load_metrics
from distrl_tasks.config import Config
from distrl_tasks.data import schema as S
from distrl_tasks.data.manifest import sha256_file
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.shards import read_shards, write_shard
from distrl_tasks.data.trajectories import discounted_returns
from distrl_tasks.protocol.actions import format_action, swipe, tap
from distrl_tasks.protocol.ui_dump import (
    Element,
    element_rows,
    elements_from_rows,
    pointed_element,
)
from distrl_tasks.stages import common, label
from distrl_tasks.stages.label import pointed_taps, pointer_fallbacks

DIM = 4
GAMMA = Config().algorithm.gamma
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
# awkward points: none of them is exact in float32
SEARCH = Element("Search", (0.0417, 0.3333), True, (0.0521, 0.8889))
ALARM = Element("Alarm", (0.85, 0.05), False, (0.0333, 0.1))
ICON = Element("", (0.9999, 0.0001), False, (0.0123, 0.0457))
ELEMENTS = (SEARCH, ALARM, ICON)


def png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (shade % 256, 0, 0)).save(buf, "PNG")
    return buf.getvalue()


def trajectory(tid: str, elements: list[tuple[Element, ...] | None], rnd: int = 1) -> list[dict]:
    """A successful labeled trajectory of ``len(elements)`` steps; step t offered
    ``elements[t]`` (None: the row has no ``elements`` key, as rows before schema version 3)."""
    n = len(elements)
    returns = discounted_returns([0.0] * (n - 1) + [1.0], GAMMA)
    rows = []
    for t, els in enumerate(elements):
        last = t == n - 1
        row = {
            "trajectory_id": tid,
            "step": t,
            "round": rnd,
            "task": "Set an alarm for 6pm",
            "task_set": "general",
            "split": "train",
            "device": "emulator-5554",
            "policy_version": 0,
            "prompt": f"Previous Actions:  Goal: Set an alarm for 6pm ({tid}{t})",
            "action": f"a{tid}{t}",
            "action_type": "PRESS_BACK",
            "invalid": False,
            "screenshot_png": png(t),
            "final_screenshot_png": png(200) if last else None,
            "image_features": np.full(DIM, float(t)),
            "final_image_features": np.ones(DIM) if last else None,
            "behavior_log_prob": -1.0,
            "reward": 1.0 if last else 0.0,
            "penalty": 0.0,
            "done": last,
            "mc_return": float(returns[t]),
            "trajectory_reward": 1.0,
            "evaluator": "oracle",
            "label_status": "labeled",
            "started_at": T0 + dt.timedelta(seconds=t),
            "ended_at": T0 + dt.timedelta(seconds=t + 1),
        }
        if els is not None:
            row["elements"] = element_rows(els) or None  # as runners/trajectory.py writes it
        rows.append(row)
    return rows


def pointer_rows(rnd: int = 1) -> list[dict]:
    # step 1 of "a": a failed dump (the pointer was on, nothing to point at)
    return trajectory("a", [ELEMENTS, (), (ALARM,)], rnd) + trajectory("b", [(ICON, SEARCH)], rnd)


def test_the_elements_column_round_trips_through_a_shard(tmp_path) -> None:
    field = S.trajectory_schema(DIM).field("elements")
    assert field.nullable and pa.types.is_list(field.type)
    assert [f.name for f in field.type.value_type] == [
        "label", "y", "x", "height", "width", "editable"
    ]  # fmt: skip
    names = list(S.COLUMN_NAMES)
    assert names.index("elements") == names.index("prompt") + 1
    table = S.validate_table(S.table_from_rows(pointer_rows(), DIM), DIM)
    assert table.schema.field("elements").type == field.type
    info = write_shard(table, tmp_path, round=1, feature_dim=DIM)
    assert info.schema_version == S.SCHEMA_VERSION
    back = read_shards(tmp_path)
    got = [elements_from_rows(r) for r in back.column("elements").to_pylist()]
    assert got == [ELEMENTS, (), (ALARM,), (ICON, SEARCH)]  # points exact to 4 decimals
    assert got[0][0].tap_action() == SEARCH.tap_action()
    # plain pandas reads it too
    cells = pd.read_parquet(info.path).sort_values(["trajectory_id", "step"])["elements"]
    assert cells.iloc[1] is None and [c["label"] for c in cells.iloc[0]] == ["Search", "Alarm", ""]


def test_bad_elements_are_refused_naming_the_column() -> None:
    rows = pointer_rows()
    rows[0]["elements"] = [{"label": "x", "y": "high"}]
    with pytest.raises(S.SchemaError, match="'elements'"):
        S.table_from_rows(rows, DIM)


def version_2_shard(directory) -> None:
    """A shard as schema version 2 wrote it: no ``elements`` column, version 2 in its manifest."""
    info = write_shard(trajectory("a", [None, None]), directory, round=1, feature_dim=DIM)
    old = pq.read_table(info.path).drop_columns(["elements"])
    pq.write_table(old, info.path, compression="zstd", store_schema=False)
    manifest = json.loads(info.manifest_path.read_text())
    manifest.update(schema_version=2, sha256=sha256_file(info.path))
    info.manifest_path.write_text(json.dumps(manifest))


def test_shards_of_schema_version_2_read_with_the_elements_null(tmp_path) -> None:
    version_2_shard(tmp_path)
    assert "elements" not in pq.read_schema(next(tmp_path.glob("*.parquet"))).names
    back = read_shards(tmp_path)
    assert back.num_rows == 2 and back.column("elements").null_count == 2
    assert read_shards(tmp_path, columns=["trajectory_id", "elements"]).num_rows == 2
    # a version-2 table without the column conforms, the column null
    old = S.table_from_rows(trajectory("b", [None]), DIM)
    assert "elements" not in old.column_names
    assert S.validate_table(old, DIM).column("elements").null_count == 1
    # and the batch built from it offers the policy no elements
    replay = ReplayBuffer(10, seed=0)
    replay.extend(back)
    b = batch_from_trajectories(replay, [0])
    assert b.elements is None
    assert [o.elements for o in b.observations(b.flat_index())] == [(), ()]


def test_batch_observations_carry_the_elements_of_their_rows() -> None:
    replay = ReplayBuffer(10, seed=0)
    replay.extend(S.table_from_rows(pointer_rows(), DIM))
    b = batch_from_trajectories(replay, [0, 1])
    assert (b.batch_size, b.length) == (2, 3)
    assert b.elements is not None and len(b.elements) == len(b.prompts) == 6
    obs = b.observations(b.flat_index())
    assert [o.prompt for o in obs] == [b.prompts[i] for i in (0, 1, 2, 3)]
    assert [o.elements for o in obs] == [ELEMENTS, (), (ALARM,), (ICON, SEARCH)]
    assert obs[0].elements[0].point == (0.0417, 0.3333)  # exact, as the action format spells it
    assert obs[3].elements[1].size == (0.0521, 0.8889)
    # a padded step repeats the last real one (layout of the batch), never offsetting the rest
    assert b.elements[4] == b.elements[5] == (ICON, SEARCH)
    # single transitions (T = 1) too
    rows = replay.trajectory(0).slice(2, 1)
    tb = dataclasses.replace(
        replay.sample_transitions(1),
        rows=rows,
        slots=np.array([0]),
        steps=np.array([2]),
        weights=np.ones(1, dtype=np.float32),
    )
    one = batch_from_transitions(tb, replay)
    assert [o.elements for o in one.observations(one.flat_index())] == [(ALARM,)]


def test_pointer_fallbacks_count_steps_without_elements() -> None:
    table = S.validate_table(S.table_from_rows(pointer_rows(), DIM), DIM)
    assert pointer_fallbacks(table) == 1  # the failed dump
    empty = table.set_column(
        table.schema.get_field_index("elements"),
        "elements",
        pa.array([element_rows(ELEMENTS), [], None, []], type=table.schema.field("elements").type),
    )
    assert pointer_fallbacks(empty) == 3  # null and empty lists both count
    assert pointer_fallbacks(table.drop_columns(["elements"])) == table.num_rows


def test_the_label_stage_logs_the_pointer_fallback_rate(tmp_path) -> None:
    on = Config()  # the pointer is on by default
    off = dataclasses.replace(on, agent=dataclasses.replace(on.agent, pointer=False))
    raw = common.raw_dir(on, tmp_path)
    write_shard(pointer_rows(1), raw, round=1, feature_dim=DIM)
    write_shard(trajectory("c", [(ALARM,), None], 1), raw, round=1, feature_dim=DIM)
    manifest = label.run(on, round=1, workdir=tmp_path)
    assert manifest["pointer_fallback_rate"] == pytest.approx(2 / 6)  # a's failed dump, c's last
    # the pointer off: no such metric
    write_shard(pointer_rows(2), raw, round=2, feature_dim=DIM)
    assert "pointer_fallback_rate" not in label.run(off, round=2, workdir=tmp_path)
    metrics = load_metrics(off, tmp_path)
    logged = metrics[metrics["key"] == "rollout/pointer_fallback_rate"]
    assert logged[["round", "value"]].values.tolist() == [[1, pytest.approx(2 / 6)]]
    assert set(metrics[metrics["key"] == "rollout/trajectories"]["round"]) == {1, 2}


def _tap(element: Element) -> str:
    return format_action(tap(*element.point))


def test_pointed_taps_are_the_taps_on_a_listed_centre() -> None:
    rows = trajectory("p", [ELEMENTS, ELEMENTS, (ALARM,)]) + trajectory("w", [ELEMENTS])
    actions = [_tap(ALARM), format_action(tap(0.5, 0.5)), format_action(tap(0.5, 0.5)),
               _tap(SEARCH)]  # fmt: skip
    for row, action in zip(rows, actions, strict=True):
        row["action"], row["action_type"] = action, "DUAL_POINT"
    rows[2]["elements"] = None  # a tap with no elements listed is no tap the pointer saw
    table = S.validate_table(S.table_from_rows(rows, DIM), DIM)
    taps, hits, episodes = pointed_taps(table)
    assert (taps, hits, episodes) == (3, 2, {"p", "w"})
    assert pointed_element(_tap(ICON), ELEMENTS) == 2
    assert pointed_element(format_action(swipe(*ALARM.point, 0.1, 0.1)), ELEMENTS) is None
    assert pointed_element(_tap(ALARM), ()) is None


def test_the_label_stage_reports_pointing_and_its_success_per_family(tmp_path) -> None:
    on = dataclasses.replace(Config(), agent=dataclasses.replace(Config().agent, pointer=True))
    rows = trajectory("p", [ELEMENTS, ELEMENTS]) + trajectory("w", [ELEMENTS])
    for row, action in zip(rows, [_tap(ALARM), _tap(SEARCH), format_action(tap(0.5, 0.5))],
                           strict=True):  # fmt: skip
        row["action"], row["action_type"] = action, "DUAL_POINT"
    write_shard(rows, common.raw_dir(on, tmp_path), round=1, feature_dim=DIM)
    label.run(on, round=1, workdir=tmp_path)
    metrics = load_metrics(on, tmp_path)
    value = dict(zip(metrics["key"], metrics["value"], strict=True))
    assert value["rollout/pointer_tap_share"] == pytest.approx(2 / 3)
    assert value["rollout/explore_episode_share"] == pytest.approx(1 / 2)  # "p" pointed
    assert value["rollout/explore_success/set_alarm"] == 1.0
