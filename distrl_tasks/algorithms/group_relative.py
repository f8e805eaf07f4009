"""GRPO and GiGPO for agents: critic-free policy gradients with group-relative advantages.

Collection gives every drawn goal ``algorithm.group.size`` attempts in a round (the collect
stage plans them, spread over the devices). The attempts of one goal in one round are its
*group*.

* GRPO (Shao et al. 2024, for agents as in ZeroGUI / UI-R1): a trajectory's advantage is its
  return against its group's, ``A_E = (R - mean_g R) / (std_g R + eps)``, given to every step.
* GiGPO (Feng et al. 2025, verl-agent): adds *step groups*: steps of the same group's attempts
  taken from the same state (an *anchor state*; keyed by the shards' ``state_key``: on the
  simulator a digest of its exact state, so live-world noise on screen does not split a group;
  on real devices, as verl-agent keys them, a hash of the observation, the screenshot's PNG
  bytes) share a step advantage from their
  discounted returns, ``A_S = (G_t - mean_s G) / (std_s G + eps)``; a step's advantage is
  ``A_E + omega * A_S``.

The loss is PPO's clipped surrogate on the stored behaviour log-probs (so attempts collected
under an older policy version are corrected by the ratio ``pi / mu``), plus optionally
``kl_coef * KL(pi || reference)`` with the policy the learner started from as the reference
(Schulman's k3 estimator). No critic; nothing of DistRL's replay priorities.

Groups are recomputed at every :meth:`GroupRelative.prepare_round` from the replay window (the
returns are the labels'; they do not change with the policy). A goal drawn once in a round is a
group of one: its advantage is 0 and it is never sampled.
"""

from __future__ import annotations

import copy
import hashlib
from collections import defaultdict
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

VARIANTS = ("grpo", "gigpo")


def state_key(screenshot_png: bytes | None, prompt: str) -> str:
    """An anchor state's key: the screenshot as the policy saw it, and the goal it pursues."""
    h = hashlib.sha1(screenshot_png or b"")
    h.update(prompt.split(" Goal: ", 1)[-1].encode())
    return h.hexdigest()


def step_keys(trajectory) -> list[str]:
    """Anchor-state keys of a trajectory's steps: the recorded ``state_key`` (the simulator's
    exact state) where the shard has one, else the screenshot's hash (:func:`state_key`)."""
    recorded = (
        trajectory.column("state_key").to_pylist()
        if "state_key" in trajectory.column_names
        else [None] * trajectory.num_rows
    )
    if all(k is not None for k in recorded):
        return [str(k) for k in recorded]
    shots = trajectory.column("screenshot_png").to_pylist()
    prompts = trajectory.column("prompt").to_pylist()
    return [
        str(k) if k is not None else state_key(s, p)
        for k, s, p in zip(recorded, shots, prompts, strict=True)
    ]


class GroupRelative:
    """GRPO (``step_weight`` ignored) or GiGPO; see the module docstring.

    Args:
        policy: The policy to train.
        variant: ``"grpo"`` or ``"gigpo"``.
        clip_eps: PPO clip of the ratio.
        kl_coef: Weight of KL(pi || reference); > 0 keeps a frozen copy of ``policy`` as it is
            now (the learner's starting policy) as the reference.
        scale: Divide by the group's standard deviation (False: mean-centred, Dr. GRPO).
        step_weight: GiGPO's omega.
        horizons: Step budget per task set (carried into the batch).
    """

    def __init__(
        self,
        policy: AutoUIPolicy,
        *,
        variant: str = "grpo",
        clip_eps: float = 0.2,
        kl_coef: float = 0.0,
        scale: bool = True,
        step_weight: float = 1.0,
        horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0, got {kl_coef}")
        self.name = variant
        self.policy = policy
        self.clip_eps, self.kl_coef = float(clip_eps), float(kl_coef)
        self.scale, self.step_weight = bool(scale), float(step_weight)
        self.horizons = dict(horizons)
        self.reference: AutoUIPolicy | None = None
        if self.kl_coef > 0:
            self.reference = copy.deepcopy(policy)
            self.reference.model.eval()
            for p in self.reference.model.parameters():
                p.requires_grad_(False)
        self.advantages: dict[int, np.ndarray] = {}  # replay slot -> [steps] advantages
        self.trained_slots = np.zeros(0, dtype=np.int64)

    @classmethod
    def from_config(
        cls, cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu"
    ) -> GroupRelative:
        """Wire the algorithm from ``cfg.algorithm`` (``name`` picks the variant)."""
        g = cfg.algorithm.group
        return cls(
            policy,
            variant=cfg.algorithm.name,
            clip_eps=g.clip_eps,
            kl_coef=g.kl_coef,
            scale=g.scale,
            step_weight=g.step_weight,
            horizons={"general": cfg.env.horizon_general, "webshop": cfg.env.horizon_webshop},
        )

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"policy": self.policy.model}

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        return [param_group("policy", trainable_parameters(self.policy.model), lr_policy)]

    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        """Group the replay's trajectories by (round, goal) and compute every step's advantage."""
        slots = np.asarray(replay.slots, dtype=np.int64)
        if len(slots) == 0:
            raise ValueError("prepare_round: the replay buffer is empty")
        steps_grouped = self.name == "gigpo" and self.step_weight > 0
        group_of: dict[tuple[int, str], int] = {}
        traj_group, traj_return, step_rows = [], [], []
        for slot in slots.tolist():
            t = replay.trajectory(int(slot))
            rewards = t.column("reward").to_numpy(zero_copy_only=False)
            if t.column("reward").null_count:
                raise ValueError(f"trajectory in slot {slot} is unlabeled (null reward)")
            key = (int(t.column("round")[0].as_py()), str(t.column("task")[0].as_py()))
            g = group_of.setdefault(key, len(group_of))
            traj_group.append(g)
            traj_return.append(float(np.sum(rewards)))
            returns = t.column("mc_return").to_numpy(zero_copy_only=False).astype(np.float64)
            if not steps_grouped:  # GRPO: no anchor states, nothing to hash
                step_rows.append((g, returns, []))
                continue
            step_rows.append((g, returns, step_keys(t)))
        episode_adv = F.group_normalize(
            torch.tensor(traj_return, dtype=torch.float64),
            torch.tensor(traj_group),
            scale=self.scale,
        ).numpy()
        sizes = np.bincount(np.asarray(traj_group))
        per_step = [np.full(len(r), a) for (_, r, _), a in zip(step_rows, episode_adv, strict=True)]
        shared = 0.0
        if steps_grouped:
            anchors: dict[tuple[int, str], int] = {}
            ids, values, where = [], [], []
            for i, (g, returns, keys) in enumerate(step_rows):
                for t, (k, ret) in enumerate(zip(keys, returns, strict=True)):
                    ids.append(anchors.setdefault((g, k), len(anchors)))
                    values.append(float(ret))
                    where.append((i, t))
            step_adv = F.group_normalize(
                torch.tensor(values, dtype=torch.float64), torch.tensor(ids), scale=self.scale
            ).numpy()
            for (i, t), a in zip(where, step_adv, strict=True):
                per_step[i][t] += self.step_weight * a
            counts = np.bincount(np.asarray(ids))
            shared = float((counts[np.asarray(ids)] > 1).mean())
        self.advantages = {
            int(s): a.astype(np.float32) for s, a in zip(slots, per_step, strict=True)
        }
        in_group = sizes[np.asarray(traj_group)] > 1
        informative = np.array([np.any(a != 0) for a in per_step])
        self.trained_slots = slots[in_group & informative]
        by_group: dict[int, list[float]] = defaultdict(list)
        for g, r in zip(traj_group, traj_return, strict=True):
            by_group[g].append(r)
        mixed = [len(set(v)) > 1 for v in by_group.values() if len(v) > 1]
        metrics = {
            "train/groups": float(len(by_group)),
            "train/group_size_mean": float(np.mean([len(v) for v in by_group.values()])),
            "train/groups_with_signal": float(np.mean(mixed)) if mixed else 0.0,
            "train/trained_trajectories": float(len(self.trained_slots)),
        }
        if self.name == "gigpo":
            metrics["train/steps_in_shared_states"] = shared
        return metrics

    def has_signal(self, replay: ReplayBuffer) -> bool:
        """Whether any trajectory in ``replay`` has a non-zero advantage (the learner skips
        its optimizer steps otherwise: a round of all-success or all-failure groups)."""
        return bool(np.isin(self.trained_slots, np.asarray(replay.slots)).any())

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> Batch:
        """``batch_size`` whole trajectories drawn uniformly from those with an advantage."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        live = self.trained_slots[np.isin(self.trained_slots, np.asarray(replay.slots))]
        if len(live) == 0:
            raise ValueError(
                "no trajectory has a group-relative advantage: every group is a single attempt "
                "or all its attempts got the same return (call prepare_round first; collect "
                "with algorithm.group.size >= 2)"
            )
        return batch_from_trajectories(
            replay, rng.choice(live, size=batch_size), horizons=self.horizons
        )

    def _batch_advantages(self, batch: Batch, device: torch.device) -> torch.Tensor:
        out = torch.zeros(batch.batch_size, batch.length, dtype=torch.float32)
        for row, slot in enumerate(batch.slots.tolist()):
            adv = self.advantages.get(int(slot))
            if adv is None:
                raise ValueError(f"slot {slot} has no advantage: call prepare_round first")
            n = min(len(adv), batch.length)
            out[row, :n] = torch.from_numpy(adv[:n])
        return out.to(device)

    def loss(self, batch: Batch) -> LossOutput:
        """Clipped surrogate on the group-relative advantages (+ KL to the reference)."""
        select = batch.actor_rows.unsqueeze(1).expand_as(batch.mask)
        log_probs, entropy, _ = score_steps(self.policy, batch, select=select)
        device = log_probs.device
        mask = (batch.mask & select).to(device)
        mu = batch.behavior_log_probs.to(device)
        adv = self._batch_advantages(batch, device)
        policy_loss, clip_frac = F.clipped_surrogate(
            log_probs, mu, adv, mask, clip_eps=self.clip_eps
        )
        terms = {"losses/policy": policy_loss}
        loss = policy_loss
        if self.reference is not None:
            with torch.no_grad():
                ref, _, _ = score_steps(self.reference, batch, select=select)
            kl = F.kl_k3(log_probs, ref.to(device), mask)
            terms["losses/kl"] = kl
            loss = loss + self.kl_coef * kl
        metrics = {
            "train/clip_frac": float(clip_frac),
            "train/adv_mean": float(masked_average(adv, mask)),
            "train/adv_pos_frac": float(masked_average((adv > 0).float(), mask)),
            "train/entropy": float(masked_average(entropy.detach(), mask)),
        }
        return LossOutput(loss, terms, metrics)
