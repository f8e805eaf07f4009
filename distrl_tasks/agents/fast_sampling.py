"""The default decoding loop of :meth:`AutoUIPolicy.sample`: a lean decoder, grammar drafts
checked speculatively, no per-token Python.

It draws from exactly the distribution the reference loop
(:func:`~distrl_tasks.agents.reference_sampling.decode_reference`, one Hugging Face decoder call
per token) draws from; what changes is the cost:

- each call runs :class:`~distrl_tasks.agents.fast_decoder.DecoderRun` (static key/value cache,
  encoder-side work once per batch) instead of the Hugging Face stack;
- drafts: from each grammar state the action format fixes some text (``", "touch_point": "[``
  after an action type); ``ActionGrammar.draft_tokens`` holds it in the tokenizer's own
  spelling. A call feeds each row's last id *and* its draft, so the logits at every draft
  position come out of one call. The draft is then checked as speculative decoding checks a
  draft model's: greedy keeps the prefix that equals the argmax; sampling keeps draft id ``d``
  with probability ``p(d)`` and otherwise draws from ``p`` with ``d`` removed (renormalised),
  which gives every id exactly its probability ``p``. One more id is drawn after the kept
  prefix. Greedy outputs are therefore the reference's, and samples have its law (not its
  random stream);
- grammar transitions are one table gather (``ActionGrammar.step``), masks one gather of the
  per-state table, outputs one ``[B, budget]`` tensor; the host synchronises twice per call
  (the longest draft, whether every row is done);
- the log-probs of the emitted ids (under the masked, temperature-scaled distribution, the
  unmodified ``p``) are summed as they are drawn.

With the byte tokenizer each draft id is the only one its state allows (``p = 1``, always kept:
plain jump-forward). A SentencePiece vocabulary spells the format in several ways, so its
grammar forces almost no single id, and the draft is what makes a call cover a field name.
"""

from __future__ import annotations

import torch

from distrl_tasks.agents.autoui import AutoUIModel
from distrl_tasks.agents.fast_decoder import DecoderRun
from distrl_tasks.agents.goal_typing import GoalTypingRun, restrict
from distrl_tasks.agents.grammar import ActionGrammar
from distrl_tasks.agents.pointer import PointerRun


def decode_fast(
    model: AutoUIModel,
    encoder_states: torch.Tensor,
    attention_mask: torch.Tensor,
    source_ids: torch.Tensor,
    *,
    allowed: torch.Tensor,
    grammar: ActionGrammar | None,
    budget: int,
    temperature: float | torch.Tensor,
    greedy: bool,
    eos_id: int,
    generator: torch.Generator | None = None,
    typing: GoalTypingRun | None = None,
    pointer: PointerRun | None = None,
) -> tuple[list[list[int]], torch.Tensor]:
    """Sampled (or argmax) ids of one action per row, eos included when produced, and their
    ``[B]`` log-probs under the masked, temperature-scaled distribution the ids were drawn
    from (the sum over the ids of what teacher forcing them would give, see
    :mod:`.policy`).

    Args:
        model: the network (float32).
        encoder_states: ``[B, L, d_model]`` from :meth:`AutoUIModel.encode`.
        attention_mask: ``[B, L]`` prompt mask.
        source_ids: ``[B, L]`` prompt ids.
        allowed: ``[V]`` bool, the generable ids (used without a grammar).
        grammar: the action automaton, or None for free text.
        budget: most ids per action (``max_new_tokens``).
        temperature: logits are divided by it before the masked softmax; a ``[S]`` tensor
            gives each grammar state its own (per-part temperatures, :data:`.grammar.PARTS`).
        greedy: argmax instead of sampling.
        eos_id: the end-of-sequence id.
        generator: random source for sampling (on the model's device).
        typing: the rows' typed text under ``agent.goal_typing`` (:mod:`.goal_typing`; needs
            the grammar), advanced as the loop writes; None = no such rule.
        pointer: the rows' pointer choices (:mod:`.pointer`; needs the grammar), drawn where
            a row reaches the touch point; a row that points ends with its element's tap. The
            log-probs returned for such rows are not the action's (the caller scores them).

    Returns:
        ``B`` id lists of at most ``budget`` ids each, and their ``[B]`` log-probs.
    """
    with torch.inference_mode():
        return _decode(
            model,
            encoder_states,
            attention_mask,
            source_ids,
            allowed,
            grammar,
            budget,
            temperature,
            greedy,
            eos_id,
            generator,
            typing,
            pointer,
        )


def _decode(
    model: AutoUIModel,
    states: torch.Tensor,
    mask: torch.Tensor,
    source_ids: torch.Tensor,
    allowed: torch.Tensor,
    grammar: ActionGrammar | None,
    budget: int,
    temperature: float | torch.Tensor,
    greedy: bool,
    eos: int,
    generator: torch.Generator | None,
    typing: GoalTypingRun | None,
    pointer: PointerRun | None,
) -> tuple[list[list[int]], torch.Tensor]:
    device = states.device
    batch = states.shape[0]
    run = DecoderRun(model, states, mask, source_ids, budget)
    rows = torch.arange(batch, device=device)
    # inputs[:, 0] is the decoder start id, inputs[:, 1 + i] the i-th output id
    inputs = torch.full((batch, budget + 1), model.decoder_start_id, device=device)
    out_len = torch.zeros(batch, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    log_prob = torch.zeros(batch, dtype=torch.float32, device=device)
    state = torch.zeros(batch, dtype=torch.long, device=device)
    if grammar is not None:
        state.fill_(grammar.initial)
    spare = torch.full_like(out_len, budget)  # finished rows point at the spare cache slot
    while not bool(finished.all()):
        live = ~finished
        if grammar is None:
            n_draft = torch.zeros_like(out_len)
            draft = torch.zeros((batch, 0), dtype=torch.long, device=device)
            walk = state[:, None]
        else:  # room for the draft and one chosen id within the budget
            n_draft = torch.minimum(grammar.draft_len[state], budget - out_len - 1)
            n_draft = torch.where(live, n_draft, torch.zeros_like(n_draft))
            width = int(n_draft.max())
            draft = grammar.draft_tokens[state, :width]
            walk = grammar.draft_states[state, : width + 1]  # state before each checked id
        width = draft.shape[1]
        # feed the last output id (or the start id) and the draft: position out_len onwards
        tokens = torch.cat([inputs[rows, out_len][:, None], draft], dim=1)
        positions = torch.where(live, out_len, spare)
        lengths = torch.where(live, n_draft + 1, torch.zeros_like(n_draft))
        logits = run.step(tokens, positions, lengths)  # [B, width + 1, V]
        keep = allowed if grammar is None else grammar.allowed[walk]
        if grammar is not None and typing is not None and bool(grammar.in_text[walk].any()):
            # drafts are fixed format, so only a walk's last state can be inside the text; most
            # steps have no row there and skip the masks
            keep = restrict(keep, walk, typing.masks(device), grammar.in_text)
        t = temperature[walk][..., None] if isinstance(temperature, torch.Tensor) else temperature
        logp = torch.log_softmax((logits.float() / t).masked_fill(~keep, float("-inf")), dim=-1)
        offsets = torch.arange(width, device=device)
        if width:
            if greedy:
                accept = logp[:, :width].argmax(-1) == draft
            else:  # keep draft id d with probability p(d)
                p_draft = logp[:, :width].gather(-1, draft[..., None]).squeeze(-1).exp()
                u = torch.rand((batch, width), generator=generator, device=device)
                accept = u < p_draft
            accept &= offsets[None, :] < n_draft[:, None]
            n_ok = torch.cumprod(accept.long(), dim=1).sum(1)  # accepted prefix length
            kept = offsets[None, :] < n_ok[:, None]
            picked = logp[:, :width].gather(-1, draft[..., None]).squeeze(-1)
            log_prob += torch.where(kept, picked, torch.zeros_like(picked)).sum(1)
        else:
            n_ok = torch.zeros_like(out_len)
        # the id after the accepted prefix: drawn from p there, minus the rejected draft id
        at = logp[rows, n_ok]  # [B, V]
        rejected = n_ok < n_draft
        if width:
            bad = draft.gather(1, n_ok.clamp(max=width - 1)[:, None]).squeeze(1)
            at = torch.where(
                rejected[:, None] & (torch.arange(at.shape[1], device=device) == bad[:, None]),
                torch.full_like(at, float("-inf")),
                at,
            )
        if greedy:
            nxt = at.argmax(-1)
        else:  # finished rows draw from a uniform row (their masks may be empty)
            probs = torch.where(finished[:, None], torch.ones_like(at), at.exp())
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        log_prob += torch.where(live, logp[rows, n_ok, nxt], torch.zeros_like(log_prob))
        if width:
            write = offsets[None, :] < n_ok[:, None]
            cols = 1 + out_len[:, None] + offsets[None, :]
            inputs[rows[:, None].expand_as(draft)[write], cols[write]] = draft[write]
        inputs[rows[live], (1 + out_len + n_ok)[live]] = nxt[live]
        pointed: dict[int, list[int]] = {}
        if grammar is not None:
            before = walk.gather(1, n_ok[:, None]).squeeze(1)
            if pointer is not None and bool((live & grammar.touch[before]).any()):
                # a row at the touch point draws its choice; one that points is written out
                pointed = pointer.choose(live & grammar.touch[before])
                for row, ids in pointed.items():
                    at = int(out_len[row] + n_ok[row])
                    ids = ids[: budget - at]
                    inputs[row, 1 + at : 1 + at + len(ids)] = torch.tensor(ids, device=device)
            if typing is not None:
                typing.advance(before, nxt, grammar.in_text, live)
            state = torch.where(live, grammar.step(before, nxt), state)
        out_len = torch.where(live, out_len + n_ok + 1, out_len)
        finished = finished | (live & (nxt == eos)) | (out_len >= budget)
        for row, ids in pointed.items():
            out_len[row] = min(int(out_len[row]) - 1 + len(ids), budget)
            finished[row] = True
    ids = inputs[:, 1:].tolist()
    return [row[:n] for row, n in zip(ids, out_len.tolist(), strict=True)], log_prob
