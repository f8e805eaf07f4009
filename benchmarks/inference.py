"""Policy inference throughput: the fast decoder against the reference one, side by side.

Usage::

    python benchmarks/inference.py [--checkpoint DIR | --bootstrap-dir DIR] [--threads 1]
        [--repeats 3] [--batches 1 8 32] [--modes greedy sampled]

The policy is the one the demo and the rounds run: ``load_config('params.yaml').agent`` (tiny
T5, copy head, constrained decoding, ``agent.max_new_tokens``) with the weights and SentencePiece
vocabulary of the SFT bootstrap. ``--checkpoint`` names a policy directory (e.g.
``runs/bootstrap/policy`` of a demo); without it the bootstrap stage runs once into
``--bootstrap-dir`` (default ``/tmp/distrl-bench-bootstrap``, reused when it holds a policy:
about 3 minutes on 2 cores) with ``params.yaml`` and seed 0, evaluating on 8 test goals only.

For each batch size and mode (greedy, sampled at ``agent.temperature``), both decoders
(``AutoUIPolicy(decoder="reference" | "fast")``, same weights, same observations) run
``--repeats`` times, interleaved call by call; rates are per second of this process's CPU
time (``time.process_time``; the machine is shared, wall time mostly measures the
neighbours). ``floor`` is a bare one-token decoder forward with a key/value cache at that
batch (the Hugging Face stack as the reference calls it, and the lean :class:`DecoderRun`
step): one token step with nothing else. ``fast ms/token`` is the fast path's CPU time per
call divided by its tokens per action, to set beside it. Greedy outputs of both decoders are
compared and the result printed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from distrl_tasks.agents.fast_decoder import DecoderRun
from distrl_tasks.agents.policy import AutoUIPolicy, Observation, build_policy, format_prompt
from distrl_tasks.config import Config, load_config
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap
from distrl_tasks.tasks.taskset import load_goals


def observations(cfg: Config, n: int, dim: int) -> list[Observation]:
    """``n`` prompts as the rounds write them (test goals, one previous action or none)."""
    rng = np.random.default_rng(0)
    goals = load_goals("general", "test", cfg.env.data_dir)
    prev = ["", format_action(key(ActionType.PRESS_HOME)), format_action(tap(0.5, 0.25))]
    return [
        Observation(
            format_prompt(goals[i % len(goals)], [prev[i % 3]] if prev[i % 3] else []),
            rng.standard_normal(dim).astype(np.float16),
        )
        for i in range(n)
    ]


def demo_checkpoint(cfg: Config, workdir: Path) -> Path:
    """The SFT bootstrap's policy directory under ``workdir`` (run the stage if missing)."""
    policy = workdir / "runs" / "bootstrap" / "policy"
    if not (policy / "config.json").exists():
        from distrl_tasks.stages import bootstrap

        print(f"bootstrapping the demo's SFT policy into {workdir} (params.yaml, seed 0)")
        bootstrap.run(cfg, workdir=workdir, eval_tasks=8, threads=1, seed=0)
    return policy


def timed(fn, repeats: int) -> tuple[float, object]:
    out, total = None, 0.0
    for _ in range(repeats):
        start = time.process_time()
        out = fn()
        total += time.process_time() - start
    return total / repeats, out


@torch.inference_mode()
def floors(policy: AutoUIPolicy, obs: list[Observation], repeats: int) -> tuple[float, float]:
    """CPU seconds of one bare one-token decoder step at this batch: (Hugging Face, lean)."""
    model = policy.model
    ids, mask, feats = policy._encoder_inputs(obs)
    states = model.encode(ids, mask, feats)
    batch = len(obs)
    start = torch.full((batch, 1), model.decoder_start_id)
    _, cache = model.decode(start, states, mask, use_cache=True, source_ids=ids)
    token = torch.full((batch, 1), 3)

    def hf() -> None:  # a fresh cache copy would cost more than the step; 8 steps from pos 1
        c = cache
        for _ in range(8):
            _, c = model.decode(token, states, mask, c, use_cache=True, source_ids=ids)

    run = DecoderRun(model, states, mask, ids, 16)

    def lean() -> None:
        for p in range(8):
            run.step(token, torch.full((batch,), p), torch.ones(batch, dtype=torch.long))

    hf_s = lean_s = 0.0
    for _ in range(repeats):  # interleaved, like the decoders
        hf_s += timed(hf, 1)[0]
        lean_s += timed(lean, 1)[0]
    return hf_s / 8 / repeats, lean_s / 8 / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="params.yaml")
    parser.add_argument("--checkpoint", default="")
    parser.add_argument("--bootstrap-dir", default="/tmp/distrl-bench-bootstrap")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--modes", nargs="+", choices=["greedy", "sampled"], default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    checkpoint = Path(args.checkpoint or demo_checkpoint(cfg, Path(args.bootstrap_dir)))
    policies = {
        d: build_policy(cfg.agent, checkpoint_dir=checkpoint, decoder=d)
        for d in ("reference", "fast")
    }
    for p in policies.values():
        p.model.eval()
    fast = policies["fast"]
    print(
        f"policy: {checkpoint} ({fast.tokenizer.kind} vocabulary of {fast.tokenizer.size}, "
        f"{fast.model.num_parameters() / 1e6:.1f}M parameters), max_new_tokens "
        f"{fast.max_new_tokens}, temperature {fast.temperature}, constrained "
        f"{fast.grammar is not None}, threads {args.threads}, repeats {args.repeats}"
    )
    dim = fast.model.image_dim
    warm = observations(cfg, 2, dim)
    for p in policies.values():
        p.sample(warm, generator=torch.Generator().manual_seed(0))
    print(
        "batch mode    | reference act/s | fast act/s | speed-up | tokens/act | fast ms/token "
        "| floor ms/token-step (HF, lean) | greedy identical"
    )
    for batch in args.batches:
        obs = observations(cfg, batch, dim)
        hf_floor, lean_floor = floors(fast, obs, args.repeats)
        for mode in args.modes or ["greedy", "sampled"]:
            greedy = mode == "greedy"
            # interleaved (reference, fast, reference, ...) so both see the same neighbours
            cpu = dict.fromkeys(policies, 0.0)
            outs = {}
            gens = {name: torch.Generator().manual_seed(0) for name in policies}
            for _ in range(args.repeats):
                for name, policy in policies.items():
                    start = time.process_time()
                    outs[name] = policy.sample(obs, greedy=greedy, generator=gens[name])
                    cpu[name] += time.process_time() - start
            rates = {name: batch * args.repeats / cpu[name] for name in policies}
            tokens = np.mean([len(ids) for ids in outs["fast"].token_ids])
            per_token = batch / rates["fast"] / tokens * 1000
            same = outs["fast"].texts == outs["reference"].texts if greedy else "-"
            print(
                f"{batch:5d} {mode:7s} | {rates['reference']:15.2f} | {rates['fast']:10.2f} | "
                f"{rates['fast'] / rates['reference']:7.2f}x | {tokens:10.1f} | "
                f"{per_token:13.2f} | {hf_floor * 1000:8.2f}, {lean_floor * 1000:6.2f}"
                f"{'':16s} | {same}"
            )


if __name__ == "__main__":
    main()
