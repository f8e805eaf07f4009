"""Trajectory data: the shard schema, Parquet shards on disk and the replay buffers."""

from distrl_tasks.data.replay import ReplayBuffer, SequenceBatch, TransitionBatch
from distrl_tasks.data.schema import (
    COLUMNS,
    SCHEMA_VERSION,
    SchemaError,
    schema_markdown,
    trajectory_schema,
    validate_table,
)
from distrl_tasks.data.shards import (
    ShardConflictError,
    ShardInfo,
    VerifyReport,
    read_shards,
    verify_shards,
    write_shard,
)
from distrl_tasks.data.sumtree import SumTree
from distrl_tasks.data.trajectories import (
    add_returns,
    discounted_returns,
    group_trajectories,
    observations,
)

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "ReplayBuffer",
    "SchemaError",
    "SequenceBatch",
    "ShardConflictError",
    "ShardInfo",
    "SumTree",
    "TransitionBatch",
    "VerifyReport",
    "add_returns",
    "discounted_returns",
    "group_trajectories",
    "observations",
    "read_shards",
    "schema_markdown",
    "trajectory_schema",
    "validate_table",
    "verify_shards",
    "write_shard",
]
