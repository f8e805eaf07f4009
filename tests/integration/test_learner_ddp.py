"""Two-process data-parallel learner on CPU (gloo over loopback).

Each rank is a fresh Python process (this file run as a script) started with the usual
``RANK`` / ``WORLD_SIZE`` / ``MASTER_ADDR`` / ``MASTER_PORT`` environment, which accelerate turns
into a gloo process group. The ranks start from DIFFERENT weights (the learner broadcasts rank
0's) and sample different data; afterwards both must hold identical parameters, equal to one
process's update on the union of the two ranks' samples.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_learner import (  # the shared test algorithm lives beside the unit tests
    BehaviourCloning,
    config,
    replay_of,
    small_policy,
)

from distrl_tasks.algorithms.learner import Learner, rank_rng

pytestmark = pytest.mark.integration
WORLD, STEPS, BATCH, SEED = 2, 2, 4, 0


def flat_params(learner: Learner) -> dict[str, torch.Tensor]:
    return {
        f"{role}.{k}": v.detach().clone().contiguous()
        for role, m in learner.modules.items()
        for k, v in m.state_dict().items()
        if k != "lm_head.weight"  # tied to shared.weight in the tiny model
    }


def last_grads(learner: Learner) -> dict[str, torch.Tensor]:
    """The final step's averaged, clipped gradients (the learner leaves them in place)."""
    return {str(i): p.grad.detach().clone() for i, p in enumerate(learner.params)}


def worker(out: Path) -> None:
    """One rank: train, checkpoint (collectively), dump parameters and metrics."""
    from accelerate import Accelerator

    torch.set_num_threads(1)
    acc = Accelerator(cpu=True)
    rank = acc.process_index
    assert acc.num_processes == WORLD, acc.state
    algo = BehaviourCloning(small_policy(seed=10 + rank), seed=10 + rank)  # differs per rank
    learner = Learner(config(batch_size=BATCH), algo, accelerator=acc, out_dir=out, seed=SEED)
    metrics = learner.train_round(replay_of(), steps=STEPS)
    learner.save_checkpoint()
    save_file(flat_params(learner), str(out / f"rank{rank}.safetensors"))
    save_file(last_grads(learner), str(out / f"grads{rank}.safetensors"))
    (out / f"metrics{rank}.json").write_text(json.dumps(metrics))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_match_each_other_and_one_process_on_the_global_batch(tmp_path: Path) -> None:
    port = free_port()
    procs = []
    for rank in range(WORLD):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(WORLD),
            "LOCAL_WORLD_SIZE": str(WORLD),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
            "CUDA_VISIBLE_DEVICES": "",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, str(tmp_path)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=180)[0])
    finally:  # only a timeout or an error leaves ranks running: never leave them behind
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (proc, output) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, f"rank {rank} failed:\n{output[-4000:]}"

    rank0 = load_file(str(tmp_path / "rank0.safetensors"))
    rank1 = load_file(str(tmp_path / "rank1.safetensors"))
    for k in rank0:
        assert torch.equal(rank0[k], rank1[k]), k

    # One process, rank 0's initial weights, fed each step the two ranks' micro-batches.
    table_rows = 4 * 3  # replay_of(): 4 trajectories of 3 steps
    per_rank = BATCH // WORLD
    rngs = [rank_rng(SEED, r) for r in range(WORLD)]
    order = [int(i) for _ in range(STEPS) for g in rngs for i in (g.random(per_rank) * table_rows)]
    torch.set_num_threads(1)
    ref = Learner(
        config(batch_size=BATCH),
        BehaviourCloning(small_policy(seed=10), seed=10, fixed=order),
        out_dir=tmp_path / "ref",
    )
    ref.train_round(replay_of(), steps=STEPS)
    single = flat_params(ref)
    assert single.keys() == rank0.keys()
    grads = load_file(str(tmp_path / "grads0.safetensors"))
    for k, g in last_grads(ref).items():
        torch.testing.assert_close(grads[k], g, rtol=1e-3, atol=1e-6)
    # Adam divides by sqrt(v): where a gradient is ~0, rounding can flip the sign of a step of
    # size lr. Nearly every weight agrees to 1% of lr; none is further off than that flip.
    lr, diffs = 3e-3, torch.cat([(rank0[k] - single[k]).abs().reshape(-1) for k in single])
    assert float((diffs > 1e-2 * lr).float().mean()) < 1e-3
    assert float(diffs.max()) <= 2 * lr * STEPS
    initial = small_policy(seed=10).model.state_dict()
    moved = [
        k
        for k in single
        if k.startswith("policy.") and not torch.equal(initial[k.removeprefix("policy.")], rank0[k])
    ]
    assert len(moved) > 10  # the comparison is not between untouched weights

    ckpt = tmp_path / "checkpoints" / f"step-{STEPS:08d}"
    assert (ckpt / "rng-rank0.json").is_file() and (ckpt / "rng-rank1.json").is_file()
    state = json.loads((ckpt / "train_state.json").read_text())
    assert state["world_size"] == WORLD and state["step"] == STEPS
    m0 = json.loads((tmp_path / "metrics0.json").read_text())
    m1 = json.loads((tmp_path / "metrics1.json").read_text())
    assert m0["losses/policy"] == pytest.approx(m1["losses/policy"])  # averaged over ranks
    assert m0["train/grad_norm"] == m1["train/grad_norm"]


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
