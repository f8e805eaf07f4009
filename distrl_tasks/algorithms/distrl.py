"""DistRL's A-RIDE: Retrace actor-critic with entropy, invalid-action penalty and DPER.

Wang et al. 2024, https://arxiv.org/abs/2410.14803 (the paper, not its released code):

* Rewards: ``r_t = reward_t + penalty_t`` (penalties are stored ``<= 0``, so this is the
  evaluator reward minus the penalty's size). The released code's ``reward + mc_return`` mix is
  not used.
* Critic: the double :class:`~distrl_tasks.agents.critics.StepCritic`; ``V`` = min of the heads.
  Retrace(lambda) targets ``G_t`` (:func:`functional.retrace`, ``log rho = log pi - log mu``
  with ``pi`` recomputed by the current policy) are detached and both heads are trained toward
  them with BCE; because ``V`` is a success probability the targets are clipped to ``[0, 1]``
  (a negative target, i.e. penalties outweighing success, becomes 0).
* Actor (:func:`actor_loss`)::

      L = -E[w * min(rho_bar, rho) * A * log pi] - beta * E[w * H(pi)] + lam_inv * E[w * P_inv]

  with ``A`` the Retrace advantage (``functional.retrace`` returns it already multiplied by
  ``min(rho_bar, rho)``), ``w`` the prioritized-replay importance weights and ``H`` the policy's
  entropy summed over the action's tokens (``AutoUIPolicy.score``).
  ``policy_advantage = "positive"`` swaps the policy term for the released code's
  ``-E[w * min(rho_bar, rho) * 1[A > 0] * log pi]``: only actions beating the critic go up.
* Released form (``algorithm.distrl``, the default; fields documented in
  :class:`~distrl_tasks.config.rl_sections.DistRLConfig`): positive advantages, actor windows
  from the top-``p`` trajectories, ``windows`` per step, uniform window starts, no entropy.
  Not the paper's signed form (issue 21): under a fresh critic it pushes down nearly every
  action and collapsed the policy in the ablation, where no other one-change variant left one
  evaluation's error of the released form (benchmarks/results/2026-11-25-ablation.md).
* Critic pre-fit (:mod:`critic_fit`): a fresh critic gets the output bias
  ``logit(mean target)`` (:meth:`DistRL.init_critic_bias`) and critic-only steps
  (:meth:`DistRL.critic_loss`, which scores no policy: its Retrace targets take ``rho = 1``)
  until its loss plateaus; :meth:`DistRL.calibration` measures it every round.
* Trust region (``ratio_clip = eps > 0``; not in the paper): PPO's clip as a gradient mask.
  A step whose ratio ``rho = pi / mu`` already left ``[1 - eps, 1 + eps]`` in the direction its
  advantage pushes (``A > 0, rho > 1 + eps`` or ``A < 0, rho < 1 - eps``) gets no policy
  gradient, which is exactly the gradient of PPO's ``min(rho A, clip(rho, 1 - eps, 1 + eps) A)``
  where ``rho <= rho_bar``; the other steps keep A-RIDE's gradient.
* ``P_inv`` estimator: the probability the policy puts on an invalid action is estimated from
  replayed invalid actions by importance sampling, ``P_inv ~ E_mu[1[invalid] * rho]``. The term
  uses ``rho~ = exp(log pi - sg(log pi)) * sg(min(rho_bar, rho))``: its value is the truncated
  ratio and its gradient ``min(rho_bar, rho) * grad log pi``, so minimising it pushes down the
  log-probability of the actions the parser flagged invalid, with bounded variance.
* DPER: trajectory priority ``w1 mean|delta| + w2 mean rho + w3 mean(-log pi)`` under the
  current policy and critic, set by :meth:`DistRL.prepare_round` (``rescore``: every stored
  trajectory, or only those without a kept priority), by :meth:`DistRL.score_trajectories`
  for arriving ones (the continuous learner) and for the sampled windows after each loss
  (:mod:`priority_book`); sampling is the replay's (``P ~ p^alpha``, weights ``(N P)^-beta``).
  With ``top_p < 1`` the critic-only windows are scored without autograd: their log-probs
  only enter detached targets and priorities.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from distrl_tasks.agents.critics import StepCritic, trainable_parameters, weighted_bce
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.algorithms import critic_fit
from distrl_tasks.algorithms import distrl_data as D
from distrl_tasks.algorithms import functional as F
from distrl_tasks.algorithms.algorithm import (
    LossOutput,
    critic_text_encoder,
    masked_average,
    param_group,
    score_actor_rows,
    score_steps,
)
from distrl_tasks.algorithms.batch import (
    DEFAULT_HORIZONS,
    Batch,
    batch_from_trajectories,
)
from distrl_tasks.algorithms.priority_book import PriorityBook
from distrl_tasks.config import Config
from distrl_tasks.data.replay import ReplayBuffer


class DistRL:
    """A-RIDE on a policy and a double step critic; see the module docstring.

    Args:
        policy: The policy to train.
        critic: The step critic.
        gamma, lambda_, rho_bar, c_bar: Retrace parameters.
        entropy_coef, invalid_coef: ``beta`` and ``lambda_inv`` of the actor loss.
        policy_advantage: ``"signed"`` (paper: ``A`` itself) or ``"positive"`` (released
            code: push up ``1[A > 0]`` only); see the module docstring.
        ratio_clip: ``eps`` of the PPO-style trust-region mask on the policy term (0 = off).
        sequence_length: Steps per sampled window.
        priority_weights: DPER ``(w1, w2, w3)``.
        priority_beta: Importance-weight exponent of prioritized sampling.
        priority_rho_clip: Cap on ``rho`` inside the priority so that one very stale
            trajectory cannot take all the sampling mass (and ``exp`` cannot overflow).
        horizons: Step budget per task set.
        chunk: Trajectories scored at once while refreshing priorities.
        top_p: Actor windows come from the top ``p`` trajectories by return (1 = all, and
            every window serves both the actor and the critic).
        windows: Actor windows per optimizer step, reached by gradient accumulation (None =
            one micro-batch).
        window_start: ``"fit"``, ``"step"`` (see ``ReplayBuffer.sample_sequences``) or
            ``"trajectory"`` (whole trajectories).
        entropy: ``"sum"`` over the action's tokens, ``"token_mean"``, or ``"off"``.
        rescore: ``"all"``: :meth:`prepare_round` re-scores every stored trajectory; ``"new"``:
            only those it has no priority for (:attr:`known_priorities`, which the learner
            saves with its state), the others keep their last priority.
    """

    name = "distrl"

    def __init__(
        self,
        policy: AutoUIPolicy,
        critic: StepCritic,
        *,
        gamma: float = 0.5,
        lambda_: float = 1.0,
        rho_bar: float = 1.0,
        c_bar: float = 1.0,
        entropy_coef: float = 0.01,
        invalid_coef: float = 1.0,
        policy_advantage: str = "signed",
        ratio_clip: float = 0.0,
        sequence_length: int = 3,
        priority_weights: tuple[float, float, float] = (1.0, 1.0, 0.01),
        priority_beta: float = 0.4,
        priority_rho_clip: float = 10.0,
        horizons: Mapping[str, int] = DEFAULT_HORIZONS,
        chunk: int = 16,
        top_p: float = 1.0,
        windows: int | None = None,
        window_start: str = "fit",
        entropy: str = "sum",
        rescore: str = "all",
    ) -> None:
        D.check_form(
            sequence_length=sequence_length,
            ratio_clip=ratio_clip,
            top_p=top_p,
            windows=windows,
            policy_advantage=(policy_advantage, ("positive", "signed")),
            window_start=(window_start, ("fit", "step", "trajectory")),
            entropy=(entropy, ("sum", "token_mean", "off")),
            rescore=(rescore, ("all", "new")),
        )
        self.policy, self.critic = policy, critic
        self.gamma, self.lambda_ = float(gamma), float(lambda_)
        self.rho_bar, self.c_bar = float(rho_bar), float(c_bar)
        self.entropy_coef, self.invalid_coef = float(entropy_coef), float(invalid_coef)
        self.positive_only = policy_advantage == "positive"
        self.ratio_clip, self.sequence_length = float(ratio_clip), int(sequence_length)
        self.priority_weights = tuple(float(w) for w in priority_weights)
        self.priority_beta, self.priority_rho_clip = float(priority_beta), float(priority_rho_clip)
        self.horizons, self.chunk = dict(horizons), int(chunk)
        self.rescore, self.book = rescore, PriorityBook(keep=rescore == "new")
        self.top_p, self.windows = float(top_p), windows
        self.window_start, self.entropy = window_start, entropy
        self.kept_slots: np.ndarray | None = None  # top-p trajectories (prepare_round)
        self.policy_version: int | None = None  # set by the learner for the staleness metric

    @classmethod
    def from_config(cls, cfg: Config, policy: AutoUIPolicy, *, device: str = "cpu") -> DistRL:
        """Wire the algorithm from ``cfg.algorithm`` with a fresh critic on ``device``."""
        a = cfg.algorithm
        critic = StepCritic(
            critic_text_encoder(cfg, device),
            image_feature_dim(cfg.agent),
            hidden=cfg.agent.critic_hidden,
        ).to(device)
        return cls(
            policy,
            critic,
            gamma=a.gamma,
            lambda_=a.lambda_,
            rho_bar=a.rho_bar,
            c_bar=a.c_bar,
            entropy_coef=a.entropy_coef,
            invalid_coef=a.invalid_coef,
            policy_advantage=a.distrl.advantage,
            ratio_clip=a.ratio_clip,
            sequence_length=a.sequence_length,
            priority_weights=a.distrl.priority_weights,
            priority_beta=a.distrl.priority_beta,
            priority_rho_clip=a.distrl.priority_rho_clip,
            horizons={"general": cfg.env.horizon_general, "webshop": cfg.env.horizon_webshop},
            top_p=a.distrl.top_p,
            windows=a.distrl.windows,
            window_start=a.distrl.window_start,
            entropy=a.distrl.entropy,
            rescore=a.distrl.rescore,
        )

    def micro_batches(self, micro_batch_size: int) -> int:
        """Micro-batches per optimizer step so that it sees ``windows`` actor windows."""
        if self.windows is None:
            return 1
        return max(1, -(-self.windows // micro_batch_size))

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"policy": self.policy.model, "critic": self.critic}

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        return [
            param_group("policy", trainable_parameters(self.policy.model), lr_policy),
            param_group("critic", trainable_parameters(self.critic), lr_critic),
        ]

    def _priorities(
        self, ev: Evaluated, log_probs: torch.Tensor, batch: Batch, mask: torch.Tensor
    ) -> np.ndarray:
        return dper_priorities(
            ev,
            log_probs,
            batch,
            mask,
            weights=self.priority_weights,
            rho_clip=self.priority_rho_clip,
        )

    @torch.no_grad()
    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        """DPER priorities for the round, and with ``top_p < 1`` the filtered trajectories.

        ``rescore="all"`` recomputes every stored trajectory's priority with the current policy
        and critic; ``"new"`` scores only the trajectories without a known priority (a full
        re-score costs many updates' time: benchmarks/results/2026-11-25-ablation.md).
        """
        if replay.num_trajectories == 0:
            raise ValueError("prepare_round: the replay buffer is empty")
        todo = self.book.restore(replay)
        if len(todo):
            self.book.scored(replay, todo, self.score_trajectories(replay, todo))
        prio = replay.priorities()
        metrics = {
            "train/priority_mean": float(prio.mean()),
            "train/priority_max": float(prio.max()),
            "train/trajectories": float(replay.num_trajectories),
            "train/rescored": float(len(todo)),
        }
        return {**metrics, **self.refresh_filter(replay)}

    @property
    def known_priorities(self) -> dict[str, float]:
        """Trajectory id -> last DPER priority (``rescore="new"``; the learner saves it)."""
        return self.book.known

    @known_priorities.setter
    def known_priorities(self, value: dict[str, float]) -> None:
        self.book.known = dict(value)

    def remember_priorities(self, replay: ReplayBuffer) -> None:
        """End of a round: keep every stored trajectory's priority by id (``rescore="new"``)."""
        self.book.remember(replay)

    @torch.no_grad()
    def score_trajectories(self, replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
        """DPER priorities of the trajectories in ``slots`` (``[N]``) under the current policy
        and critic, written to ``replay`` and returned. The continuous learner scores only the
        trajectories that arrived (as Ape-X's actors give new data its first priority); the
        loss re-prioritizes the windows it trains on."""
        out = []
        for i in range(0, len(slots), self.chunk):
            batch = batch_from_trajectories(
                replay, slots[i : i + self.chunk], horizons=self.horizons
            )
            ev = evaluate_critic(self.critic, batch, self.gamma)
            log_probs, _, _ = score_steps(self.policy, batch)
            mask = batch.mask.to(ev.values.device)
            out.append(self._priorities(ev, log_probs, batch, mask))
        prio = np.concatenate(out) if out else np.zeros(0)
        replay.update_priorities(slots, prio)
        return prio

    def refresh_filter(self, replay: ReplayBuffer) -> dict[str, float]:
        """Re-select the top-p trajectories by return (cheap: no scoring); {} when unfiltered."""
        if self.top_p >= 1.0:
            return {}
        self.kept_slots, metrics = D.top_p_slots(replay, self.top_p)
        return metrics

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> Batch:
        """Prioritized windows of ``sequence_length`` steps, drawn with ``rng``.

        With ``top_p < 1`` these train the critic, and ``batch_size`` more windows drawn
        uniformly from the filtered trajectories train the actor (``Batch.actor_rows``).
        First writes the priorities computed by the previous :meth:`loss` for its windows
        (slots evicted since are skipped). The learner's ``rng`` (one stream per rank, saved in
        its checkpoints) draws, so ranks sample different windows and resume is exact.
        """
        self.book.flush(replay)
        if self.window_start == "trajectory":
            length, starts = D.max_length(replay), "fit"  # one window from step 0, padded
        else:
            length, starts = self.sequence_length, self.window_start
        filtered = self.top_p < 1.0
        if filtered and self.kept_slots is None:
            raise ValueError("top_p < 1 needs the filtered trajectories: call prepare_round first")
        return D.sample_windows(
            replay,
            batch_size,
            rng,
            length=length,
            starts=starts,
            beta=self.priority_beta,
            horizons=self.horizons,
            kept_slots=self.kept_slots if filtered else None,
        )

    def _targets(self, ev: Evaluated, log_rhos: torch.Tensor, mask: torch.Tensor):
        return retrace_targets(
            ev, log_rhos, mask, lambda_=self.lambda_, c_bar=self.c_bar, rho_bar=self.rho_bar
        )

    def critic_loss(self, batch: Batch) -> LossOutput:
        """Critic-only loss for the pre-fit: no policy scoring, Retrace with ``rho = 1``."""
        ev = evaluate_critic(self.critic, batch, self.gamma)
        mask = batch.mask.to(ev.values.device)
        returns = self._targets(ev, torch.zeros_like(ev.values), mask)
        loss = critic_bce(ev, returns.vs, batch, mask)
        return LossOutput(loss, {"losses/value": loss}, {}, critic_loss=loss)

    def loss(self, batch: Batch) -> LossOutput:
        """One A-RIDE update on sampled windows: critic BCE toward clipped Retrace targets plus
        the actor loss; the windows' new priorities are written at the next :meth:`sample`."""
        # 1. the critic's view: V(s_t), the bootstrap, rewards (+ penalties) and discounts
        ev = evaluate_critic(self.critic, batch, self.gamma)
        device = ev.values.device
        mask = batch.mask.to(device)
        # 2. the current policy's log pi(a_t|s_t) and entropy on the actor rows
        log_probs, entropy = score_actor_rows(
            self.policy, batch, entropy_per_token=self.entropy == "token_mean"
        )
        log_probs, entropy = log_probs.to(device), entropy.to(device)
        mu = batch.behavior_log_probs.to(device)
        # 3. Retrace targets G_t and advantages min(rho_bar, rho) * A_t, rho = pi / mu
        returns = self._targets(ev, log_probs.detach() - mu, mask)
        # 4. the critic's loss: both heads toward clip(G_t, 0, 1)
        critic_loss = critic_bce(ev, returns.vs, batch, mask)
        # 5. the actor's loss: policy gradient, entropy bonus, invalid-action penalty
        actor_mask = mask & batch.actor_rows.to(device).unsqueeze(1)
        actor, terms = actor_loss(
            log_probs,
            mu,
            entropy,
            returns.pg_advantages,
            batch.invalid.to(device),
            batch.weights.to(device),
            actor_mask,
            entropy_coef=0.0 if self.entropy == "off" else self.entropy_coef,
            invalid_coef=self.invalid_coef,
            rho_bar=self.rho_bar,
            positive_only=self.positive_only,
            ratio_clip=self.ratio_clip,
        )
        # 6. DPER priorities of these windows under the current policy and critic
        self.book.defer(batch.slots, self._priorities(ev, log_probs, batch, mask))
        # 7. what the update saw
        terms["losses/value"] = critic_loss
        metrics = loss_diagnostics(
            log_probs,
            mu,
            returns.pg_advantages,
            returns.vs,
            ev.values,
            mask,
            actor_mask,
            rho_bar=self.rho_bar,
        )
        if self.policy_version is not None:
            versions = batch.policy_versions.float().mean()
            metrics["train/staleness"] = float(self.policy_version - versions)
        return LossOutput(actor + critic_loss, terms, metrics, critic_loss=critic_loss)

    @torch.no_grad()
    def init_critic_bias(self, replay: ReplayBuffer) -> dict[str, float]:
        """Set the critic's output bias to ``logit(mean target)`` over every stored step."""
        slots = np.asarray(replay.slots, dtype=np.int64)
        mean = float(D.step_targets_of(replay, slots, self.gamma).mean())
        self.critic.init_output_bias(critic_fit.logit(mean))
        return {"critic/init_target_mean": mean}

    @torch.no_grad()
    def calibration(self, replay: ReplayBuffer) -> dict[str, float]:
        """Calibration of ``V`` on the replay (see :func:`critic_fit.calibration`).

        Every stored step's ``V(s_t)`` against its on-policy target ``clip(G_t, 0, 1)``
        (``critic/brier``, ``critic/ece``, ``critic/value_mean``, ``critic/target_mean``), and
        ``V(s_0)`` against the measured success rate (``critic/v0_mean``,
        ``critic/success_rate``; with ``gamma < 1`` the first is the discounted success
        probability, so ``critic/v0_target_mean`` gives what it should match).
        """
        return D.replay_calibration(
            replay,
            lambda b: evaluate_critic(self.critic, b, self.gamma).values,
            self.gamma,
            self.chunk,
            self.horizons,
        )


# ---------------------------------------------------------------------------------------------
# One update, in the order :meth:`DistRL.loss` runs it: the critic's view of the sampled
# windows, the Retrace targets, the critic's loss, the actor's loss, the windows' new
# priorities and what the update saw. Pure tensor functions, tested against hand-computed values.
# ---------------------------------------------------------------------------------------------


@dataclass
class Evaluated:
    """What the critic says about a batch's windows, needed by the loss and the priorities."""

    logits: torch.Tensor  # [B*T, 2] critic logits at s_t (with gradient)
    values: torch.Tensor  # [B, T] V(s_t) = min over the heads, detached
    bootstrap: torch.Tensor  # [B] V after each row's last real step, detached
    rewards: torch.Tensor  # [B, T] reward + penalty
    discounts: torch.Tensor  # [B, T] gamma, 0 after a terminal step


def evaluate_critic(critic: StepCritic, batch: Batch, gamma: float) -> Evaluated:
    """Run the double critic on ``batch``'s ``B`` windows of ``T`` steps.

    ``V(s_t)`` keeps the logits' graph (the critic's loss); the next-state values that give
    each row's bootstrap ``V(s_{last+1})`` are computed without one.
    """
    b, t = batch.batch_size, batch.length
    dim = batch.features.shape[-1]
    device = critic.heads[0][0].weight.device
    logits = critic(
        batch.prompts, batch.prev_features.reshape(-1, dim), batch.features.reshape(-1, dim)
    )
    # float32 whatever the autocast dtype: the Retrace targets are computed in float32
    values = torch.sigmoid(logits.detach().float()).min(dim=1).values.reshape(b, t)
    with torch.no_grad():
        next_values = (
            critic.values(
                batch.next_prompts,
                batch.features.reshape(-1, dim),
                batch.next_features.reshape(-1, dim),
            )
            .float()
            .reshape(b, t)
        )
    last = (batch.mask.sum(dim=1) - 1).clamp(min=0).to(device)
    bootstrap = next_values.gather(1, last.unsqueeze(1)).squeeze(1)
    rewards = (batch.rewards + batch.penalties).to(device)
    discounts = F.discounts_from_dones(batch.dones.to(device), gamma, torch.float32)
    return Evaluated(logits, values, bootstrap, rewards, discounts)


def retrace_targets(
    ev: Evaluated,
    log_rhos: torch.Tensor,
    mask: torch.Tensor,
    *,
    lambda_: float,
    c_bar: float,
    rho_bar: float,
) -> F.OffPolicyReturns:
    """Retrace(lambda) targets ``G_t`` (``.vs``) and truncated advantages (``.pg_advantages``),
    both ``[B, T]``, for ``log_rhos = log pi - log mu`` (zeros: on-policy, ``rho = 1``)."""
    return F.retrace(
        log_rhos,
        ev.rewards,
        ev.values,
        ev.bootstrap,
        ev.discounts,
        lambda_=lambda_,
        c_bar=c_bar,
        rho_bar=rho_bar,
        mask=mask,
    )


def critic_bce(ev: Evaluated, vs: torch.Tensor, batch: Batch, mask: torch.Tensor) -> torch.Tensor:
    """Weighted BCE of both heads toward ``clip(vs, 0, 1)`` (``vs``: ``[B, T]`` Retrace
    targets) on the critic rows' real steps, each weighted by its window's importance weight."""
    device = mask.device
    sel = (mask & batch.critic_rows.to(device).unsqueeze(1)).reshape(-1)
    step_w = batch.weights.to(device).unsqueeze(1).expand_as(mask).reshape(-1)[sel]
    return weighted_bce(ev.logits[sel], vs.reshape(-1)[sel].clamp(0.0, 1.0), step_w)


def actor_loss(
    log_probs: torch.Tensor,
    behavior_log_probs: torch.Tensor,
    entropy: torch.Tensor,
    pg_advantages: torch.Tensor,
    invalid: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    *,
    entropy_coef: float,
    invalid_coef: float,
    rho_bar: float = 1.0,
    positive_only: bool = False,
    ratio_clip: float = 0.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A-RIDE's actor loss (see the module docstring); averages run over real steps.

    Args:
        log_probs: ``[B, T]`` ``log pi(a_t|s_t)`` with gradient.
        behavior_log_probs: ``[B, T]`` ``log mu(a_t|s_t)``.
        entropy: ``[B, T]`` policy entropy at ``s_t`` with gradient.
        pg_advantages: ``[B, T]`` ``min(rho_bar, rho_t) * A_t`` (treated as constants).
        invalid: ``[B, T]`` bool, action failed to parse.
        weights: ``[B]`` prioritized-replay importance weights.
        mask: ``[B, T]`` bool, real steps.
        entropy_coef: ``beta``.
        invalid_coef: ``lambda_inv``.
        rho_bar: Truncation of the importance ratio (invalid-action term, ``positive_only``).
        positive_only: Replace ``min(rho_bar, rho) * A`` by ``min(rho_bar, rho) * 1[A > 0]``.
        ratio_clip: ``eps`` of the trust-region mask (0 = off).

    Returns:
        ``(loss, terms)`` with ``terms`` holding ``losses/policy``, ``losses/entropy`` (the
        mean entropy, a bonus) and ``losses/invalid`` (the estimated ``P_inv``).
    """
    w = weights.to(log_probs.dtype).unsqueeze(1).expand_as(log_probs)
    lp_const = log_probs.detach()
    ratio = torch.exp(lp_const - behavior_log_probs)
    rho = ratio.clamp(max=rho_bar)
    # sign(min(rho_bar, rho) * A) = sign(A) since rho > 0, so the sign of coef is A's
    coef = pg_advantages.detach()
    if ratio_clip > 0:
        gone = ((coef > 0) & (ratio > 1 + ratio_clip)) | ((coef < 0) & (ratio < 1 - ratio_clip))
        coef = torch.where(gone, torch.zeros_like(coef), coef)
    if positive_only:
        coef = rho * (coef > 0).to(rho.dtype)
    policy = masked_average(-w * coef * log_probs, mask)
    ent = masked_average(w * entropy, mask)
    rho_tilde = torch.exp(log_probs - lp_const) * rho
    p_invalid = masked_average(w * invalid.to(log_probs.dtype) * rho_tilde, mask)
    loss = policy - entropy_coef * ent + invalid_coef * p_invalid
    return loss, {"losses/policy": policy, "losses/entropy": ent, "losses/invalid": p_invalid}


def dper_priorities(
    ev: Evaluated,
    log_probs: torch.Tensor,
    batch: Batch,
    mask: torch.Tensor,
    *,
    weights: tuple[float, float, float],
    rho_clip: float,
) -> np.ndarray:
    """``[B]`` DPER priorities ``w1 mean|delta| + w2 mean rho + w3 mean(-log pi)`` of the rows
    (:func:`functional.dper_priority`), from one-step TD errors under ``ev``'s values."""
    deltas = F.td_errors(ev.rewards, ev.values, ev.bootstrap, ev.discounts, mask=mask)
    w1, w2, w3 = weights
    prio = F.dper_priority(
        deltas,
        log_probs.detach(),
        batch.behavior_log_probs.to(deltas.device),
        w1=w1,
        w2=w2,
        w3=w3,
        rho_clip=rho_clip,
        mask=mask,
    )
    return prio.cpu().numpy().astype(np.float64)


@torch.no_grad()
def loss_diagnostics(
    log_probs: torch.Tensor,
    behavior_log_probs: torch.Tensor,
    pg_advantages: torch.Tensor,
    targets: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    actor_mask: torch.Tensor,
    *,
    rho_bar: float,
) -> dict[str, float]:
    """What one A-RIDE loss saw, all ``[B, T]`` inputs (``mask``: real steps, ``actor_mask``:
    the actor rows' real steps).

    ``train/ess`` is the normalised effective sample size of the truncated ratios
    ``(sum c)^2 / (n sum c^2)`` with ``c = min(rho_bar, rho)``; ``train/clip_frac`` the share of
    steps with ``rho > rho_bar``; ``train/adv_mean`` and ``train/adv_pos_frac`` the advantages
    the actor was given; ``train/value_mean`` and ``train/target_mean`` the critic's ``V`` and
    its Retrace targets.
    """
    rhos = torch.exp(log_probs - behavior_log_probs)[mask]
    clipped = rhos.clamp(max=rho_bar)
    ess = clipped.sum() ** 2 / (len(clipped) * (clipped**2).sum()).clamp(min=1e-12)
    return {
        "train/ess": float(ess),
        "train/clip_frac": float((rhos > rho_bar).float().mean()),
        "train/adv_mean": float(masked_average(pg_advantages, actor_mask)),
        "train/adv_pos_frac": float(masked_average((pg_advantages > 0).float(), actor_mask)),
        "train/value_mean": float(masked_average(values, mask)),
        "train/target_mean": float(masked_average(targets, mask)),
    }
