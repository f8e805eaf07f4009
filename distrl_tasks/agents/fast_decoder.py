"""A lean incremental decoder for :class:`~distrl_tasks.agents.autoui.AutoUIModel` inference.

The Hugging Face T5 stack spends most of a one-token decoder call on Python: cache objects,
mask construction, the relative-position bias recomputed per call, per-module dispatch. At the
tiny model's size that overhead, not arithmetic, sets the cost of a token
(benchmarks/results/2026-11-23-fast-policy-inference.md). :class:`DecoderRun` computes the same
function (the T5 decoder stack, the output head and the copy head, same weights, float32) with
plain tensor ops over:

- a static key/value cache ``[B, H, max_len, d_kv]`` per layer, written in place;
- the cross-attention keys/values of the encoder states, projected once per batch;
- the relative-position bias of every (query, key) position pair, with the causal mask folded
  in as ``-inf``, computed once per batch and gathered per call;
- ragged multi-token calls: row ``b`` feeds ``lengths[b]`` tokens starting at its own position
  ``positions[b]``, so a grammar's draft of the forced format is checked in one call instead of
  one per token; the position-wise layers (projections, feed-forward, output head) run on the
  real tokens only, packed ``[N, d]``, and attention on a ``[B, K]`` padded view.

Results equal :meth:`AutoUIModel.decode` up to float rounding (the equivalence tests in
tests/unit/test_fast_decoder.py check logits and greedy outputs against it).
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from distrl_tasks.agents.autoui import AutoUIModel
from distrl_tasks.agents.copy_match import start_kinds


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """T5LayerNorm: scale only, no mean subtraction (float32 throughout here)."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _bucket(relative: torch.Tensor, num_buckets: int, max_distance: int) -> torch.Tensor:
    """T5's unidirectional relative-position bucket of ``key - query`` (decoder self-attention)."""
    relative = -torch.clamp(relative, max=0)
    max_exact = num_buckets // 2
    large = max_exact + (
        torch.log(relative.float().clamp_min(1) / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    large = large.clamp(max=num_buckets - 1)
    return torch.where(relative < max_exact, relative, large)


class _Layer:
    """One decoder block's weights as plain tensors (q/k/v fused for one matmul)."""

    def __init__(self, block: torch.nn.Module, n_heads: int, d_kv: int) -> None:
        attn, cross, ff = block.layer[0], block.layer[1], block.layer[2]
        sa = attn.SelfAttention
        self.ln_self = attn.layer_norm.weight
        self.eps = attn.layer_norm.variance_epsilon
        self.qkv = torch.cat([sa.q.weight, sa.k.weight, sa.v.weight], dim=0)
        self.o_self = sa.o.weight
        ca = cross.EncDecAttention
        self.ln_cross = cross.layer_norm.weight
        self.q_cross = ca.q.weight
        self.k_cross, self.v_cross = ca.k.weight, ca.v.weight
        self.o_cross = ca.o.weight
        self.ln_ff = ff.layer_norm.weight
        dense = ff.DenseReluDense
        self.gated = hasattr(dense, "wi_0")
        if self.gated:  # act(wi_0 x) * wi_1 x, both halves from one matmul
            self.wi = torch.cat([dense.wi_0.weight, dense.wi_1.weight])
        else:
            self.wi = dense.wi.weight
        self.wo = dense.wo.weight
        self.act = dense.act
        self.n_heads, self.d_kv = n_heads, d_kv


class DecoderRun:
    """Incremental decoding of one batch: encoder-side work done once, then :meth:`step` calls.

    Args:
        model: the network (its current weights are read at construction; build a new run
            after an optimizer step).
        encoder_states: ``[B, L, d_model]`` fused encoder states (:meth:`AutoUIModel.encode`).
        attention_mask: ``[B, L]`` 1 for prompt tokens, 0 for padding.
        source_ids: ``[B, L]`` prompt ids (the copy head's pointer targets).
        max_len: most decoder input positions a row will feed (the decoding budget).

    Raises:
        ValueError: the model's dtype is not float32 (the lean path mirrors float32 inference).
    """

    def __init__(
        self,
        model: AutoUIModel,
        encoder_states: torch.Tensor,
        attention_mask: torch.Tensor,
        source_ids: torch.Tensor,
        max_len: int,
    ) -> None:
        if model.shared.weight.dtype != torch.float32:
            raise ValueError("the fast decoder runs float32 models only (use the reference one)")
        cfg = model.config
        self.model = model
        self.n_heads, self.d_kv = int(cfg.num_heads), int(cfg.d_kv)
        self.layers = [_Layer(b, self.n_heads, self.d_kv) for b in model.decoder.block]
        self.final_ln = model.decoder.final_layer_norm.weight
        self.final_eps = model.decoder.final_layer_norm.variance_epsilon
        self.embed = model.decoder.embed_tokens.weight
        batch, length, _ = encoder_states.shape
        device = encoder_states.device
        self.batch = batch
        self.states = encoder_states.float()
        self.mask = attention_mask.bool()
        self.source_ids = source_ids
        # additive mask over the prompt: [B, 1, 1, L]
        neg = torch.finfo(torch.float32).min
        self.cross_bias = torch.zeros(batch, 1, 1, length, device=device).masked_fill(
            ~self.mask[:, None, None, :], neg
        )
        heads = (batch, length, self.n_heads, self.d_kv)
        # keys stored transposed ([B, H, d_kv, L]) so each call's matmul reads them in place
        self.cross_kv = [
            (
                F.linear(self.states, layer.k_cross).view(heads).permute(0, 2, 3, 1).contiguous(),
                F.linear(self.states, layer.v_cross).view(heads).transpose(1, 2).contiguous(),
            )
            for layer in self.layers
        ]
        # one slot more than any real position: padding queries read (never write) there
        self.cache_len = int(max_len) + 1
        shape = (batch, self.n_heads, self.cache_len, self.d_kv)
        self.cache = [
            (torch.zeros(shape, device=device), torch.zeros(shape, device=device))
            for _ in self.layers
        ]
        sa = model.decoder.block[0].layer[0].SelfAttention
        pos = torch.arange(self.cache_len, device=device)
        buckets = _bucket(
            pos[None, :] - pos[:, None],
            int(cfg.relative_attention_num_buckets),
            int(cfg.relative_attention_max_distance),
        )
        bias = sa.relative_attention_bias.weight[buckets].permute(2, 0, 1)  # [H, Q, K]
        causal = pos[None, :] > pos[:, None]
        self.bias = bias.masked_fill(causal, float("-inf")).contiguous()
        if model.copy:
            self.copy_query = model.copy_query.weight
            self.copy_w = model.copy_gate.weight
            self.copy_b = model.copy_gate.bias
            self.copy_keys = self.states.transpose(1, 2) / self.states.shape[-1] ** 0.5
            self.copy_mask = ~self.mask[:, None, :]  # [B, 1, L]
        self.match_k = model.copy_match
        if self.match_k:
            # decoder inputs fed so far, by position (the copy head's match bias reads them)
            self.history = torch.zeros((batch, self.cache_len), dtype=torch.long, device=device)
            src = torch.where(self.mask, source_ids, torch.full_like(source_ids, -1))
            # prev[b, j, i] = x[b, i - 1 - j] (-1 where out of the prompt: matches nothing)
            self.copy_prev = torch.stack(
                [F.pad(src, (j + 1, 0), value=-1)[:, :length] for j in range(self.match_k)], 1
            )
            self.match_ignore = (model.decoder_start_id, int(cfg.pad_token_id or 0))
        self.span_start: torch.Tensor | None = None
        if model.copy_span:
            # the start-kind score of every prompt position is fixed for the batch: [B, L]
            kinds = start_kinds(source_ids, model.copy_piece_kinds)
            self.span_start = model.copy_start_bias.float()[kinds]

    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        """Feed ``tokens`` ``[B, K]``; row ``b``'s first ``lengths[b]`` (>= 1) are real and start
        at decoder position ``positions[b]``. Returns logits ``[B, K, V]`` after every fed token
        (``log p`` for copy-head models, as :meth:`AutoUIModel.decode` returns); entries past a
        row's length are garbage.
        """
        batch, width = tokens.shape
        offsets = torch.arange(width, device=tokens.device)
        query_pos = positions[:, None] + offsets[None, :]  # [B, K]
        real = offsets[None, :] < lengths[:, None]
        # position-wise layers run on the real entries only, packed: [N, d]
        pb, pk = real.nonzero(as_tuple=True)
        ppos = query_pos[pb, pk]
        read_pos = query_pos.clamp(max=self.cache_len - 1)
        span = int(ppos.max()) + 1 if len(ppos) else 1  # later keys are masked anyway
        bias = self.bias[:, read_pos, :span].permute(1, 0, 2, 3)  # [B, H, K, span]
        x = self.embed[tokens[pb, pk]]
        if self.match_k:
            self.history[pb, ppos] = tokens[pb, pk]
        inner = self.n_heads * self.d_kv
        heads = (batch, width, self.n_heads, self.d_kv)
        padded = torch.zeros(heads, device=x.device)
        for layer, (k_cache, v_cache), (k_x, v_x) in zip(
            self.layers, self.cache, self.cross_kv, strict=True
        ):
            h = _rms(x, layer.ln_self, layer.eps)
            q, k, v = F.linear(h, layer.qkv).split(inner, dim=-1)
            k_cache[pb, :, ppos] = k.view(-1, self.n_heads, self.d_kv)
            v_cache[pb, :, ppos] = v.view(-1, self.n_heads, self.d_kv)
            att = padded.index_put((pb, pk), q.view(-1, self.n_heads, self.d_kv)).transpose(1, 2)
            att = torch.softmax(att @ k_cache[:, :, :span].transpose(-1, -2) + bias, dim=-1)
            out = (att @ v_cache[:, :, :span]).transpose(1, 2)[pb, pk].reshape(-1, inner)
            x = x + F.linear(out, layer.o_self)
            h = _rms(x, layer.ln_cross, layer.eps)
            q = F.linear(h, layer.q_cross).view(-1, self.n_heads, self.d_kv)
            att = padded.index_put((pb, pk), q).transpose(1, 2)
            att = torch.softmax(att @ k_x + self.cross_bias, dim=-1)
            out = (att @ v_x).transpose(1, 2)[pb, pk].reshape(-1, inner)
            x = x + F.linear(out, layer.o_cross)
            h = _rms(x, layer.ln_ff, layer.eps)
            if layer.gated:
                gate, lin = F.linear(h, layer.wi).chunk(2, dim=-1)
                h = layer.act(gate) * lin
            else:
                h = layer.act(F.linear(h, layer.wi))
            x = x + F.linear(h, layer.wo)
        hidden = _rms(x, self.final_ln, self.final_eps)
        model = self.model
        scaled = hidden * (model.config.d_model**-0.5) if model.tied else hidden
        logits = F.linear(scaled, model.lm_head.weight)
        if model.copy:
            logits = self._copy_mix(hidden, logits, pb, pk, ppos)
        out = torch.zeros((batch, width, logits.shape[-1]), device=x.device)
        return out.index_put_((pb, pk), logits)

    def _match(self, pb: torch.Tensor, ppos: torch.Tensor) -> torch.Tensor:
        """Match lengths ``[N, L]`` of the packed entries (:mod:`.copy_match`), from the fed
        decoder inputs: the run of ``d[p - j] == x[i - 1 - j]`` for ``j = 0, 1, ...``."""
        back = ppos[:, None] - torch.arange(self.match_k, device=ppos.device)[None, :]  # [N, K]
        toks = self.history[pb[:, None], back.clamp(min=0)]
        real = back >= 0
        for i in self.match_ignore:
            real &= toks != i
        eq = (toks[:, :, None] == self.copy_prev[pb]) & real[:, :, None]  # [N, K, L]
        return torch.cumprod(eq.long(), dim=1).sum(1)

    def _covered(self, pb: torch.Tensor, ppos: torch.Tensor) -> torch.Tensor:
        """Coverage ``[N, L]`` of the packed entries (:func:`.copy_match.covered`): prompt token
        ``x_i`` is among the decoder inputs fed at positions ``0 .. ppos``."""
        span = int(ppos.max()) + 1
        toks = self.history[pb, :span]  # [N, span]
        real = torch.arange(span, device=ppos.device)[None, :] <= ppos[:, None]
        for i in self.match_ignore:
            real &= toks != i
        eq = (toks[:, :, None] == self.source_ids[pb][:, None, :]) & real[:, :, None]
        return eq.any(dim=1)

    def _copy_mix(
        self,
        hidden: torch.Tensor,
        logits: torch.Tensor,
        pb: torch.Tensor,
        pk: torch.Tensor,
        ppos: torch.Tensor,
    ) -> torch.Tensor:
        """``log p`` ``[N, V]`` of the pointer-generator mixture (see :mod:`.autoui`) for the
        packed entries at ``(pb, pk)`` of a ``[B, K]`` call, at decoder positions ``ppos``."""
        batch, width = self.batch, int(pk.max()) + 1
        query = hidden @ self.copy_query.T
        padded = torch.zeros((batch, width, query.shape[-1]), device=query.device)
        scores = (padded.index_put((pb, pk), query) @ self.copy_keys)[pb, pk]  # [N, L]
        match = None
        if self.match_k:
            match = self._match(pb, ppos)
            scores = scores + self.model.copy_match_bias.float()[match]
            if self.span_start is not None:
                cover = self._covered(pb, ppos).float() * self.model.copy_cover_bias.float()
                scores = scores + (self.span_start[pb] + cover).masked_fill(match > 0, 0.0)
        attention = torch.softmax(scores.masked_fill(self.copy_mask[pb, 0], float("-inf")), -1)
        padded = torch.zeros((batch, width, attention.shape[-1]), device=query.device)
        context = (padded.index_put((pb, pk), attention) @ self.states)[pb, pk]  # [N, d]
        gate_logit = torch.cat([hidden, context], dim=-1) @ self.copy_w.T + self.copy_b
        if match is not None:
            longest = match.masked_fill(self.copy_mask[pb, 0], 0).amax(-1, keepdim=True)
            gate_logit = gate_logit + self.model.copy_gate_match.float()[longest]
        gate = torch.sigmoid(gate_logit)
        copied = torch.zeros_like(logits).scatter_add_(-1, self.source_ids[pb], attention)
        mixed = (1.0 - gate) * torch.softmax(logits, dim=-1) + gate * copied
        return torch.log(mixed.clamp_min(1e-30))
