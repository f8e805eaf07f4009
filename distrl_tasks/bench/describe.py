"""What a benchmark ran on and with: the machine line and the settings lines of its section."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distrl_tasks.bench.report import METHOD_LABELS


def machine_info() -> dict[str, Any]:
    """CPU count, CPU model, family and model numbers (``/proc/cpuinfo``), the vector ISA torch's
    CPU kernels use, Python and torch versions.

    The ISA and the family/model are kept because two machines with the same model name can run
    different kernels, whose rounding differs, so a rebuilt bootstrap's weights may differ too.
    """
    fields = cpuinfo_fields()
    model = fields.get("model name") or platform.processor() or "unknown"
    try:
        import torch  # lazy: torch, optional here

        torch_version, capability = torch.__version__, torch.backends.cpu.get_cpu_capability()
    except ImportError:  # pragma: no cover - torch is a dependency of the benchmark
        torch_version = capability = "-"
    family = (
        f"family {fields['cpu family']} model {fields['model']}"
        if "cpu family" in fields and "model" in fields
        else "-"
    )
    return {
        "nproc": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "cpu": model,
        "cpu_family": family,
        "torch_cpu_capability": capability,
        "python": platform.python_version(),
        "torch": torch_version,
    }


def cpuinfo_fields(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The first processor's ``key: value`` lines of ``/proc/cpuinfo`` ({} where there is none)."""
    if not path.is_file():
        return {}
    fields: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            break  # the first processor's block ends at its blank line
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def describe_settings(
    s: Any,
    sft_steps: Mapping[str, int],
    algorithm: Any,
    eval_devices: int,
    demo_world: str = "live",
) -> list[str]:
    """The settings lines of the RESULTS.md section.

    Args:
        s: the benchmark settings (:class:`~distrl_tasks.bench.setup.LearningBenchSettings`).
        sft_steps: SFT optimizer steps of each task set's bootstrap policy.
        algorithm: the runs' ``algorithm`` config section (the same for every method).
        eval_devices: most simulated devices an evaluation spreads its tasks over.
        demo_world: the world profile the bootstrap's demonstrations were recorded in.
    """
    a = algorithm
    steps = ", ".join(f"{ts} {n}" for ts, n in sft_steps.items())
    overrides = ", ".join(f"`{k}={v}`" for k, v in sorted(s.overrides.items())) or "none"
    return [
        f"preset `{s.preset}`; methods {', '.join(METHOD_LABELS[m] for m in s.methods)}; task "
        f"sets {', '.join(s.task_sets)}; seeds {', '.join(map(str, s.seeds))} (`sim.seed`); "
        f"{s.threads} torch thread(s)",
        f"budget {s.budget_s:.0f} s of wall clock per run, from the run's device farm being up "
        "(a round is learned while it is expected to end in time; the evaluated policy is the "
        "last one registered within the budget, the SFT policy if none)",
        f"{s.devices} simulated devices, {s.episodes_per_device} episodes per device per round, "
        f"emulator-calibrated latency x {s.time_scale} during the rounds, faults off",
        f"per-round evaluation (inside the budget, latency on): first {s.round_eval_tasks} "
        f"test tasks; final (latency off): first {s.eval_test} test tasks in file order, "
        f"{s.eval_train} train tasks sampled with seed 0; greedy decoding, oracle verdicts, "
        f"up to {eval_devices} devices per evaluation (one per task)",
        f"SFT: one bootstrap policy per task set, shared by all methods and seeds (SFT steps: "
        f"{steps}; expert demonstrations recorded in the `{demo_world}` world)",
        f"data regime `{a.mode}`"
        + (
            " (round 0, inside the budget: the SFT policy's offline dataset, then "
            + _prefit_text(a.critic_prefit)
            + f"{a.offline_critic_steps} critic-only and {a.offline_actor_steps} actor steps; "
            "its trajectories are not counted as collected)"
            if a.mode != "online"
            else ""
        ),
        "methods: DistRL = `distrl` with asynchronous rounds (async collection overlapped with "
        "learning: the actors collect back to back, each learner round takes every collection "
        "finished since the last); DigiRL = `digirl` and Filtered BC = `filtered_bc` "
        "with synchronous rounds (lockstep collection, then learning); hyperparameters are the "
        f"config's, untuned and the same for all (actor_epochs {a.actor_epochs}, critic_epochs "
        f"{a.critic_epochs}, batch_size {a.batch_size}, lm_lr {a.lm_lr}, gamma {a.gamma}, "
        f"filter_top_fraction {a.filter_top_fraction} for DigiRL and Filtered BC)",
        f"DistRL's A-RIDE form: advantage `{a.distrl.advantage}`, actor windows from the top "
        f"{a.distrl.top_p:g} of trajectories by return, {a.distrl.windows} windows per "
        f"optimizer step, window starts `{a.distrl.window_start}`, entropy `{a.distrl.entropy}`, "
        f"re-scoring `{a.distrl.rescore}`",
        f"config overrides for every run: {overrides}",
    ]


def _prefit_text(prefit: Any) -> str:
    """How round 0 fits a fresh critic before its fixed steps (empty when the pre-fit is off)."""
    if not prefit.enabled:
        return ""
    bias = "output bias at the mean target, then " if prefit.bias_init else ""
    return (
        f"a critic pre-fit ({bias}critic-only steps until the loss plateaus, "
        f"{prefit.min_steps}-{prefit.max_steps} steps), then "
    )
