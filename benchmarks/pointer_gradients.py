"""How large the pointer's supervised gradient is beside the token loss's (issue 51, part 4).

Usage::

    python benchmarks/pointer_gradients.py --corpus WORK/runs/pretrain [--checkpoint DIR]
        [--batches 8] [--batch-size 16]

For random batches of a pretraining corpus (``distrl pretrain``'s ``runs/pretrain``: its demos
and tokenizer), prints each batch's token loss and pointer loss with the gradient norm of each
over the whole model, as SFT had them when both shared one gradient clip (the encoder states and
label embeddings not detached), and the factor the shared clip (``agent.sft`` max_grad_norm,
1.0) put on the token gradient. Without ``--checkpoint`` the model is a fresh one as
``distrl pretrain`` builds it (seed 0, a new head). A checkpoint without a head gets a new one.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import torch

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.checkpoint import load_checkpoint
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.tokenizer import SentencePieceTokenizer
from distrl_tasks.algorithms.sft import DEMO_COLUMNS, SFTSettings, demos_from_rows
from distrl_tasks.config import load_config
from distrl_tasks.data.shards import read_shards


def _norm(loss: torch.Tensor, params: list[torch.nn.Parameter], keep: bool) -> float:
    grads = torch.autograd.grad(loss, params, retain_graph=keep, allow_unused=True)
    return float(torch.sqrt(sum((g.float() ** 2).sum() for g in grads if g is not None)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a pretraining work dir's runs/pretrain")
    parser.add_argument("--checkpoint", default="", help="a checkpoint (default: a fresh model)")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--per-set", type=int, default=2000, help="demos read per task set")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = load_config("params.yaml" if Path("params.yaml").is_file() else None)
    corpus = Path(args.corpus)
    demos = []
    for task_set in ("general", "webshop"):
        rows = read_shards(corpus / "demos" / task_set).select(list(DEMO_COLUMNS)).to_pylist()
        demos += demos_from_rows(rows[: args.per_set], history=cfg.env.prompt_history)
    if not any(d.elements for d in demos):
        raise SystemExit(f"{corpus}: the demos list no elements (record with agent.pointer: true)")
    if args.checkpoint:
        model, tokenizer = load_checkpoint(args.checkpoint)
    else:
        tokenizer = SentencePieceTokenizer(str(corpus / "tokenizer" / "spiece.model"))
        torch.manual_seed(0)
        model = AutoUIModel(tiny_t5_config(tokenizer.size), image_feature_dim(cfg.agent))
    if model.pointer_head is None:
        model.add_pointer(0)
    policy = AutoUIPolicy(model, tokenizer, max_prompt_tokens=cfg.agent.max_prompt_tokens)
    params = [p for p in model.parameters() if p.requires_grad]
    clip = SFTSettings().max_grad_norm
    rng = np.random.default_rng(0)
    print(f"{'token loss':>10} {'|g_token|':>10} {'ptr loss':>10} {'|g_ptr|':>10} {'clip x':>8}")
    ratios = []
    for _ in range(args.batches):
        batch = [demos[i] for i in rng.choice(len(demos), args.batch_size, replace=False)]
        obs, targets = [d.observation() for d in batch], [d.target for d in batch]
        scores = policy.score(obs, targets, constrained=False)
        token = -scores.token_log_probs.sum() / scores.lengths.sum()
        pointing = policy.pointer_loss(obs, targets)  # shared: reaches the encoder too
        if pointing is None:
            continue
        g_token = _norm(token, params, keep=True)
        g_ptr = _norm(pointing, params, keep=True)
        both = _norm(token + pointing, params, keep=False)
        ratios.append(g_ptr / g_token)
        print(
            f"{token.item():10.4f} {g_token:10.3f} {pointing.item():10.4f} {g_ptr:10.3f} "
            f"{min(1.0, clip / both):8.3f}"
        )
    print(f"median |g_ptr| / |g_token| = {statistics.median(ratios):.1f} over {len(ratios)}")


if __name__ == "__main__":
    main()
