"""Filtered behaviour cloning: imitate the top fraction of trajectories by reward.

The baseline of DigiRL (Bai et al. 2024, https://arxiv.org/abs/2406.11896): each round keeps
the top ``p`` of the replay's trajectories by their raw reward (``top_p_filter``; ties at the
threshold are kept, so with 0/1 rewards every success passes) and maximises the log-likelihood
of their actions, ``-mean log pi`` over all their steps. No critic. Compared with DigiRL the only
data-side difference is the filter score: raw reward here, instruction advantage there.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from distrl_tasks.agents.critics import trainable_parameters
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.algorithms import functional as F
from distrl_tasks.algorithms.algorithm import LossOutput, masked_average, param_group, score_steps
from distrl_tasks.algorithms.batch import DEFAULT_HORIZONS, Batch, batch_from_trajectories
from distrl_tasks.config import Config
from distrl_tasks.data.replay import ReplayBuffer


def trajectory_rewards(replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
    """Sum of the (labeled) rewards of each stored trajectory in ``slots``."""
    out = np.zeros(len(slots), dtype=np.float32)
    for i, slot in enumerate(slots.tolist()):
        col = replay.trajectory(int(slot)).column("reward")
        if col.null_count:
            raise ValueError(f"trajectory in slot {slot} is unlabeled (null reward)")
        out[i] = float(np.sum(col.to_numpy(zero_copy_only=False)))
    return out


class FilteredBC:
    """Behaviour cloning on the top ``top_fraction`` of trajectories by reward.

    Args:
        policy: The policy to train.
        top_fraction: ``p`` of the trajectory filter.
        horizons: Step budget per task set (only carried into the batch).
    """

    name = "filtered_bc"

    def __init__(
        self,
        policy: AutoUIPolicy,
        *,
        top_fraction: float = 0.1,
        horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    ) -> None:
        if not 0.0 < top_fraction <= 1.0:
            raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
        self.policy = policy
        self.top_fraction = float(top_fraction)
        self.horizons = dict(horizons)
        self.kept_slots = np.zeros(0, dtype=np.int64)

    @classmethod
    def from_config(cls, cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu") -> FilteredBC:
        """Wire the algorithm from ``cfg`` (``device`` is unused: there is no critic)."""
        return cls(
            policy,
            top_fraction=cfg.algorithm.filter_top_fraction,
            horizons={"general": cfg.env.horizon_general, "webshop": cfg.env.horizon_webshop},
        )

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"policy": self.policy.model}

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        return [param_group("policy", trainable_parameters(self.policy.model), lr_policy)]

    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        """Keep the top ``p`` trajectories by raw reward for this round."""
        slots = np.asarray(replay.slots, dtype=np.int64)
        if len(slots) == 0:
            raise ValueError("prepare_round: the replay buffer is empty")
        rewards = trajectory_rewards(replay, slots)
        keep = F.top_p_filter(torch.as_tensor(rewards), self.top_fraction).numpy()
        self.kept_slots = slots[keep]
        return {
            "train/kept_frac": float(keep.mean()),
            "train/kept_reward_mean": float(rewards[keep].mean()),
        }

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> Batch:
        """``batch_size`` whole trajectories drawn uniformly from the kept ones."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        kept = self.kept_slots[np.isin(self.kept_slots, np.asarray(replay.slots))]
        if len(kept) == 0:
            raise ValueError("no trajectory passed the filter: call prepare_round first")
        return batch_from_trajectories(
            replay, rng.choice(kept, size=batch_size), horizons=self.horizons
        )

    def loss(self, batch: Batch) -> LossOutput:
        """``-mean log pi`` over every real step of the batch's actor rows."""
        select = batch.actor_rows.unsqueeze(1).expand_as(batch.mask)
        log_probs, entropy, _ = score_steps(self.policy, batch, select=select)
        kept = (batch.mask & select).to(log_probs.device)
        loss = masked_average(-log_probs, kept)
        metrics = {"train/entropy": float(masked_average(entropy.detach(), kept))}
        return LossOutput(loss, {"losses/policy": loss}, metrics)
