"""The AutoUI policy network: a T5 encoder-decoder whose encoder states are fused with an image.

Fusion (the Auto-UI paper's; docs/agents-and-algorithms.md, "The agent"): the screenshot feature
vector is projected to ``d_model`` by ``image_dense``; single-head attention (``mha_layer``) lets
every text state attend to the projected image tokens; a sigmoid gate (``gate_dense`` over
``[text; attended]``) mixes the attended image context into each text state; the decoder
cross-attends to the fused states.

The module holds the Hugging Face T5 parts under the same names as Auto-UI checkpoints
(``shared``, ``encoder``, ``decoder``, ``lm_head``, ``image_dense``, ``mha_layer``,
``gate_dense``), so an Auto-UI-Base state dict loads without renaming.

Copy head (our addition, on when the T5 config carries ``copy_attention: true``; Auto-UI
checkpoints do not): a pointer-generator output layer (See et al. 2017). With decoder state
``h_t``, fused encoder states ``s_1..s_L`` and prompt ids ``x_1..x_L``::

    a_t = softmax_i(q(h_t) . s_i / sqrt(d))            copy attention over the prompt
    g_t = sigmoid(w . [h_t; sum_i a_ti s_i] + b)       probability of copying
    p_t(v) = (1 - g_t) softmax(lm_head(h_t))_v + g_t sum_{i: x_i = v} a_ti

and :meth:`AutoUIModel.decode` returns ``log p_t`` in place of logits. A from-scratch tiny model
cannot learn to spell goal words it never saw within a CPU budget, but it learns quickly *where*
in the goal the typed text is; copying then generalises to unseen goals.

Match bias (config ``copy_match: K``, K > 0): the copy scores also get a learnt term
``m[k(t, i)]`` for the length ``k`` of the run of decoder inputs that matches the prompt just
before position ``i`` (:mod:`distrl_tasks.agents.copy_match`), and the gate a learnt term for the
longest such run, so a started copy keeps its place in the goal. With it the decoder's cache is a
:class:`~distrl_tasks.agents.copy_match.MatchCache`, opaque to callers.

Span scores (config ``copy_span: true``, needs the match bias): a prompt position that no run
continues gets ``u[kind(i)] + c * covered(t, i)``, a learnt score per start kind (inside a word,
word start, symbol) and a learnt coverage score (:mod:`distrl_tasks.agents.copy_match`), so
copies start at word starts and do not restart an entity already typed. The kind of every
vocabulary id comes from the tokenizer (:meth:`AutoUIModel.set_piece_kinds`, which
:class:`~distrl_tasks.agents.policy.AutoUIPolicy` calls) and is saved with the weights.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn
from transformers import T5Config, T5ForConditionalGeneration
from transformers.models.t5.modeling_t5 import T5Stack

from distrl_tasks.agents.copy_match import (
    INSIDE_WORD,
    SYMBOL,
    WORD_START,
    MatchCache,
    covered,
    match_lengths,
    start_kinds,
)
from distrl_tasks.agents.pointer import PointerHead, PointerInputs

# transformers 5 renamed the decoder stack's ``past_key_values`` argument and output to ``cache``
# (the old name warns on every call and goes in 5.40); older releases know only the old name.
_CACHE_ARG = (
    "cache" if "cache" in inspect.signature(T5Stack.forward).parameters else "past_key_values"
)

DEFAULT_IMAGE_DIM = 1408  # BLIP-2 ViT-g pooled feature size, as the papers' policy uses


def lm_head_is_tied(config: T5Config) -> bool:
    """Original T5 ties the output projection to the embeddings and rescales decoder outputs;
    T5 v1.1 (FLAN, Auto-UI) keeps a separate, unscaled head. transformers 5 records the choice
    as ``scale_decoder_outputs``, older versions as ``tie_word_embeddings``."""
    return bool(getattr(config, "scale_decoder_outputs", config.tie_word_embeddings))


def tiny_t5_config(
    vocab_size: int = 384,
    *,
    d_model: int = 256,
    layers: int = 3,
    copy: bool = True,
    copy_match: int = 8,
    copy_span: bool = True,
) -> T5Config:
    """The embedded default: a few million parameters, trainable from scratch on a CPU.

    Dropout is off so that, for the same weights, the learner's recomputed log-probs equal the
    actor's behaviour log-probs exactly (importance ratios of 1 on-policy). ``copy`` turns on the
    copy head, ``copy_match`` its match bias over runs of up to that many tokens (module
    docstring; 0 = off), ``copy_span`` its span scores (only with the match bias: without it
    the flag is dropped).
    """
    copy_span = bool(copy_span and copy and copy_match)  # span scores extend the match bias
    return T5Config(
        vocab_size=vocab_size,
        d_model=d_model,
        d_kv=64,
        d_ff=3 * d_model,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=max(1, d_model // 64),
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        dropout_rate=0.0,
        feed_forward_proj="relu",
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        copy_attention=copy,
        copy_match=copy_match if copy else 0,
        copy_span=copy_span,
    )


class AutoUIModel(nn.Module):
    """T5 with AutoUI's gated image fusion between encoder and decoder.

    Args:
        config: the T5 configuration (vocabulary, sizes, tying).
        image_dim: length of one image feature vector (1408 for BLIP-2).
    """

    def __init__(self, config: T5Config, image_dim: int = DEFAULT_IMAGE_DIM) -> None:
        super().__init__()
        if image_dim < 1:
            raise ValueError(f"image_dim must be >= 1, got {image_dim}")
        t5 = T5ForConditionalGeneration(config)
        self.config = t5.config
        self.image_dim = int(image_dim)
        self.tied = lm_head_is_tied(config)
        d_model = config.d_model
        self.shared = t5.shared
        self.encoder = t5.encoder
        self.decoder = t5.decoder
        if self.tied:
            self.lm_head = t5.lm_head
            self.lm_head.weight = self.shared.weight
        else:
            # transformers 5 ties the head unconditionally; v1.1 checkpoints need their own.
            self.lm_head = nn.Linear(d_model, config.vocab_size, bias=False)
            nn.init.normal_(self.lm_head.weight, std=d_model**-0.5)
        self.image_dense = nn.Linear(self.image_dim, d_model)
        self.mha_layer = nn.MultiheadAttention(d_model, num_heads=1, batch_first=True)
        self.gate_dense = nn.Linear(2 * d_model, d_model)
        self.copy = bool(getattr(config, "copy_attention", False))
        if self.copy:
            self.copy_query = nn.Linear(d_model, d_model, bias=False)
            self.copy_gate = nn.Linear(2 * d_model, 1)
        self.copy_match = int(getattr(config, "copy_match", 0) or 0) if self.copy else 0
        if self.copy_match:
            # start as a prior "continue the run" (one unit of score per matched token)
            lengths = torch.arange(self.copy_match + 1, dtype=torch.float32)
            self.copy_match_bias = nn.Parameter(lengths.clone())
            self.copy_gate_match = nn.Parameter(torch.zeros(self.copy_match + 1))
        self.copy_span = bool(getattr(config, "copy_span", False)) and self.copy_match > 0
        if self.copy_span:
            # priors: a copy rarely starts inside a word and never re-types what is written
            start = torch.zeros(3)
            start[INSIDE_WORD], start[SYMBOL] = -2.0, -1.0
            self.copy_start_bias = nn.Parameter(start)
            self.copy_cover_bias = nn.Parameter(torch.tensor([-2.0]))
            # every id a word start until the tokenizer says otherwise (no effect by itself)
            kinds = torch.full((config.vocab_size,), WORD_START, dtype=torch.long)
            self.register_buffer("copy_piece_kinds", kinds)
        # the tap-target pointer (config ``pointer: true``; :mod:`.pointer`)
        self.pointer_head = PointerHead(d_model) if getattr(config, "pointer", False) else None

    def add_pointer(self, seed: int = 0) -> None:
        """Give a model built without the pointer a new head (seeded; it starts writing
        coordinates nearly always, :data:`.pointer.WRITE_PRIOR`) and record it in the config,
        so a saved checkpoint loads with it."""
        if self.pointer_head is not None:
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            head = PointerHead(self.config.d_model)
        self.pointer_head = head.to(self.shared.weight.device, self.shared.weight.dtype)
        self.config.pointer = True

    def choice_logits(
        self,
        states: torch.Tensor,
        attention_mask: torch.Tensor,
        inputs: PointerInputs,
        *,
        detach_base: bool = False,
    ) -> torch.Tensor:
        """``[B, K + 1]`` pointer logits (:class:`.pointer.PointerHead`), "write" last;
        ``detach_base``: gradients of these logits reach the head alone."""
        if self.pointer_head is None:
            raise ValueError("this model has no pointer head (agent.pointer: false when built)")
        return self.pointer_head(
            self.shared, states, attention_mask, inputs, detach_base=detach_base
        )

    def set_piece_kinds(self, kinds: torch.Tensor) -> None:
        """Record the start kind of every vocabulary id (:func:`~.copy_match.piece_kinds`);
        ids past ``kinds`` (sentinels the tokenizer does not have) count as symbols."""
        if not self.copy_span:
            return
        full = torch.full((self.vocab_size,), SYMBOL, dtype=torch.long)
        n = min(len(kinds), self.vocab_size)
        full[:n] = kinds[:n]
        self.copy_piece_kinds.copy_(full.to(self.copy_piece_kinds.device))

    @property
    def vocab_size(self) -> int:
        return int(self.config.vocab_size)

    @property
    def decoder_start_id(self) -> int:
        start = self.config.decoder_start_token_id
        return int(self.config.pad_token_id if start is None else start)

    def num_parameters(self) -> int:
        """Distinct trainable parameters (tied tensors counted once)."""
        return sum(p.numel() for p in self.parameters())

    def _image_tokens(self, image_features: torch.Tensor, batch: int) -> torch.Tensor:
        feats = image_features
        if feats.dim() == 2:
            feats = feats.unsqueeze(1)  # one image token per example
        if feats.dim() != 3 or feats.shape[0] != batch or feats.shape[-1] != self.image_dim:
            raise ValueError(
                f"image_features must be [B, {self.image_dim}] or [B, N, {self.image_dim}] with "
                f"B = {batch}, got {tuple(image_features.shape)}"
            )
        return self.image_dense(feats.to(self.image_dense.weight.dtype))

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        image_features: torch.Tensor,
    ) -> torch.Tensor:
        """Fused encoder states ``[B, L, d_model]`` of a padded prompt batch and its images."""
        text = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        image = self._image_tokens(image_features, input_ids.shape[0])
        attended, _ = self.mha_layer(text, image, image, need_weights=False)
        gate = torch.sigmoid(self.gate_dense(torch.cat([text, attended], dim=-1)))
        return (1.0 - gate) * text + gate * attended

    def decode(
        self,
        decoder_input_ids: torch.Tensor,
        encoder_states: torch.Tensor,
        attention_mask: torch.Tensor,
        past_key_values: Any = None,
        use_cache: bool = False,
        source_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Logits ``[B, T, V]`` for ``decoder_input_ids`` and the updated key/value cache.

        With the copy head the "logits" are the log-probabilities of the mixed distribution
        (``log_softmax`` of them is the identity), and ``source_ids`` (the prompt ids ``[B, L]``
        the encoder states came from) is required.
        """
        if self.copy and source_ids is None:
            raise ValueError("this model has a copy head: decode() needs source_ids")
        kv, history = past_key_values, decoder_input_ids
        if self.copy_match:
            if past_key_values is not None and not isinstance(past_key_values, MatchCache):
                raise TypeError("a copy_match model's cache is the MatchCache decode() returned")
            if isinstance(past_key_values, MatchCache):
                kv = past_key_values.kv
                history = torch.cat([past_key_values.history, decoder_input_ids], dim=1)
        out = self.decoder(
            input_ids=decoder_input_ids,
            encoder_hidden_states=encoder_states,
            encoder_attention_mask=attention_mask,
            use_cache=use_cache,
            **{_CACHE_ARG: kv},
        )
        hidden = out.last_hidden_state
        cache = getattr(out, _CACHE_ARG) if use_cache else None
        if self.copy_match and use_cache:
            cache = MatchCache(cache, history)
        scaled = hidden * (self.config.d_model**-0.5) if self.tied else hidden
        logits = self.lm_head(scaled)
        if not self.copy:
            return logits, cache
        match = span = None
        if self.copy_match:
            new = decoder_input_ids.shape[1]
            window = history[:, -(new + self.copy_match - 1) :]  # rows look back K-1 inputs
            ignore = (self.decoder_start_id, int(self.config.pad_token_id or 0))
            match = match_lengths(window, source_ids, attention_mask, self.copy_match, ignore)
            match = match[:, -new:]
            if self.copy_span:
                cover = covered(history, source_ids, ignore)[:, -new:]
                span = self.span_scores(match, cover, source_ids)
        mixed = self._copy_mix(
            hidden, logits, encoder_states, attention_mask, source_ids, match, span
        )
        return mixed, cache

    def span_scores(
        self, match: torch.Tensor, cover: torch.Tensor, source_ids: torch.Tensor
    ) -> torch.Tensor:
        """The span scores ``[B, T, L]`` (module docstring): at positions no run continues
        (``match == 0``), the start kind's score plus the coverage score where covered."""
        kind = start_kinds(source_ids, self.copy_piece_kinds)
        start = self.copy_start_bias.float()[kind].unsqueeze(1)  # [B, 1, L]
        score = start + self.copy_cover_bias.float() * cover.float()
        return score.masked_fill(match > 0, 0.0)

    def _copy_mix(
        self,
        hidden: torch.Tensor,
        logits: torch.Tensor,
        states: torch.Tensor,
        mask: torch.Tensor,
        source_ids: torch.Tensor,
        match: torch.Tensor | None = None,
        span: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``log p_t`` ``[B, T, V]`` of the pointer-generator mixture (module docstring).

        ``match`` (``[B, T, L]`` match lengths, copy_match models only) adds the match bias,
        ``span`` (``[B, T, L]``, copy_span models only) the span scores.

        Computed in float32 with autocast off: a probability mixture and its log need the range.
        """
        with torch.autocast(device_type=hidden.device.type, enabled=False):
            hidden, states = hidden.float(), states.float()
            scores = hidden @ self.copy_query.weight.float().T
            scores = scores @ states.transpose(1, 2) / states.shape[-1] ** 0.5  # [B, T, L]
            if match is not None:
                scores = scores + self.copy_match_bias.float()[match]
            if span is not None:
                scores = scores + span
            scores = scores.masked_fill(~mask.bool().unsqueeze(1), float("-inf"))
            attention = torch.softmax(scores, dim=-1)
            context = attention @ states  # [B, T, d]
            w, b = self.copy_gate.weight.float(), self.copy_gate.bias.float()
            gate_logit = torch.cat([hidden, context], dim=-1) @ w.T + b  # [B, T, 1]
            if match is not None:
                longest = match.masked_fill(~mask.bool().unsqueeze(1), 0).amax(-1, keepdim=True)
                gate_logit = gate_logit + self.copy_gate_match.float()[longest]
            gate = torch.sigmoid(gate_logit)
            index = source_ids.unsqueeze(1).expand(-1, hidden.shape[1], -1)
            copied = torch.zeros_like(logits, dtype=torch.float32).scatter_add(-1, index, attention)
            mixed = (1.0 - gate) * torch.softmax(logits.float(), dim=-1) + gate * copied
            # clamp: a zero probability would give -inf and NaN gradients through the log.
            return torch.log(mixed.clamp_min(1e-30))

    def shift_right(self, labels: torch.Tensor) -> torch.Tensor:
        """Teacher-forcing decoder inputs: the start id, then the labels minus the last one."""
        start = torch.full_like(labels[:, :1], self.decoder_start_id)
        return torch.cat([start, labels[:, :-1]], dim=1)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        image_features: torch.Tensor,
        labels: torch.Tensor,
    ) -> torch.Tensor:
        """Teacher-forced logits ``[B, T, V]``; position ``t`` scores ``labels[:, t]``."""
        states = self.encode(input_ids, attention_mask, image_features)
        logits, _ = self.decode(
            self.shift_right(labels), states, attention_mask, source_ids=input_ids
        )
        return logits


def build_tiny_model(
    image_dim: int = DEFAULT_IMAGE_DIM, *, vocab_size: int = 384, seed: int = 0, **config: Any
) -> AutoUIModel:
    """A freshly initialised embedded-default model (deterministic for a given ``seed``);
    ``config`` overrides :func:`tiny_t5_config`'s keyword arguments."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return AutoUIModel(tiny_t5_config(vocab_size, **config), image_dim)
