"""Parquet trajectory shards: atomic, checksummed, idempotent writes and defensive reads.

A shard is ``<name>.parquet`` plus ``<name>.manifest.json`` in one directory. Writing puts the
manifest down first and the Parquet file second, each through a temp file in the same directory,
``fsync`` and ``os.replace``. A crash therefore leaves either a temp file or a manifest without
data, never a Parquet file without a manifest. Readers verify each shard (manifest present,
SHA-256 matches, Parquet footer readable) and move anything that fails into ``quarantine/`` with
a logged reason, so broken data is never read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from distrl_tasks.data.manifest import (
    MANIFEST_SUFFIX,
    Quarantined,
    ShardInfo,
    VerifyReport,
    read_manifest,
    sha256_file,
)
from distrl_tasks.data.schema import (
    COLUMN_NAMES,
    FEATURES,
    FINAL_FEATURES,
    SCHEMA_VERSION,
    SchemaError,
    feature_dim_of,
    table_from_rows,
    trajectory_schema,
    validate_table,
)
from distrl_tasks.data.trajectories import check_returns
from distrl_tasks.protocol.files import TEMP_MARKER, atomic_write

log = logging.getLogger(__name__)

QUARANTINE = "quarantine"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ShardConflictError(FileExistsError):
    """A shard with this name exists and holds different content."""


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    # store_schema=False: pyarrow < 26 cannot read back a fixed-size list column holding nulls
    # from its own stored Arrow schema. The Parquet types stay lossless; readers here cast to
    # trajectory_schema, and plain pandas/pyarrow readers see variable-length lists.
    pq.write_table(
        table,
        sink,
        compression="zstd",
        row_group_size=max(table.num_rows, 1),
        store_schema=False,
    )
    return sink.getvalue().to_pybytes()


def _infer_feature_dim(data: pa.Table | Sequence[Mapping]) -> int | None:
    if isinstance(data, pa.Table):
        dim = feature_dim_of(data)
        if dim is not None or FEATURES not in data.column_names:
            return dim
        values = data.column(FEATURES).drop_null()
        return len(values[0]) if len(values) else None
    for row in data:
        for key in (FEATURES, FINAL_FEATURES):
            if isinstance(row, Mapping) and row.get(key) is not None:
                return int(np.asarray(row[key]).size)
    return None


def _prepare(
    data: pa.Table | Sequence[Mapping], round_: int, feature_dim: int | None
) -> tuple[pa.Table, int]:
    """Turn rows or a table into a validated, canonically ordered table."""
    inferred = _infer_feature_dim(data)
    if feature_dim is not None and inferred is not None and inferred != feature_dim:
        raise SchemaError(
            f"column '{FEATURES}': data has size {inferred}, feature_dim={feature_dim}"
        )
    dim = feature_dim if feature_dim is not None else inferred
    if dim is None:
        raise SchemaError(f"column '{FEATURES}': no feature vectors to size it; pass feature_dim=")
    table = data if isinstance(data, pa.Table) else table_from_rows(list(data), dim)
    if table.num_rows == 0:
        raise SchemaError("a shard needs at least one row")
    if "round" not in table.column_names:
        table = table.append_column("round", pa.array([round_] * table.num_rows, pa.int32()))
    table = validate_table(table, dim)
    rounds = set(table.column("round").to_pylist())
    if rounds != {round_}:
        raise SchemaError(f"column 'round': rows hold rounds {sorted(rounds)}, expected {round_}")
    return table.combine_chunks(), dim


def _make_info(table: pa.Table, path: Path, sha: str, dim: int, gamma: float | None) -> ShardInfo:
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ShardInfo(
        name=path.name.removesuffix(".parquet"),
        path=path,
        rows=table.num_rows,
        trajectories=len(set(table.column("trajectory_id").to_pylist())),
        sha256=sha,
        rounds=tuple(sorted(set(table.column("round").to_pylist()))),
        policy_versions=tuple(sorted(set(table.column("policy_version").to_pylist()))),
        splits=tuple(sorted(set(table.column("split").to_pylist()))),
        feature_dim=dim,
        schema_version=SCHEMA_VERSION,
        created_at=created,
        gamma=gamma,
    )


def _same_content(path: Path, existing: ShardInfo, sha: str, table: pa.Table) -> bool:
    """Whether the (checksum-verified) shard at ``path`` holds exactly ``table``, read as
    :func:`read_shards` reads it (a shard of an older schema version through today's columns)."""
    if existing.sha256 == sha:
        return True
    # Same rows written by another pyarrow version can differ in bytes: compare values.
    try:
        stored = ds.dataset([str(path)], format="parquet", schema=table.schema).to_table()
    except (pa.ArrowException, OSError):
        return False
    return stored.equals(table)


def write_shard(
    data: pa.Table | Sequence[Mapping],
    directory: str | os.PathLike,
    *,
    round: int,
    name: str | None = None,
    feature_dim: int | None = None,
    gamma: float | None = None,
    overwrite: bool = False,
) -> ShardInfo:
    """Validate trajectory rows and write them as one shard, atomically.

    Args:
        data: A pyarrow Table or a sequence of row dicts (schema columns only).
        directory: Shard directory (created if missing).
        round: Collection round; a missing ``round`` column is filled with it, a present one
            must equal it.
        name: Shard name (``[A-Za-z0-9][A-Za-z0-9_.-]*``); default ``round-RRRRRR-<sha prefix>``.
        feature_dim: Size of ``image_features``; inferred from the data when omitted.
        gamma: When given, labeled ``mc_return`` values must equal the discounted reward-to-go.
        overwrite: Replace an existing shard of this name with different content.

    Returns:
        The shard's manifest. Rewriting identical content returns the existing manifest.

    Raises:
        SchemaError: the data does not match the schema (the message names the column).
        ShardConflictError: the name exists with other content and ``overwrite`` is False.
    """
    table, dim = _prepare(data, round, feature_dim)
    if gamma is not None:
        check_returns(table, gamma)
    payload = _parquet_bytes(table)
    sha = hashlib.sha256(payload).hexdigest()
    name = name if name is not None else f"round-{round:06d}-{sha[:16]}"
    if not _NAME.match(name) or name.endswith(".parquet"):
        raise ValueError(f"bad shard name {name!r}: use letters, digits, '_', '.', '-'")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.parquet"
    manifest = directory / f"{name}{MANIFEST_SUFFIX}"
    if path.exists():
        try:
            existing: ShardInfo | None = read_manifest(manifest)
        except (OSError, ValueError, KeyError, TypeError):
            existing = None
        if existing is None or sha256_file(path) != existing.sha256:
            _quarantine(path, "broken shard (manifest missing or checksum mismatch) at rewrite")
        elif _same_content(path, existing, sha, table):
            return existing  # identical rewrite: idempotent no-op
        elif not overwrite:
            raise ShardConflictError(
                f"shard {name!r} already exists in {directory} with different content "
                f"(sha256 {existing.sha256[:12]} vs {sha[:12]}); pass overwrite=True"
            )
        else:
            path.unlink()  # readers now see an orphan manifest (skipped), never a mismatched pair
    info = _make_info(table, path, sha, dim, gamma)
    atomic_write(manifest, (json.dumps(info.to_json(), indent=2) + "\n").encode())
    atomic_write(path, payload)
    return info


def _quarantine(path: Path, reason: str) -> Quarantined:
    """Move ``path`` into ``quarantine/`` beside it, with a ``.reason`` note; log a warning."""
    qdir = path.parent / QUARANTINE
    qdir.mkdir(exist_ok=True)
    dest = qdir / path.name
    n = 0
    while dest.exists():
        n += 1
        dest = qdir / f"{path.name}.{n}"
    os.replace(path, dest)
    dest.with_name(dest.name + ".reason").write_text(reason + "\n")
    manifest = path.with_name(path.name.removesuffix(".parquet") + MANIFEST_SUFFIX)
    if path.suffix == ".parquet" and manifest.exists():
        os.replace(manifest, qdir / (dest.name.removesuffix(".parquet") + MANIFEST_SUFFIX))
    log.warning("quarantined shard file %s -> %s: %s", path, dest, reason)
    return Quarantined(path, dest, reason)


def _check_shard(path: Path) -> tuple[ShardInfo | None, str | None]:
    """Return (manifest, None) for a sound shard or (None, reason) for a broken one."""
    manifest = path.with_name(path.name.removesuffix(".parquet") + MANIFEST_SUFFIX)
    if not manifest.exists():
        return None, f"missing manifest {manifest.name}"
    try:
        info = read_manifest(manifest)
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable manifest {manifest.name}: {exc}"
    if info.schema_version > SCHEMA_VERSION:
        raise SchemaError(
            f"shard {path} has schema version {info.schema_version}; this code reads up to "
            f"{SCHEMA_VERSION}: upgrade distrl_tasks"
        )
    actual = sha256_file(path)
    if actual != info.sha256:
        return None, f"checksum mismatch: manifest {info.sha256[:12]}, file {actual[:12]}"
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowException, OSError) as exc:
        return None, f"unreadable parquet: {exc}"
    if meta.num_rows != info.rows:
        return None, f"row count mismatch: manifest {info.rows}, file {meta.num_rows}"
    return info, None


def verify_shards(directory: str | os.PathLike, *, temp_grace_s: float = 300.0) -> VerifyReport:
    """Check every shard in ``directory`` and quarantine what is broken.

    Broken means: a Parquet file without (or with an unreadable) manifest, a checksum or row
    count mismatch, an unreadable Parquet footer, or a temp file older than ``temp_grace_s``
    (left by an interrupted write). Younger temp files and manifests whose Parquet file is not
    there yet belong to writes in flight and are only skipped.
    """
    directory = Path(directory)
    report = VerifyReport()
    if not directory.is_dir():
        return report
    now = time.time()
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        try:
            age = now - path.stat().st_mtime
            if TEMP_MARKER in path.name:
                if age > temp_grace_s:
                    reason = "leftover temp file from an interrupted write"
                    report.quarantined.append(_quarantine(path, reason))
                else:
                    report.skipped.append(path)
            elif path.name.endswith(MANIFEST_SUFFIX):
                data = path.with_name(path.name.removesuffix(MANIFEST_SUFFIX) + ".parquet")
                if not data.exists():
                    if age > temp_grace_s:
                        reason = "manifest without a Parquet file (interrupted write)"
                        report.quarantined.append(_quarantine(path, reason))
                    else:
                        report.skipped.append(path)
            elif path.suffix == ".parquet":
                info, reason = _check_shard(path)
                if info is not None:
                    report.shards.append(info)
                else:
                    report.quarantined.append(_quarantine(path, str(reason)))
        except FileNotFoundError:
            report.skipped.append(path)  # removed by a concurrent writer mid-check
    report.shards.sort(key=lambda s: (min(s.rounds), s.name))
    return report


def read_shards(
    directory: str | os.PathLike,
    *,
    rounds: Sequence[int] | None = None,
    policy_versions: Sequence[int] | None = None,
    split: str | None = None,
    columns: Sequence[str] | None = None,
    temp_grace_s: float = 300.0,
) -> pa.Table:
    """Read verified shards as one table, filtered by round, policy version and split.

    Broken shards are quarantined first (see :func:`verify_shards`) and never read. Rows come
    back ordered by (round, trajectory_id, step) when those columns are selected.
    """
    report = verify_shards(directory, temp_grace_s=temp_grace_s)
    return read_verified(
        report.shards, rounds=rounds, policy_versions=policy_versions, split=split, columns=columns
    )


def read_verified(
    shards: Sequence[ShardInfo],
    *,
    rounds: Sequence[int] | None = None,
    policy_versions: Sequence[int] | None = None,
    split: str | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Like :func:`read_shards`, over shards that :func:`verify_shards` already accepted."""
    if columns is not None:
        unknown = sorted(set(columns) - set(COLUMN_NAMES))
        if unknown:
            raise SchemaError(f"unknown column(s) {unknown} requested")
    chosen = [
        s
        for s in shards
        if (rounds is None or set(s.rounds) & set(rounds))
        and (policy_versions is None or set(s.policy_versions) & set(policy_versions))
        and (split is None or split in s.splits)
    ]
    dims = sorted({s.feature_dim for s in chosen})
    if len(dims) > 1:
        raise SchemaError(f"column '{FEATURES}': shards disagree on the feature size {dims}")
    schema = trajectory_schema(dims[0] if dims else 0)
    if not chosen:
        empty = schema.empty_table()
        return empty.select(list(columns)) if columns is not None else empty
    expr = None
    for cond in (
        None if rounds is None else ds.field("round").isin(list(rounds)),
        None if policy_versions is None else ds.field("policy_version").isin(list(policy_versions)),
        None if split is None else ds.field("split") == split,
    ):
        if cond is not None:
            expr = cond if expr is None else expr & cond
    dataset = ds.dataset([str(s.path) for s in chosen], format="parquet", schema=schema)
    table = dataset.to_table(columns=list(columns) if columns is not None else None, filter=expr)
    keys = [k for k in ("round", "trajectory_id", "step") if k in table.column_names]
    return table.sort_by([(k, "ascending") for k in keys]) if keys else table
