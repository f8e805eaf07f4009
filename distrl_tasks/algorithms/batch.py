"""The training batch: replay rows (pyarrow) turned into padded ``[B, T]`` tensors.

A :class:`Batch` holds ``B`` windows of ``T`` contiguous steps, each inside one trajectory
(``T = 1`` for single transitions, ``T`` = the longest trajectory for whole trajectories), in
the layout of :class:`~distrl_tasks.data.replay.SequenceBatch`: flat per-step lists are
row-major, entry ``b * T + t`` is step ``starts[b] + t`` of window ``b``, and padded steps
(``mask`` False) repeat the last real step and must be ignored.

Three converters share one assembly path: :func:`batch_from_sequences`,
:func:`batch_from_transitions` and :func:`batch_from_trajectories`. Besides the sampled rows they
read the stored trajectory of each window (``replay.trajectory(slot)``) for what lies outside
the window: the frame before it (the step critic sees two frames), the trajectory's final reward
``r_H`` and its length.

The next state of step ``t`` is step ``t + 1``; after the last step it is the final observation
(``final_image_features``), whose value is always multiplied by ``1 - done = 0`` by the
algorithms, so when that column is null the current frame stands in for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import pyarrow as pa
import torch

from distrl_tasks.data.replay import ReplayBuffer, SequenceBatch, TransitionBatch
from distrl_tasks.protocol.observation import Observation
from distrl_tasks.protocol.ui_dump import Element, elements_from_rows

DEFAULT_HORIZONS: Mapping[str, int] = {"general": 10, "webshop": 20}
"""Step budget per task set (``env.horizon_general`` / ``env.horizon_webshop``)."""

Featurizer = Callable[[Sequence[bytes]], np.ndarray]
"""Maps PNG bytes to ``[N, D]`` features; used only for rows stored without features."""


@dataclass
class Batch:
    """``B`` windows of ``T`` steps as tensors (see the module docstring for the layout).

    Attributes:
        prompts: ``B*T`` policy prompts of the states ``s_t``.
        actions: ``B*T`` raw action texts ``a_t``.
        next_prompts: ``B*T`` prompts of ``s_{t+1}`` (the same prompt after the last step).
        tasks: ``B`` goal texts (the instruction critic's input).
        features: ``[B, T, D]`` float32 features of the frame of ``s_t``.
        prev_features: ``[B, T, D]`` features of the frame before ``s_t`` (zeros at step 0).
        next_features: ``[B, T, D]`` features of the frame of ``s_{t+1}``.
        rewards: ``[B, T]`` evaluator rewards ``r_t``.
        penalties: ``[B, T]`` environment penalties (``<= 0``).
        dones: ``[B, T]`` bool, True on a trajectory's last step.
        mask: ``[B, T]`` bool, True on real (not padded) steps.
        invalid: ``[B, T]`` bool, True where the action failed to parse.
        behavior_log_probs: ``[B, T]`` ``log mu(a_t|s_t)`` stored by the actor.
        steps: ``[B, T]`` int64 step index ``h`` (0-based) inside the trajectory.
        policy_versions: ``[B]`` int64 behaviour policy version of each window.
        weights: ``[B]`` float32 importance weights of prioritized sampling (1 = uniform).
        final_rewards: ``[B]`` final reward ``r_H`` of each window's trajectory.
        lengths: ``[B]`` int64 number of steps of each window's trajectory.
        horizons: ``[B]`` int64 step budget of each window's task set.
        slots: ``[B]`` replay slots (for ``ReplayBuffer.update_priorities``).
        starts: ``[B]`` first step of each window.
        actor_rows: ``[B]`` bool, windows the policy loss uses (algorithms' filters).
        critic_rows: ``[B]`` bool, windows the critic losses use.
        screenshots: the rows' ``screenshot_png`` column (``B*T`` PNGs of the frames of ``s_t``,
            read only by :meth:`observations`, for policies that read pixels: the VLM), or None.
        elements: ``B*T`` actionable elements the pointer chose from at ``s_t`` (the rows'
            ``elements`` column, ``()`` where null), or None when no row carries any (the
            pointer was off, or shards older than schema version 3).
    """

    prompts: list[str]
    actions: list[str]
    next_prompts: list[str]
    tasks: list[str]
    features: torch.Tensor
    prev_features: torch.Tensor
    next_features: torch.Tensor
    rewards: torch.Tensor
    penalties: torch.Tensor
    dones: torch.Tensor
    mask: torch.Tensor
    invalid: torch.Tensor
    behavior_log_probs: torch.Tensor
    steps: torch.Tensor
    policy_versions: torch.Tensor
    weights: torch.Tensor
    final_rewards: torch.Tensor
    lengths: torch.Tensor
    horizons: torch.Tensor
    slots: np.ndarray
    starts: np.ndarray
    actor_rows: torch.Tensor
    critic_rows: torch.Tensor
    screenshots: pa.ChunkedArray | None = None
    elements: list[tuple[Element, ...]] | None = None

    @property
    def batch_size(self) -> int:
        """Number of windows ``B``."""
        return int(self.mask.shape[0])

    @property
    def length(self) -> int:
        """Window length ``T``."""
        return int(self.mask.shape[1])

    def to(self, device: str | torch.device) -> Batch:
        """A copy with every tensor on ``device``."""
        moved = {
            f.name: getattr(self, f.name).to(device)
            for f in fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
        }
        return replace(self, **moved)

    def flat_index(self, select: torch.Tensor | None = None) -> torch.Tensor:
        """Flat (``b * T + t``) indices of the real steps, optionally only where ``select``."""
        keep = self.mask if select is None else self.mask & select
        return torch.nonzero(keep.reshape(-1).cpu(), as_tuple=False).squeeze(1)

    def observations(self, index: torch.Tensor) -> list[Observation]:
        """Policy observations (prompt, current frame, elements) of the steps at flat ``index``."""
        feats = self.features.reshape(-1, self.features.shape[-1])
        shots, elements = self.screenshots, self.elements

        def png(i: int) -> bytes | None:
            return None if shots is None else shots[i].as_py()

        return [
            Observation(
                self.prompts[i], feats[i], png(i), elements=() if elements is None else elements[i]
            )
            for i in index.tolist()
        ]

    def action_texts(self, index: torch.Tensor) -> list[str]:
        """Action texts of the steps at flat ``index``."""
        return [self.actions[i] for i in index.tolist()]


def _features(
    table: pa.Table, column: str, png_column: str, featurize: Featurizer | None
) -> tuple[np.ndarray, np.ndarray]:
    """``[N, D]`` float32 features and a ``[N]`` bool "present" flag for each row.

    Rows whose features are null are encoded from their PNG when ``featurize`` is given.
    """
    if column not in table.column_names:
        raise ValueError(f"replay rows have no '{column}' column; the batch needs image features")
    col = table.column(column).combine_chunks()
    if not pa.types.is_fixed_size_list(col.type):
        raise ValueError(f"column '{column}' must be a fixed-size list, got {col.type}")
    size = col.type.list_size
    flat = col.values.to_numpy(zero_copy_only=False).astype(np.float32)
    out = flat[col.offset * size : (col.offset + len(col)) * size].reshape(len(col), size).copy()
    present = ~col.is_null().to_numpy(zero_copy_only=False)
    missing = np.flatnonzero(~present)
    if len(missing) and featurize is not None and png_column in table.column_names:
        pngs = table.column(png_column).to_pylist()
        todo = [i for i in missing if pngs[i] is not None]
        if todo:
            out[todo] = np.asarray(featurize([pngs[i] for i in todo]), dtype=np.float32)
            present[todo] = True
    out[~present] = 0.0
    return out, present


def _elements(table: pa.Table) -> list[tuple[Element, ...]] | None:
    """Each row's pointer elements (``()`` where null), or None when the ``elements`` column is
    missing (shards older than schema version 3) or null on every row (the pointer was off)."""
    if "elements" not in table.column_names:
        return None
    col = table.column("elements")
    if col.null_count == len(col):
        return None
    return [elements_from_rows(r) for r in col.to_pylist()]


def _column(table: pa.Table, name: str) -> np.ndarray:
    if name not in table.column_names:
        raise ValueError(f"replay rows have no '{name}' column")
    return table.column(name).to_numpy(zero_copy_only=False)


def _assemble(
    rows: pa.Table,
    next_rows: pa.Table,
    mask: np.ndarray,
    slots: np.ndarray,
    starts: np.ndarray,
    weights: np.ndarray,
    replay: ReplayBuffer,
    horizons: Mapping[str, int],
    featurize: Featurizer | None,
) -> Batch:
    """Shared conversion of window rows (``B*T``) plus per-window next rows into a Batch."""
    b, t = mask.shape
    if rows.num_rows != b * t or next_rows.num_rows != b:
        raise ValueError(f"expected {b * t} rows and {b} next rows for [B, T] = [{b}, {t}]")
    reward_col = rows.column("reward") if "reward" in rows.column_names else None
    if reward_col is None or reward_col.null_count:
        raise ValueError(
            "replay rows have null 'reward': train only on labeled trajectories "
            "(label them first, or build the replay with labeled_only=True)"
        )
    feats, present = _features(rows, "image_features", "screenshot_png", featurize)
    if not present.all():
        raise ValueError("some replay rows have null 'image_features' and no featurizer was given")
    dim = feats.shape[1]
    feats = feats.reshape(b, t, dim)
    dones = _column(rows, "done").astype(bool).reshape(b, t)
    penalties = _column(rows, "penalty").astype(np.float32).reshape(b, t)
    if np.any(penalties > 0):
        raise ValueError("column 'penalty' must be <= 0 (penalties are stored as negative rewards)")
    prompts = [str(p) for p in _column(rows, "prompt")]

    prev = np.zeros_like(feats)
    prev[:, 1:] = feats[:, :-1]
    lengths = np.zeros(b, dtype=np.int64)
    final_rewards = np.zeros(b, dtype=np.float32)
    tasks: list[str] = []
    task_sets: list[str] = []
    versions = np.zeros(b, dtype=np.int64)
    final_feats = np.zeros((b, dim), dtype=np.float32)
    has_final = np.zeros(b, dtype=bool)
    for i, slot in enumerate(slots.tolist()):
        traj = replay.trajectory(int(slot))
        lengths[i] = traj.num_rows
        final_rewards[i] = float(traj.column("reward")[traj.num_rows - 1].as_py())
        tasks.append(str(traj.column("task")[0].as_py()))
        task_sets.append(str(traj.column("task_set")[0].as_py()))
        versions[i] = int(traj.column("policy_version")[0].as_py())
        if starts[i] > 0:
            before_row = traj.slice(int(starts[i]) - 1, 1)
            before, ok = _features(before_row, "image_features", "screenshot_png", featurize)
            prev[i, 0] = before[0] if ok[0] else 0.0
        if "final_image_features" in traj.column_names:
            last = traj.slice(traj.num_rows - 1, 1)
            fin, ok = _features(last, "final_image_features", "final_screenshot_png", featurize)
            final_feats[i], has_final[i] = fin[0], ok[0]
    unknown = sorted({s for s in task_sets if s not in horizons})
    if unknown:
        raise ValueError(f"no horizon for task set(s) {unknown}; known: {sorted(horizons)}")

    next_feats = np.zeros_like(feats)
    next_feats[:, :-1] = feats[:, 1:]
    after, _ = _features(next_rows, "image_features", "screenshot_png", featurize)
    next_feats[:, -1] = after
    next_prompts = list(prompts)
    after_prompts = [str(p) for p in _column(next_rows, "prompt")]
    for i in range(b):
        for j in range(t):
            k = i * t + j
            if j + 1 < t and mask[i, j + 1]:
                next_prompts[k] = prompts[k + 1]
            elif not dones[i, j]:
                next_prompts[k] = after_prompts[i]  # the step just after the window
                next_feats[i, j] = after[i]
            else:  # last step: the final observation (its value is discounted away)
                next_feats[i, j] = final_feats[i] if has_final[i] else feats[i, j]

    mask_t = torch.as_tensor(mask, dtype=torch.bool)
    zero = torch.zeros((b, t))
    rewards = torch.as_tensor(_column(rows, "reward").astype(np.float32).reshape(b, t))
    shots = rows.column("screenshot_png") if "screenshot_png" in rows.column_names else None
    return Batch(
        screenshots=shots,
        elements=_elements(rows),
        prompts=prompts,
        actions=[str(a) for a in _column(rows, "action")],
        next_prompts=next_prompts,
        tasks=tasks,
        features=torch.as_tensor(feats),
        prev_features=torch.as_tensor(prev),
        next_features=torch.as_tensor(next_feats),
        rewards=torch.where(mask_t, rewards, zero),
        penalties=torch.where(mask_t, torch.as_tensor(penalties), zero),
        dones=torch.as_tensor(dones) & mask_t,
        mask=mask_t,
        invalid=torch.as_tensor(_column(rows, "invalid").astype(bool).reshape(b, t)) & mask_t,
        behavior_log_probs=torch.as_tensor(
            _column(rows, "behavior_log_prob").astype(np.float32).reshape(b, t)
        ),
        steps=torch.as_tensor(_column(rows, "step").astype(np.int64).reshape(b, t)),
        policy_versions=torch.as_tensor(versions),
        weights=torch.as_tensor(np.asarray(weights, dtype=np.float32)),
        final_rewards=torch.as_tensor(final_rewards),
        lengths=torch.as_tensor(lengths),
        horizons=torch.as_tensor([horizons[s] for s in task_sets], dtype=torch.int64),
        slots=np.asarray(slots, dtype=np.int64),
        starts=np.asarray(starts, dtype=np.int64),
        actor_rows=torch.ones(b, dtype=torch.bool),
        critic_rows=torch.ones(b, dtype=torch.bool),
    )


def batch_from_sequences(
    seq: SequenceBatch,
    replay: ReplayBuffer,
    *,
    horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    featurize: Featurizer | None = None,
) -> Batch:
    """Convert windows from ``ReplayBuffer.sample_sequences`` (same buffer, not yet changed)."""
    return _assemble(
        seq.rows,
        seq.next_rows,
        seq.mask,
        seq.slots,
        seq.starts,
        seq.weights,
        replay,
        horizons,
        featurize,
    )


def batch_from_transitions(
    tb: TransitionBatch,
    replay: ReplayBuffer,
    *,
    horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    featurize: Featurizer | None = None,
) -> Batch:
    """Convert single steps from ``ReplayBuffer.sample_transitions`` into a ``T = 1`` batch."""
    nexts = []
    for slot, step in zip(tb.slots.tolist(), tb.steps.tolist(), strict=True):
        traj = replay.trajectory(int(slot))
        nexts.append(traj.slice(min(int(step) + 1, traj.num_rows - 1), 1))
    mask = np.ones((len(tb.slots), 1), dtype=bool)
    return _assemble(
        tb.rows,
        pa.concat_tables(nexts).combine_chunks(),
        mask,
        tb.slots,
        tb.steps,
        tb.weights,
        replay,
        horizons,
        featurize,
    )


def batch_from_trajectories(
    replay: ReplayBuffer,
    slots: Sequence[int] | np.ndarray,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    featurize: Featurizer | None = None,
) -> Batch:
    """Whole trajectories (windows from step 0, ``T`` = the longest), right-padded."""
    slots = np.asarray(slots, dtype=np.int64).reshape(-1)
    if len(slots) == 0:
        raise ValueError("batch_from_trajectories needs at least one slot")
    trajs = [replay.trajectory(int(s)) for s in slots]
    t = max(tr.num_rows for tr in trajs)
    parts, nexts = [], []
    mask = np.zeros((len(slots), t), dtype=bool)
    for i, tr in enumerate(trajs):
        n = tr.num_rows
        mask[i, :n] = True
        idx = np.minimum(np.arange(t), n - 1)
        parts.append(tr.take(pa.array(idx)))
        nexts.append(tr.slice(n - 1, 1))
    w = np.ones(len(slots), dtype=np.float32) if weights is None else np.asarray(weights)
    if w.shape != (len(slots),):
        raise ValueError(f"weights must have one value per slot ({len(slots)}), got {w.shape}")
    rows = pa.concat_tables(parts).combine_chunks()
    next_rows = pa.concat_tables(nexts).combine_chunks()
    return _assemble(
        rows,
        next_rows,
        mask,
        slots,
        np.zeros(len(slots), dtype=np.int64),
        w,
        replay,
        horizons,
        featurize,
    )
