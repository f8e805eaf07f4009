"""The original decoding loop of :meth:`AutoUIPolicy.sample` (``decoder="reference"``).

One Hugging Face decoder call (with its key/value cache) and one Python grammar step per token.
Kept as the baseline the fast loop (:mod:`.fast_sampling`) is tested and benchmarked against
(tests/unit/test_fast_decoder.py, benchmarks/inference.py).
"""

from __future__ import annotations

import torch

from distrl_tasks.agents.autoui import AutoUIModel
from distrl_tasks.agents.goal_typing import GoalTypingRun, restrict
from distrl_tasks.agents.grammar import ActionGrammar
from distrl_tasks.agents.pointer import PointerRun


def decode_reference(
    model: AutoUIModel,
    source_ids: torch.Tensor,
    encoder_states: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    allowed: torch.Tensor,
    grammar: ActionGrammar | None,
    budget: int,
    temperature: float | torch.Tensor,
    greedy: bool,
    eos_id: int,
    pad_id: int,
    generator: torch.Generator | None = None,
    typing: GoalTypingRun | None = None,
    pointer: PointerRun | None = None,
) -> list[list[int]]:
    """Sampled (or argmax) ids of one action per row, eos included when produced.

    Args mirror :func:`.fast_sampling.decode_fast`; ``pad_id`` fills finished rows. A row
    that points (``pointer``) is fed its element's tap one id per call, as if it wrote it.
    """
    batch = source_ids.shape[0]
    device = encoder_states.device
    current = torch.full((batch, 1), model.decoder_start_id, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    steps: list[torch.Tensor] = []
    cache = None
    state = None
    if grammar is not None:
        state = torch.full((batch,), grammar.initial, dtype=torch.long, device=device)
    forced: dict[int, list[int]] = {}  # rows that pointed: the ids of their tap still to feed
    for _ in range(budget):
        logits, cache = model.decode(
            current, encoder_states, attention_mask, cache, use_cache=True, source_ids=source_ids
        )
        keep = allowed if grammar is None else grammar.allowed[state]
        if grammar is not None and typing is not None and bool(grammar.in_text[state].any()):
            keep = restrict(keep, state, typing.masks(device), grammar.in_text)
        t = temperature[state] if isinstance(temperature, torch.Tensor) else temperature
        scaled = logits[:, -1].float() / (t[:, None] if isinstance(t, torch.Tensor) else t)
        logp = torch.log_softmax(scaled.masked_fill(~keep, float("-inf")), dim=-1)
        if greedy:
            nxt = logp.argmax(-1)
        else:
            nxt = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        if pointer is not None and grammar is not None:
            at_touch = ~finished & grammar.touch[state]
            if bool(at_touch.any()):
                forced.update(pointer.choose(at_touch))
            for row, ids in forced.items():
                if ids:
                    nxt[row] = ids.pop(0)
        nxt = torch.where(finished, torch.full_like(nxt, pad_id), nxt)
        steps.append(nxt)
        finished |= nxt == eos_id
        if grammar is not None and typing is not None:
            typing.advance(state, nxt, grammar.in_text, nxt != pad_id)
        if grammar is not None:  # finished rows stay put (their state is never read again)
            state = torch.where(finished, state, grammar.step_sparse(state, nxt))
        if bool(finished.all()):
            break
        current = nxt.unsqueeze(-1)
    table = torch.stack(steps, dim=1).tolist()
    return [row[: row.index(eos_id) + 1] if eos_id in row else row for row in table]
