"""Match features for the copy head: where in the prompt the text written so far continues.

A pointer-generator's attention (See et al. 2017) must find, at every typed token, the prompt
position to copy next. A tiny model trained from scratch learns *where the query starts* in a
goal quickly but loses its place inside it ("olCCmbCmbia" for "Colombia"): keeping track of a
position is what its relative-position attention does badly. The match length gives it directly,
as induction heads do in trained transformers: for decoder position ``t`` and prompt position
``i``, ``k(t, i)`` is how many of the last decoder inputs equal the prompt tokens just before
``i``::

    k(t, i) = max k <= K  such that  d[t - j] == x[i - 1 - j]  for j = 0 .. k - 1

(``d`` the decoder inputs, ``x`` the prompt ids; the start token and padding never match). A
learnt score per length is added to the copy attention (``x_i`` continues a copied run of length
``k``), so once the first piece of a query is written the rest follows the prompt.

:class:`MatchCache` carries the decoder inputs seen so far next to the key/value cache, so
incremental decoding computes the same features as the teacher-forced pass.

Span features (config ``copy_span: true``): the match bias keeps a started copy on track but says
nothing about where a copy may *start*, and a tiny model was measured starting inside words
("How oweLowe" for "Lowe's") and going round an entity it had already typed ("Perry Perry
Perry"; benchmarks/results/2026-11-27-base-copy-starts-stops.md). Two features of a prompt
position ``i`` that no run continues (``k(t, i) = 0``, a copy would start there) fix both ends the
way a span pointer would, without changing the action format:

- its *start kind* (:func:`start_kinds`): inside a word, a word's first piece, or a symbol; a
  learnt score per kind lets the model start copies at word starts only;
- *coverage* (:func:`covered`, See et al. 2017's coverage in its simplest form): ``x_i`` was
  already written by the decoder, with a learnt score, so a finished entity is not typed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


def match_lengths(
    decoder_ids: torch.Tensor,
    source_ids: torch.Tensor,
    source_mask: torch.Tensor,
    max_len: int,
    ignore_ids: tuple[int, ...] = (0,),
) -> torch.Tensor:
    """Match lengths ``k(t, i)`` (module docstring), capped at ``max_len``.

    Args:
        decoder_ids: ``[B, T]`` decoder inputs (a window of them is fine: rows only look back
            ``max_len - 1`` positions, and the caller drops the rows it does not need).
        source_ids: ``[B, L]`` prompt ids.
        source_mask: ``[B, L]`` 1 for real prompt tokens.
        max_len: K >= 1.
        ignore_ids: decoder ids that never match (the start/pad id).

    Returns:
        ``[B, T, L]`` long tensor in ``[0, max_len]``; column 0 is always 0.
    """
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    real_d = torch.ones_like(decoder_ids, dtype=torch.bool)
    for i in ignore_ids:
        real_d &= decoder_ids != i
    # prev[b, i] = x[b, i-1] when that is a real token, else -1 (matches nothing)
    prev = torch.where(source_mask.bool(), source_ids, torch.full_like(source_ids, -1))
    prev = F.pad(prev[:, :-1], (1, 0), value=-1)
    eq = (decoder_ids.unsqueeze(-1) == prev.unsqueeze(1)) & real_d.unsqueeze(-1)  # [B, T, L]
    run = eq
    total = eq.long()
    steps, width = eq.shape[1], eq.shape[2]
    for j in range(1, max_len):
        if j >= steps or j >= width:
            break
        shifted = F.pad(eq[:, : steps - j, : width - j], (j, 0, j, 0), value=False)
        run = run & shifted
        total = total + run.long()
    return total


@dataclass
class MatchCache:
    """The decoder's key/value cache plus the decoder inputs it has seen (``[B, t]``)."""

    kv: Any
    history: torch.Tensor

    def get_seq_length(self) -> int:
        """Decoder positions cached (the Hugging Face cache method of the same name)."""
        return int(self.history.shape[1])


# start kinds of a prompt position and of a vocabulary id (indices of the learnt
# ``copy_start_bias``)
INSIDE_WORD, WORD_START, SYMBOL = 0, 1, 2


def piece_kinds(token_texts: list[str]) -> torch.Tensor:
    """Kind of every vocabulary id from the text it writes: ``[V]`` long.

    A piece without a letter or digit (punctuation, quotes, apostrophes, spaces, specials:
    ``""``) is :data:`SYMBOL`; one that begins with a space (a word-initial ``▁word`` piece) is
    :data:`WORD_START`; the rest continue a word (:data:`INSIDE_WORD`), a trailing space
    (``word▁``, as whitespace-as-suffix vocabularies write a word's last piece) included: the
    copy was trained to read pieces so. Byte-level vocabularies give letters
    :data:`INSIDE_WORD` and let :func:`start_kinds` find the starts.
    """

    def kind(text: str) -> int:
        if not any(c.isalnum() for c in text):
            return SYMBOL
        return WORD_START if text[0].isspace() else INSIDE_WORD

    return torch.tensor([kind(t) for t in token_texts], dtype=torch.long)


def start_kinds(source_ids: torch.Tensor, kinds: torch.Tensor) -> torch.Tensor:
    """Start kind of every prompt position ``[B, L]`` (:data:`INSIDE_WORD`, :data:`WORD_START`
    or :data:`SYMBOL`), from the pieces' kinds (:func:`piece_kinds`): a piece continuing a word
    begins one at the prompt's start or right after a symbol. A space a piece ends with does not
    end its word, so in a whitespace-as-suffix vocabulary ``nearest▁`` then ``L`` is one word and
    "Lowe's" starts a word at its "s" (after the apostrophe)."""
    own = kinds[source_ids]
    before = F.pad(own[:, :-1], (1, 0), value=SYMBOL)
    return torch.where((own == INSIDE_WORD) & (before == SYMBOL), WORD_START, own)


def covered(
    decoder_ids: torch.Tensor, source_ids: torch.Tensor, ignore_ids: tuple[int, ...] = (0,)
) -> torch.Tensor:
    """``c(t, i)``: prompt token ``x_i`` is among the decoder inputs ``d_0 .. d_t``.

    Args:
        decoder_ids: ``[B, T]`` decoder inputs from position 0 (the whole history).
        source_ids: ``[B, L]`` prompt ids.
        ignore_ids: decoder ids that cover nothing (the start/pad id).

    Returns:
        ``[B, T, L]`` bool.
    """
    real = torch.ones_like(decoder_ids, dtype=torch.bool)
    for i in ignore_ids:
        real &= decoder_ids != i
    eq = (decoder_ids.unsqueeze(-1) == source_ids.unsqueeze(1)) & real.unsqueeze(-1)
    return eq.long().cumsum(dim=1) > 0
