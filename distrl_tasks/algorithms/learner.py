"""The learner: optimizer steps of any :class:`Algorithm` on the replay window, via accelerate.

The same code runs in one process, in a multi-process CPU (gloo) job and on several GPUs.
``accelerate`` sets up the process group, the device and bf16 autocast. Gradients are averaged
across processes by an explicit all-reduce after the backward passes rather than by wrapping the
modules in ``DistributedDataParallel``: algorithms call model methods other than ``forward``
(``encode``/``decode`` through :meth:`AutoUIPolicy.score`), which a DDP wrapper never sees. The
reduce is one flat buffer per dtype, done once per optimizer step (after gradient accumulation),
which is what DDP would do without its overlap of communication and backward.

Batch sizes: ``algorithm.batch_size`` is the global batch of one optimizer step. Each of the
``P`` processes draws ``batch_size / (P * grad_accum_steps)`` samples per micro-batch with its own
generator (:func:`rank_rng`), so the update equals one process's update on the union of the
ranks' samples. Learning rate: linear warmup over ``warmup_steps`` then constant.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator

from distrl_tasks.agents import checkpoint as policy_checkpoint
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.algorithms import critic_fit
from distrl_tasks.algorithms import train_state as ts
from distrl_tasks.algorithms.algorithm import Algorithm
from distrl_tasks.config import Config, CriticPrefitConfig
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.protocol.files import publish_dir

# Every metric train_round can report (the algorithm may add its own ``losses/``, ``train/``).
METRIC_NAMES = (
    "losses/policy",  # policy-gradient (or BC) loss term
    "losses/value",  # critic regression loss term
    "losses/entropy",  # entropy bonus term
    "train/ess",  # effective sample size of the importance weights, as a fraction
    "train/clip_frac",  # fraction of importance ratios clipped at rho_bar
    "train/staleness",  # learner policy version minus the data's behaviour version
    "train/grad_norm",  # global gradient norm before clipping, mean over the round's steps
    "train/lr",  # learning rate of the first param group after the round
    "train/samples_per_s",  # samples consumed per second, all processes together
    "train/steps",  # optimizer steps taken so far (all rounds)
    "train/policy_version",  # policy version after the round
    "train/skipped_steps",  # steps skipped: the replay had no signal (group methods)
    # where the round's wall time went (seconds): what makes one method's learner round slower
    # than another's on shared cores, read off a run rather than profiled
    "perf/prepare_s",  # algorithm.prepare_round (DistRL: DPER re-scoring of the replay)
    "perf/critic_s",  # critic-only steps: the fresh critic's pre-fit and the warm-up
    "perf/actor_s",  # the round's full optimizer steps
    "perf/calibration_s",  # the critic's calibration on the replay (0 without one)
)
# Reported too when the algorithm has a step critic (pre-fit: only in a fresh critic's round).
CRITIC_METRIC_NAMES = (
    "critic/prefit_steps",  # critic-only pre-fit steps taken (fresh critic, plateau rule)
    "critic/brier",  # calibration of V on the replay: Brier score against clip(G_t, 0, 1)
    "critic/ece",  # expected calibration error (10 bins) of the same
    "critic/v0_mean",  # mean V(s_0) (against critic/success_rate and critic/v0_target_mean)
)
MIXED_PRECISION = ("no", "bf16")


def rank_rng(seed: int, rank: int) -> np.random.Generator:
    """The sampling generator of process ``rank``: one independent stream per rank."""
    return np.random.default_rng([seed, rank])


class Learner:
    """Trains ``algorithm``'s modules; checkpoints and resumes exactly.

    Args:
        cfg: the configuration (``algorithm.lm_lr``, ``critic_lr``, ``batch_size``,
            ``max_grad_norm`` are used here).
        algorithm: what to train (see :class:`distrl_tasks.algorithms.algorithm.Algorithm`).
        accelerator: an existing ``Accelerator`` (its mixed precision wins); None builds one.
        out_dir: checkpoints go to ``out_dir/checkpoints``.
        seed: seeds torch and the per-rank sampling generators.
        grad_accum_steps: micro-batches per optimizer step.
        mixed_precision: ``"no"`` or ``"bf16"`` (used only when ``accelerator`` is None).
        warmup_steps: linear learning-rate warmup length in optimizer steps (0 = none).
        weight_decay: AdamW weight decay (0 = Adam).
        policy_version: version of the policy being trained (incremented per round).
    """

    def __init__(
        self,
        cfg: Config,
        algorithm: Algorithm,
        *,
        accelerator: Accelerator | None = None,
        out_dir: str | os.PathLike,
        seed: int = 0,
        grad_accum_steps: int = 1,
        mixed_precision: str = "no",
        warmup_steps: int = 0,
        weight_decay: float = 0.0,
        policy_version: int = 0,
    ) -> None:
        if mixed_precision not in MIXED_PRECISION:
            raise ValueError(
                f"mixed_precision must be one of {MIXED_PRECISION}, got {mixed_precision!r}"
            )
        if grad_accum_steps < 1 or warmup_steps < 0 or weight_decay < 0:
            raise ValueError(
                f"need grad_accum_steps >= 1, warmup_steps >= 0, weight_decay >= 0; got "
                f"{grad_accum_steps}, {warmup_steps}, {weight_decay}"
            )
        self.accelerator = accelerator or Accelerator(mixed_precision=mixed_precision)
        if self.accelerator.mixed_precision not in MIXED_PRECISION:
            raise ValueError(
                f"accelerator mixed_precision {self.accelerator.mixed_precision!r} is not "
                f"supported (fp16 needs loss scaling); use one of {MIXED_PRECISION}"
            )
        world = self.accelerator.num_processes
        per_step = world * grad_accum_steps
        if cfg.algorithm.batch_size % per_step:
            raise ValueError(
                f"algorithm.batch_size {cfg.algorithm.batch_size} must be divisible by "
                f"processes ({world}) x grad_accum_steps ({grad_accum_steps})"
            )
        self.cfg, self.algorithm = cfg, algorithm
        self.micro_batch_size = cfg.algorithm.batch_size // per_step
        self.grad_accum_steps, self.warmup_steps = grad_accum_steps, warmup_steps
        # algorithms that want more samples per step than the batch (A-RIDE's windows) ask
        # for more micro-batches; the checkpointed grad_accum_steps stays the configured one
        more = getattr(algorithm, "micro_batches", None)
        self.micro_batches = grad_accum_steps * (more(self.micro_batch_size) if more else 1)
        self.out_dir = Path(out_dir)
        self.seed, self.step, self.policy_version = seed, 0, policy_version
        torch.manual_seed(seed)
        self.rng = rank_rng(seed, self.accelerator.process_index)

        self.modules = dict(algorithm.modules())
        for module in self.modules.values():
            module.to(self.accelerator.device)
        self.params = ts.unique_params(self.modules)
        self._broadcast_from_rank0()
        groups = algorithm.param_groups(cfg.algorithm.lm_lr, cfg.algorithm.critic_lr)
        for group in groups:
            group.setdefault("initial_lr", group["lr"])  # the schedule scales this
        self.optimizer = torch.optim.AdamW(groups, weight_decay=weight_decay)
        self._set_lr()

    # --- the loop ---------------------------------------------------------------------------

    def train_round(
        self,
        replay: ReplayBuffer,
        steps: int,
        *,
        critic_steps: int = 0,
        prefit: CriticPrefitConfig | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> dict[str, float]:
        """Pre-fit a fresh critic, ``critic_steps`` critic-only steps, then ``steps`` full steps.

        ``on_step(phase)`` is called after each critic-only ("critic") and full ("actor") step,
        e.g. to advance a progress bar.

        The warm-up (DigiRL trains its critics before the actor every round) lets a stale critic
        catch up with the new data before its values become the actor's baseline; ``prefit``
        (given for a fresh critic) first runs :meth:`prefit_critic`. Both are skipped for
        algorithms without critics. The critic's calibration on the replay (``critic/...``) is
        measured after the round when the algorithm offers it. Returns the round's mean metrics.
        """
        if steps < 1 or critic_steps < 0:
            raise ValueError(f"need steps >= 1 and critic_steps >= 0, got {steps}, {critic_steps}")
        for module in self.modules.values():
            module.train()
        totals: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)

        def record(values: dict[str, float]) -> None:
            for name, value in values.items():
                totals[name] += float(value)
                counts[name] += 1

        fitted: dict[str, float] = {}
        clock = time.perf_counter()
        if prefit is not None and prefit.enabled:
            fitted = self.prefit_critic(replay, prefit)
        critic_s = time.perf_counter() - clock
        clock = time.perf_counter()
        record(self.algorithm.prepare_round(replay))
        prepare_s = time.perf_counter() - clock
        clock = time.perf_counter()
        for _ in range(critic_steps):
            if not self._optimizer_step(replay, record, critic_only=True):
                break
            if on_step is not None:
                on_step("critic")
        critic_s += time.perf_counter() - clock
        started, samples, skipped = time.perf_counter(), 0, 0
        for _ in range(steps):
            if self._optimizer_step(replay, record, critic_only=False):
                samples += self.micro_batch_size * self.micro_batches
            else:
                skipped += 1
            if on_step is not None:
                on_step("actor")
        elapsed = time.perf_counter() - started

        remember = getattr(self.algorithm, "remember_priorities", None)
        if remember is not None:  # DistRL's rescore="new": priorities by id, saved with the state
            remember(replay)
        metrics = self._mean_over_processes({k: totals[k] / counts[k] for k in sorted(totals)})
        metrics.update(fitted)
        self.policy_version += 1
        metrics["train/samples_per_s"] = samples * self.accelerator.num_processes / elapsed
        metrics["train/lr"] = float(self.optimizer.param_groups[0]["lr"])
        metrics["train/steps"] = float(self.step)
        metrics["train/skipped_steps"] = float(skipped)
        metrics["train/policy_version"] = float(self.policy_version)
        clock = time.perf_counter()
        calibrate = getattr(self.algorithm, "calibration", None)
        if calibrate is not None:
            with torch.no_grad():
                metrics.update(calibrate(replay))
        metrics["perf/prepare_s"] = prepare_s
        metrics["perf/critic_s"] = critic_s
        metrics["perf/actor_s"] = elapsed
        metrics["perf/calibration_s"] = time.perf_counter() - clock
        return metrics

    def update(self, replay: ReplayBuffer) -> dict[str, float]:
        """One full optimizer step on ``replay`` (the continuous learner's unit); its metrics.

        The caller runs ``algorithm.prepare_round`` when the replay changed enough (the
        continuous learner does at every published version).
        """
        for module in self.modules.values():
            module.train()
        values: dict[str, list[float]] = defaultdict(list)

        def record(metrics: dict[str, float]) -> None:
            for name, value in metrics.items():
                values[name].append(float(value))

        if not self._optimizer_step(replay, record, critic_only=False):
            return {"train/skipped_steps": 1.0}
        return {name: float(np.mean(v)) for name, v in values.items()}

    def prefit_critic(self, replay: ReplayBuffer, rule: CriticPrefitConfig) -> dict[str, float]:
        """Fit the critic alone: bias at ``logit(mean target)``, then steps until a plateau.

        Steps stop once ``rule.min_steps`` are done and :func:`critic_fit.plateaued` holds for
        the step losses (``rule.window``, ``rule.rel_tol``), or at ``rule.max_steps``. Returns
        ``critic/prefit_steps`` and the mean loss of the first and last windows.
        """
        init = getattr(self.algorithm, "init_critic_bias", None)
        out: dict[str, float] = dict(init(replay)) if init and rule.bias_init else {}
        losses: list[float] = []  # one per optimizer step: the mean over its micro-batches
        current: list[float] = []

        def record(values: dict[str, float]) -> None:
            if "losses/critic_warmup" in values:
                current.append(float(values["losses/critic_warmup"]))

        self.algorithm.prepare_round(replay)  # filters and priorities the samples need
        for i in range(rule.max_steps):
            if i >= rule.min_steps and critic_fit.plateaued(losses, rule.window, rule.rel_tol):
                break
            current.clear()
            if not self._optimizer_step(replay, record, critic_only=True):
                break
            losses.append(float(np.mean(current)))
        w = max(1, min(rule.window, len(losses)))
        out["critic/prefit_steps"] = float(len(losses))
        if losses:
            out["critic/prefit_loss_first"] = float(np.mean(losses[:w]))
            out["critic/prefit_loss_last"] = float(np.mean(losses[-w:]))
        return out

    def _optimizer_step(
        self, replay: ReplayBuffer, record: Callable[[dict[str, float]], None], critic_only: bool
    ) -> bool:
        """One optimizer step (all micro-batches); False when ``critic_only`` finds no critic,
        or when the algorithm says the replay holds nothing to learn from.

        Critic-only steps use the algorithm's ``critic_loss`` when it has one (it scores no
        policy), else the critic part of its full loss. An algorithm with ``has_signal(replay)``
        (the group-relative ones: a round whose groups all got one return has no advantage
        anywhere) skips the step when it is False on any process (``train/skipped_steps``): a
        zero gradient would still move Adam's weights by momentum.
        """
        if critic_only and set(self.modules) <= {"policy"}:
            return False  # no critic to step (and no batch to draw for it)
        if not critic_only and not self._has_signal(replay):
            return False
        self.optimizer.zero_grad(set_to_none=True)
        critic_loss = getattr(self.algorithm, "critic_loss", None) if critic_only else None
        for _ in range(self.micro_batches):
            batch = self.algorithm.sample(replay, self.micro_batch_size, self.rng)
            with self.accelerator.autocast():
                out = critic_loss(batch) if critic_loss else self.algorithm.loss(batch)
            if critic_only:
                if out.critic_loss is None:
                    return False
                (out.critic_loss / self.micro_batches).backward()
                record({"losses/critic_warmup": float(out.critic_loss.detach())})
            else:
                (out.loss / self.micro_batches).backward()
                record(out.log_dict())
        self._average_gradients()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.algorithm.max_grad_norm)
        record(
            {"train/grad_norm" if not critic_only else "train/critic_grad_norm": float(grad_norm)}
        )
        self.optimizer.step()
        self.step += 1
        self._set_lr()
        return True

    def _has_signal(self, replay: ReplayBuffer) -> bool:
        """The algorithm's ``has_signal`` on every process (True when it has none)."""
        check = getattr(self.algorithm, "has_signal", None)
        ok = True if check is None else bool(check(replay))
        if self._distributed():
            flag = torch.tensor([int(ok)], device=self.accelerator.device, dtype=torch.int32)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MIN)
            ok = bool(flag.item())
        return ok

    def _set_lr(self) -> None:
        scale = min(1.0, (self.step + 1) / self.warmup_steps) if self.warmup_steps else 1.0
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] * scale

    # --- multi-process plumbing -------------------------------------------------------------

    def _distributed(self) -> bool:
        return self.accelerator.num_processes > 1

    def _broadcast_from_rank0(self) -> None:
        """Start every rank from rank 0's weights, as DDP does."""
        if not self._distributed():
            return
        with torch.no_grad():
            for tensor in [*self.params, *ts.module_buffers(self.modules)]:
                torch.distributed.broadcast(tensor.data, src=0)

    def _average_gradients(self) -> None:
        """Mean of every gradient over processes; a parameter no rank touched keeps None."""
        if not self._distributed():
            return
        device = self.accelerator.device
        has = torch.tensor(
            [p.grad is not None for p in self.params], device=device, dtype=torch.int32
        )
        torch.distributed.all_reduce(has, op=torch.distributed.ReduceOp.MAX)
        live = [p for p, h in zip(self.params, has.tolist(), strict=True) if h]
        for p in live:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = defaultdict(list)
        for p in live:
            by_dtype[p.grad.dtype].append(p.grad)
        for grads in by_dtype.values():
            flat = torch.cat([g.reshape(-1) for g in grads])
            torch.distributed.all_reduce(flat)
            flat /= self.accelerator.num_processes
            for g, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
                g.copy_(part.view_as(g))

    def _mean_over_processes(self, metrics: dict[str, float]) -> dict[str, float]:
        """Average each metric over ranks (every rank runs the same algorithm: same names)."""
        if not self._distributed():
            return metrics
        values = torch.tensor(
            list(metrics.values()), dtype=torch.float64, device=self.accelerator.device
        )
        values = self.accelerator.reduce(values, reduction="mean")
        return dict(zip(metrics, values.tolist(), strict=True))

    # --- checkpoints ------------------------------------------------------------------------

    def trained_policy(self) -> AutoUIPolicy | None:
        """The algorithm's AutoUIPolicy when ``modules()["policy"]`` is its model."""
        policy = getattr(self.algorithm, "policy", None)
        if isinstance(policy, AutoUIPolicy) and self.modules.get("policy") is policy.model:
            return policy
        return None

    def save_checkpoint(self, name: str | None = None) -> Path:
        """Write a complete, atomically published checkpoint; returns its directory.

        Collective: every process must call it (each contributes its RNG states). The layout
        is :mod:`train_state`'s; :func:`_save_checkpoint` writes it.
        """
        return _save_checkpoint(self, name or f"step-{self.step:08d}")

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore weights, optimizer, schedule, counters and RNG states from ``path``.

        Raises:
            TrainStateError: a missing file, another world size, or modules/optimizer groups
                that do not match this learner.
        """
        _load_checkpoint(self, Path(path))
        self._set_lr()


# Checkpoints. The files and their format are train_state's; these helpers know which parts of a
# learner go where. Saving is collective (every rank writes its RNG streams and, for DistRL with
# ``rescore: new``, its replay priorities); the main rank writes the rest and publishes the
# directory atomically, then deletes states older than the newest ``algorithm.keep_states``.


def _save_checkpoint(learner: Learner, name: str) -> Path:
    """Write checkpoint ``name`` under ``<out_dir>/checkpoints``; returns its directory."""
    root = learner.out_dir / "checkpoints"
    final, tmp = root / name, root / f".tmp-{name}"
    rank = learner.accelerator.process_index
    if learner.accelerator.is_main_process:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    learner.accelerator.wait_for_everyone()
    ts.save_tensors(ts.torch_rng_tensors(), tmp / f"rng-rank{rank}.safetensors")
    ts.write_json(tmp / f"rng-rank{rank}.json", ts.numpy_rng_json(learner.rng))
    known = getattr(learner.algorithm, "known_priorities", None)
    if known:  # each rank's replay priorities are its own (it sampled its own windows)
        ts.save_priorities(known, tmp / f"priorities-rank{rank}.parquet")
    learner.accelerator.wait_for_everyone()
    if learner.accelerator.is_main_process:
        _write_main_files(learner, tmp)
        publish_dir(tmp, final)
        ts.write_latest(root, name)
        ts.prune_checkpoints(root, learner.cfg.algorithm.keep_states)
    learner.accelerator.wait_for_everyone()
    return final


def _write_main_files(learner: Learner, tmp: Path) -> None:
    policy = learner.trained_policy()
    meta = {
        "policy_version": learner.policy_version,
        "step": learner.step,
        "algorithm": learner.algorithm.name,
    }
    if policy is not None:
        policy.save(tmp / ts.POLICY_DIR, metadata=meta)
    (tmp / ts.MODULES_DIR).mkdir()
    for role, module in learner.modules.items():
        if policy is None or role != "policy":
            ts.save_module(module, tmp / ts.MODULES_DIR / f"{role}.safetensors")
    tensors, opt_meta = ts.optimizer_to_files(learner.optimizer)
    ts.save_tensors(tensors, tmp / ts.OPTIMIZER_FILE)
    state: dict[str, Any] = {
        "format_version": ts.FORMAT_VERSION,
        **meta,
        "seed": learner.seed,
        "world_size": learner.accelerator.num_processes,
        "grad_accum_steps": learner.grad_accum_steps,
        "modules": sorted(learner.modules),
        "optimizer": opt_meta,
    }
    ts.write_json(tmp / ts.STATE_FILE, state)


def _load_checkpoint(learner: Learner, where: Path) -> None:
    """Restore ``learner`` from checkpoint directory ``where`` (the caller resets the lr)."""
    state = ts.read_json(where / ts.STATE_FILE)
    if state.get("format_version") != ts.FORMAT_VERSION:
        raise ts.TrainStateError(
            f"{where}: unsupported format_version {state.get('format_version')!r}"
        )
    if state["world_size"] != learner.accelerator.num_processes:
        raise ts.TrainStateError(
            f"{where}: saved by {state['world_size']} processes, resuming with "
            f"{learner.accelerator.num_processes}; per-rank sampling streams would not match"
        )
    if state["modules"] != sorted(learner.modules):
        raise ts.TrainStateError(
            f"{where}: modules {state['modules']} vs learner {sorted(learner.modules)}"
        )
    policy = learner.trained_policy()
    for role, module in learner.modules.items():
        if policy is not None and role == "policy":
            saved, _ = policy_checkpoint.load_checkpoint(where / ts.POLICY_DIR)
            module.load_state_dict(saved.state_dict())
        else:
            ts.load_module(module, where / ts.MODULES_DIR / f"{role}.safetensors")
    ts.optimizer_from_files(
        learner.optimizer, ts.load_tensors(where / ts.OPTIMIZER_FILE), state["optimizer"]
    )
    learner.step, learner.policy_version = int(state["step"]), int(state["policy_version"])
    rank = learner.accelerator.process_index
    ts.set_torch_rng(ts.load_tensors(where / f"rng-rank{rank}.safetensors"))
    learner.rng = ts.numpy_rng_from_json(ts.read_json(where / f"rng-rank{rank}.json"))
    priorities = where / f"priorities-rank{rank}.parquet"
    if priorities.is_file() and hasattr(learner.algorithm, "known_priorities"):
        learner.algorithm.known_priorities = ts.load_priorities(priorities)
