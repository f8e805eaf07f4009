"""The interface every training algorithm (DistRL, DigiRL, Filtered BC) offers the learner.

The learner loop (``algorithms/learner.py``) is algorithm-agnostic: per round it calls
:meth:`Algorithm.prepare_round` once (curriculum filtering, priority refresh), then repeatedly
:meth:`Algorithm.sample` and :meth:`Algorithm.loss`, and backpropagates ``LossOutput.loss``
through the optimizer it built from :meth:`Algorithm.param_groups`. Modes (offline / online /
off2on) are not the algorithm's concern: the offline phase is round 0, with its own dataset and
step counts (:mod:`distrl_tasks.config.modes`). What differs between algorithms is declared
by the algorithm (see :attr:`Algorithm.name` and each module's docstring).

Metric names are namespaced: ``losses/...`` for loss terms, ``train/...`` for diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import torch

from distrl_tasks.agents.text_encoders import build_text_encoder

if TYPE_CHECKING:
    from distrl_tasks.agents.policy import AutoUIPolicy
    from distrl_tasks.algorithms.batch import Batch
    from distrl_tasks.config import Config
    from distrl_tasks.data.replay import ReplayBuffer


@dataclass
class LossOutput:
    """What :meth:`Algorithm.loss` returns.

    Attributes:
        loss: Scalar tensor with gradient; the learner calls ``loss.backward()``.
        terms: Named loss terms, detached scalars, e.g. ``losses/policy``, ``losses/value``,
            ``losses/entropy``, ``losses/invalid``, ``losses/critic_step``.
        metrics: Diagnostics as plain floats, e.g. ``train/ess``, ``train/clip_frac``,
            ``train/staleness``, ``train/adv_mean``, ``train/kept_frac``.
        critic_loss: The part of ``loss`` that trains the critics, with gradient (None for an
            algorithm without critics); the learner's critic warm-up steps minimise only this.
    """

    loss: torch.Tensor
    terms: dict[str, torch.Tensor] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    critic_loss: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.loss, torch.Tensor) or self.loss.dim() != 0:
            raise ValueError(f"LossOutput.loss must be a scalar tensor, got {self.loss!r}")
        self.terms = {k: v.detach() for k, v in self.terms.items()}

    def log_dict(self) -> dict[str, float]:
        """Terms and metrics as one flat ``{name: float}`` dict, ready for a tracker."""
        out = {k: float(v) for k, v in self.terms.items()}
        out.update(self.metrics)
        return out


@runtime_checkable
class Algorithm(Protocol):
    """A training algorithm: the modules it trains, how it samples, and its loss."""

    name: str

    def modules(self) -> dict[str, torch.nn.Module]:
        """Trainable modules by role, e.g. ``{"policy": ..., "critic": ...}`` (for DDP/saving)."""
        ...

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        """Optimizer parameter groups (each a dict with ``params``, ``lr`` and ``name``)."""
        ...

    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        """Per-round work before the updates (filters, priorities); returns ``train/`` metrics."""
        ...

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> Batch:
        """Draw one training batch from ``replay`` the way this algorithm needs it."""
        ...

    def loss(self, batch: Batch) -> LossOutput:
        """The scalar loss on ``batch`` (with gradient) and its named terms and metrics."""
        ...


def critic_text_encoder(cfg: Config, device: str = "cpu"):
    """The critics' text encoder as ``cfg.agent.critic_text_encoder`` names it."""

    return build_text_encoder(
        cfg.agent.critic_text_encoder, path=cfg.agent.critic_text_encoder_path, device=device
    )


# Shared pieces of the three algorithms (kept here: each is a few lines, used by two or three).


def scatter_steps(
    values: torch.Tensor, index: torch.Tensor, shape: tuple[int, int]
) -> torch.Tensor:
    """Place ``[n]`` per-step values at flat ``index`` of a zero ``[B, T]`` tensor (keeps grad)."""
    flat = torch.zeros(shape[0] * shape[1], dtype=values.dtype, device=values.device)
    return flat.index_put((index.to(values.device),), values).reshape(shape)


def score_steps(
    policy: AutoUIPolicy,
    batch: Batch,
    select: torch.Tensor | None = None,
    *,
    entropy_per_token: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Current-policy log-probs and entropies of the batch's actions, as ``[B, T]``.

    Only real steps (and, if given, where ``select`` is True) are scored; the others are 0.
    The entropy is summed over the action's tokens, or with ``entropy_per_token`` averaged
    over them (``H / n_tokens``: a long TYPE action then weighs no more than a short tap).

    Returns:
        ``(log_probs, entropies, index)``: ``[B, T]`` tensors with gradient, and the flat
        indices that were scored.
    """
    index = batch.flat_index(select)
    shape = (batch.batch_size, batch.length)
    if len(index) == 0:
        zero = next(policy.model.parameters()).sum() * 0.0  # keeps the graph for DDP
        return zero.expand(shape).float(), zero.expand(shape).float(), index
    scores = policy.score(batch.observations(index), batch.action_texts(index))
    log_probs = scatter_steps(scores.log_prob.float(), index, shape)
    ent = scores.entropy.float()
    if entropy_per_token:
        ent = ent / scores.lengths.to(ent.device).clamp(min=1).float()
    entropy = scatter_steps(ent, index, shape)
    return log_probs, entropy, index


def score_actor_rows(
    policy: AutoUIPolicy, batch: Batch, *, entropy_per_token: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, T]`` log-probs and entropies of every real step; only ``batch.actor_rows`` carry a
    gradient.

    The other rows (windows that train a critic alone) are scored without autograd: their
    log-probs only enter detached targets and priorities, so they need no saved activations and
    no backward pass.
    """
    actor = batch.actor_rows.cpu()
    if bool(actor.all()):
        log_probs, entropy, _ = score_steps(policy, batch, entropy_per_token=entropy_per_token)
        return log_probs, entropy
    rows = actor.unsqueeze(1).expand(batch.batch_size, batch.length)
    log_probs, entropy, _ = score_steps(policy, batch, rows, entropy_per_token=entropy_per_token)
    with torch.no_grad():
        other_lp, other_ent, _ = score_steps(
            policy, batch, ~rows, entropy_per_token=entropy_per_token
        )
    return log_probs + other_lp.to(log_probs.device), entropy + other_ent.to(entropy.device)


def masked_average(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the True entries of ``mask`` (0 when there are none)."""
    count = mask.sum().clamp(min=1).to(x.dtype)
    return torch.where(mask, x, torch.zeros_like(x)).sum() / count


def param_group(name: str, params: list[torch.nn.Parameter], lr: float) -> dict:
    """One optimizer parameter group; raises when the module has nothing to train."""
    if not params:
        raise ValueError(f"module '{name}' has no trainable parameters")
    if not lr > 0:
        raise ValueError(f"learning rate of '{name}' must be > 0, got {lr}")
    return {"params": params, "lr": float(lr), "name": name}
