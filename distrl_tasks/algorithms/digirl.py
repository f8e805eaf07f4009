"""DigiRL: instruction and step critics, doubly-robust advantages, curriculum, filtered actor.

Bai et al. 2024, https://arxiv.org/abs/2406.11896 (the paper, not its released code):

* Critics: the instruction critic ``V_instr(c)`` and the double step critic ``V(s_h, c)``
  (min of two heads), both trained with BCE toward the trajectory's final success ``r_H``, on
  trajectories drawn uniformly from the whole replay.
* Curriculum (:meth:`DigiRL.prepare_round`): instruction advantage ``r_H - V_instr(c)``; only the
  top fraction ``p`` of trajectories (``top_p_filter``) feed the actor. Filtered BC differs only
  here: it filters on the raw reward (:mod:`distrl_tasks.algorithms.filtered_bc`).
* Actor: doubly-robust step advantage (``step_advantage``, with ``lambda``; ``H`` = the
  trajectory's length so the last step takes the full Monte-Carlo weight), hard-filtered by
  ``A > 1/H_env`` (``step_advantage_filter`` with the task set's horizon), then maximum
  likelihood on the kept steps: ``-mean log pi`` (AWR with a 0/1 weight). The next-state value
  after a trajectory's last step is 0: the episode is over and success is already in ``r_H``.

A sampled batch holds ``batch_size`` critic trajectories (uniform over the replay) followed by
``batch_size`` actor trajectories (uniform over the curriculum's kept ones); ``critic_rows`` /
``actor_rows`` mark which is which, so the policy is only scored where it is trained.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from distrl_tasks.agents.critics import (
    InstructionCritic,
    StepCritic,
    trainable_parameters,
    weighted_bce,
)
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.algorithms import functional as F
from distrl_tasks.algorithms.algorithm import (
    LossOutput,
    critic_text_encoder,
    masked_average,
    param_group,
    score_steps,
)
from distrl_tasks.algorithms.batch import DEFAULT_HORIZONS, Batch, batch_from_trajectories
from distrl_tasks.config import Config
from distrl_tasks.data.replay import ReplayBuffer


def final_rewards_of(replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
    """``r_H`` (the reward of the last step) of each stored trajectory in ``slots``."""
    out = np.zeros(len(slots), dtype=np.float32)
    for i, slot in enumerate(slots.tolist()):
        traj = replay.trajectory(int(slot))
        value = traj.column("reward")[traj.num_rows - 1].as_py()
        if value is None:
            raise ValueError(f"trajectory in slot {slot} is unlabeled (null reward)")
        out[i] = float(value)
    return out


def tasks_of(replay: ReplayBuffer, slots: np.ndarray) -> list[str]:
    """Goal text of each stored trajectory in ``slots``."""
    return [str(replay.trajectory(int(s)).column("task")[0].as_py()) for s in slots.tolist()]


class DigiRL:
    """DigiRL on a policy, a double step critic and an instruction critic.

    Args:
        policy: The policy to train.
        step_critic: ``V(s_h, c)``.
        instruction_critic: ``V_instr(c)``.
        advantage_lambda: ``lambda`` of the doubly-robust step advantage.
        top_fraction: ``p`` of the curriculum filter.
        horizons: Step budget per task set (the ``1/H`` threshold).
    """

    name = "digirl"

    def __init__(
        self,
        policy: AutoUIPolicy,
        step_critic: StepCritic,
        instruction_critic: InstructionCritic,
        *,
        advantage_lambda: float = 0.5,
        top_fraction: float = 0.1,
        horizons: Mapping[str, int] = DEFAULT_HORIZONS,
    ) -> None:
        if not 0.0 < top_fraction <= 1.0:
            raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
        self.policy = policy
        self.step_critic = step_critic
        self.instruction_critic = instruction_critic
        self.advantage_lambda = float(advantage_lambda)
        self.top_fraction = float(top_fraction)
        self.horizons = dict(horizons)
        self.kept_slots = np.zeros(0, dtype=np.int64)

    @classmethod
    def from_config(cls, cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu") -> DigiRL:
        """Wire the algorithm from ``cfg`` with fresh critics sharing one frozen text encoder."""
        text = critic_text_encoder(cfg, device)
        hidden = cfg.agent.critic_hidden
        return cls(
            policy,
            StepCritic(text, image_feature_dim(cfg.agent), hidden=hidden).to(device),
            InstructionCritic(text, hidden=hidden).to(device),
            advantage_lambda=cfg.algorithm.digirl_lambda,
            top_fraction=cfg.algorithm.filter_top_fraction,
            horizons={"general": cfg.env.horizon_general, "webshop": cfg.env.horizon_webshop},
        )

    def modules(self) -> dict[str, torch.nn.Module]:
        return {
            "policy": self.policy.model,
            "critic": self.step_critic,
            "instruction_critic": self.instruction_critic,
        }

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        critics = trainable_parameters(self.step_critic, self.instruction_critic)
        return [
            param_group("policy", trainable_parameters(self.policy.model), lr_policy),
            param_group("critic", critics, lr_critic),
        ]

    def trajectory_scores(self, replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
        """Curriculum score of each trajectory: instruction advantage ``r_H - V_instr(c)``."""
        with torch.no_grad():
            values = self.instruction_critic.values(tasks_of(replay, slots)).float().cpu()
        rewards = torch.as_tensor(final_rewards_of(replay, slots))
        return F.instruction_advantage(rewards, values).numpy()

    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        """Select the trajectories the actor trains on this round (top ``p`` by score)."""
        slots = np.asarray(replay.slots, dtype=np.int64)
        if len(slots) == 0:
            raise ValueError("prepare_round: the replay buffer is empty")
        scores = self.trajectory_scores(replay, slots)
        keep = F.top_p_filter(torch.as_tensor(scores, dtype=torch.float32), self.top_fraction)
        self.kept_slots = slots[keep.numpy()]
        return {
            "train/kept_frac": float(keep.float().mean()),
            "train/filter_score_mean": float(scores.mean()),
            "train/kept_success": float(final_rewards_of(replay, self.kept_slots).mean()),
        }

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> Batch:
        """``batch_size`` critic trajectories from the replay, then as many kept ones."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        live = np.asarray(replay.slots, dtype=np.int64)
        kept = self.kept_slots[np.isin(self.kept_slots, live)]
        if len(kept) == 0:
            raise ValueError("no trajectory passed the curriculum: call prepare_round first")
        critic_slots = rng.choice(live, size=batch_size)
        actor_slots = rng.choice(kept, size=batch_size)
        batch = batch_from_trajectories(
            replay, np.concatenate([critic_slots, actor_slots]), horizons=self.horizons
        )
        batch.critic_rows = torch.arange(2 * batch_size) < batch_size
        batch.actor_rows = ~batch.critic_rows
        return batch

    def _step_values(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Step-critic logits ``[B*T, 2]`` at ``s_h`` and detached ``V(s_{h+1})`` ``[B, T]``."""
        dim = batch.features.shape[-1]
        logits = self.step_critic(
            batch.prompts, batch.prev_features.reshape(-1, dim), batch.features.reshape(-1, dim)
        )
        with torch.no_grad():
            nxt = self.step_critic.values(
                batch.next_prompts,
                batch.features.reshape(-1, dim),
                batch.next_features.reshape(-1, dim),
            ).reshape(batch.batch_size, batch.length)
        # float32 whatever the autocast dtype: the advantages are computed in float32
        return logits, torch.where(batch.dones.to(nxt.device), 0.0, nxt.float())

    def _critic_losses(
        self, batch: Batch, logits: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(step BCE, instruction BCE, r_H)`` of the batch's critic rows."""
        b, t = batch.batch_size, batch.length
        device = logits.device
        mask = batch.mask.to(device)
        r_final = batch.final_rewards.to(device)
        if bool(((r_final < 0) | (r_final > 1)).any()):
            raise ValueError("DigiRL needs final rewards r_H in [0, 1] (success labels)")
        critic_rows = batch.critic_rows.to(device)
        step_sel = (mask & critic_rows.unsqueeze(1)).reshape(-1)
        step_targets = r_final.unsqueeze(1).expand(b, t).reshape(-1)
        step_loss = weighted_bce(logits[step_sel], step_targets[step_sel])
        goals = [g for g, c in zip(batch.tasks, critic_rows.tolist(), strict=True) if c]
        instr_loss = self.instruction_critic.bce(goals, r_final[critic_rows])
        return step_loss, instr_loss, r_final

    def critic_loss(self, batch: Batch) -> LossOutput:
        """The critics' BCE alone, scoring no policy (the learner's critic-only steps)."""
        dim = batch.features.shape[-1]
        logits = self.step_critic(
            batch.prompts, batch.prev_features.reshape(-1, dim), batch.features.reshape(-1, dim)
        )
        step_loss, instr_loss, _ = self._critic_losses(batch, logits)
        terms = {"losses/critic_step": step_loss, "losses/critic_instruction": instr_loss}
        critics = step_loss + instr_loss
        return LossOutput(critics, terms, {}, critic_loss=critics)

    def loss(self, batch: Batch) -> LossOutput:
        """Instruction + step critic BCE toward ``r_H`` and the filtered log-likelihood."""
        b, t = batch.batch_size, batch.length
        logits, next_values = self._step_values(batch)
        device = logits.device
        mask = batch.mask.to(device)
        step_loss, instr_loss, r_final = self._critic_losses(batch, logits)

        values = torch.sigmoid(logits.detach().float()).min(dim=1).values.reshape(b, t)
        actor_mask = mask & batch.actor_rows.to(device).unsqueeze(1)
        adv = F.step_advantage(
            values,
            next_values,
            batch.rewards.to(device),
            lam=self.advantage_lambda,
            final_rewards=r_final,
            mask=actor_mask,
        )
        kept = torch.zeros_like(actor_mask)
        horizons = batch.horizons.to(device)
        for h in horizons.unique().tolist():
            rows = (horizons == h).unsqueeze(1)
            kept |= rows & F.step_advantage_filter(adv, int(h), mask=actor_mask)
        log_probs, _, _ = score_steps(self.policy, batch, select=kept.cpu())
        policy_loss = masked_average(-log_probs.to(device), kept)
        n_actor = actor_mask.sum().clamp(min=1)
        terms = {
            "losses/policy": policy_loss,
            "losses/critic_step": step_loss,
            "losses/critic_instruction": instr_loss,
        }
        metrics = {
            "train/kept_frac": float(kept.sum() / n_actor),
            "train/adv_mean": float(masked_average(adv, actor_mask)),
            "train/value_mean": float(masked_average(values, mask)),
        }
        critics = step_loss + instr_loss
        return LossOutput(policy_loss + critics, terms, metrics, critic_loss=critics)
