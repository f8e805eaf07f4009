"""Critics: the step-level double value critic and the instruction-level critic.

Both predict a probability of success, trained with binary cross-entropy (BCE), as in DigiRL
(Bai et al. 2024, https://arxiv.org/abs/2406.11896) and DistRL (Wang et al. 2024,
https://arxiv.org/abs/2410.14803):

* :class:`StepCritic` ``V(s_t, c)``: input = frozen text encoding of the step prompt (previous
  action + goal) concatenated with two stacked frames of image features (previous and current,
  ``2 * D``); two independent MLP heads each give a logit; the value estimate is the *minimum*
  of the two heads' probabilities (double critic: the pessimistic head limits overestimation).
  Both heads are trained on every target.
* :class:`InstructionCritic` ``V_instr(c)``: the goal text only; how likely a trajectory on this
  instruction succeeds (DigiRL's curriculum baseline).

Targets may be soft (in ``[0, 1]``), e.g. DistRL's clipped Retrace targets; BCE with soft
targets is minimised exactly at ``p = target``.

The modules' ``forward`` returns logits (what DDP wraps); :meth:`values` and :meth:`bce` are
conveniences on top of it. Text encodings come from a frozen, cached encoder
(:mod:`distrl_tasks.agents.text_encoders`) that both critics may share.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from distrl_tasks.agents.text_encoders import TextEncoder


def _mlp(in_dim: int, hidden: int, layers: int) -> nn.Sequential:
    """LayerNorm on the input (text and image features differ in scale), then ReLU MLP -> 1."""
    mods: list[nn.Module] = [nn.LayerNorm(in_dim)]
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, 1))
    return nn.Sequential(*mods)


def _check_targets(name: str, targets: torch.Tensor, n: int) -> torch.Tensor:
    if not isinstance(targets, torch.Tensor) or targets.shape != (n,):
        shape = tuple(targets.shape) if isinstance(targets, torch.Tensor) else type(targets)
        raise ValueError(f"{name} must be a [{n}] tensor, got {shape}")
    if bool(((targets < 0) | (targets > 1)).any()) or not bool(torch.isfinite(targets).all()):
        raise ValueError(f"{name} must lie in [0, 1] (probabilities of success)")
    return targets.float()


def weighted_bce(
    logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean of ``w_i * BCE(sigmoid(logit_i), target_i)`` (plain mean when ``weights`` is None).

    Args:
        logits: ``[N]`` or ``[N, K]`` logits (``K`` heads share the target of their row).
        targets: ``[N]`` targets in ``[0, 1]``.
        weights: Optional ``[N]`` non-negative per-row weights.

    Returns:
        Scalar loss; 0 (with gradient) when ``N = 0``.
    """
    if logits.shape[0] == 0:
        return logits.sum() * 0.0
    tgt = targets.to(logits.dtype)
    if logits.dim() == 2:
        tgt = tgt.unsqueeze(1).expand_as(logits)
    per = nn.functional.binary_cross_entropy_with_logits(logits, tgt, reduction="none")
    if per.dim() == 2:
        per = per.mean(dim=1)
    if weights is not None:
        per = per * weights.to(per.dtype)
    return per.mean()


class StepCritic(nn.Module):
    """Double step critic ``V(s_t, c) = min(sigmoid(head_1), sigmoid(head_2))``.

    Args:
        text_encoder: Encoder of the step prompt (frozen by default; it is not trained here
            unless it was built with ``frozen=False``).
        image_dim: Size ``D`` of one frame's features.
        hidden: Width of the MLP heads (papers: 768 with RoBERTa inputs).
        layers: Hidden layers per head (papers: 2).
    """

    def __init__(
        self, text_encoder: TextEncoder, image_dim: int, *, hidden: int = 256, layers: int = 2
    ) -> None:
        super().__init__()
        if image_dim < 1 or hidden < 1 or layers < 1:
            raise ValueError(
                f"image_dim, hidden and layers must be >= 1, got {image_dim}, {hidden}, {layers}"
            )
        self.text_encoder = text_encoder
        self.image_dim = int(image_dim)
        in_dim = text_encoder.dim + 2 * self.image_dim
        self.heads = nn.ModuleList([_mlp(in_dim, hidden, layers) for _ in range(2)])

    def _inputs(
        self, prompts: Sequence[str], prev_features: torch.Tensor, features: torch.Tensor
    ) -> torch.Tensor:
        n = len(prompts)
        for name, x in (("prev_features", prev_features), ("features", features)):
            if not isinstance(x, torch.Tensor) or tuple(x.shape) != (n, self.image_dim):
                shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{name} must have shape ({n}, {self.image_dim}), got {shape}")
        device = self.heads[0][0].weight.device
        text = self.text_encoder.encode(prompts).to(device)
        frames = torch.cat([prev_features.float(), features.float()], dim=1).to(device)
        return torch.cat([text, frames], dim=1)

    def forward(
        self, prompts: Sequence[str], prev_features: torch.Tensor, features: torch.Tensor
    ) -> torch.Tensor:
        """``[N, 2]`` logits of the two heads for states (prompt, previous frame, frame)."""
        x = self._inputs(prompts, prev_features, features)
        return torch.cat([head(x) for head in self.heads], dim=1)

    def values(
        self, prompts: Sequence[str], prev_features: torch.Tensor, features: torch.Tensor
    ) -> torch.Tensor:
        """``[N]`` value estimates: the smaller of the two heads' success probabilities."""
        return torch.sigmoid(self(prompts, prev_features, features)).min(dim=1).values

    @torch.no_grad()
    def init_output_bias(self, bias: float) -> None:
        """Set both heads' output bias to ``bias`` (e.g. ``logit(mean target)``).

        The last layer's weights are scaled down 10x too, so that the initial values sit at
        ``sigmoid(bias)`` for every input rather than around it.
        """
        for head in self.heads:
            head[-1].bias.fill_(float(bias))
            head[-1].weight.mul_(0.1)

    def bce(
        self,
        prompts: Sequence[str],
        prev_features: torch.Tensor,
        features: torch.Tensor,
        targets: torch.Tensor,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """BCE of both heads toward ``targets`` (``[N]`` in ``[0, 1]``), averaged over heads."""
        targets = _check_targets("targets", targets, len(prompts))
        logits = self(prompts, prev_features, features)
        return weighted_bce(logits, targets.to(logits.device), weights)


class InstructionCritic(nn.Module):
    """Instruction-level critic ``V_instr(c)``: probability that a trajectory on goal ``c``
    succeeds, from the goal text alone.

    Args:
        text_encoder: Encoder of the goal text (may be shared with the step critic).
        hidden: Width of the MLP head.
        layers: Hidden layers of the head.
    """

    def __init__(self, text_encoder: TextEncoder, *, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        if hidden < 1 or layers < 1:
            raise ValueError(f"hidden and layers must be >= 1, got {hidden}, {layers}")
        self.text_encoder = text_encoder
        self.head = _mlp(text_encoder.dim, hidden, layers)

    def forward(self, goals: Sequence[str]) -> torch.Tensor:
        """``[N]`` logits for the goals."""
        device = self.head[0].weight.device
        return self.head(self.text_encoder.encode(goals).to(device)).squeeze(1)

    def values(self, goals: Sequence[str]) -> torch.Tensor:
        """``[N]`` success probabilities."""
        return torch.sigmoid(self(goals))

    def bce(
        self,
        goals: Sequence[str],
        targets: torch.Tensor,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """BCE toward ``targets`` (``[N]`` final rewards ``r_H`` in ``[0, 1]``)."""
        targets = _check_targets("targets", targets, len(goals))
        logits = self(goals)
        return weighted_bce(logits, targets.to(logits.device), weights)


def trainable_parameters(*modules: nn.Module) -> list[nn.Parameter]:
    """Parameters that require gradient, each once (shared encoders are not duplicated)."""
    seen: set[int] = set()
    out = []
    for module in modules:
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out
