"""Tokenizers of the AutoUI policy: a file-free byte tokenizer and T5's SentencePiece tokenizer.

Both follow T5's id conventions (pad 0, eos 1, unk 2) so either can drive the same model code.
Beyond encode/decode, a tokenizer says which ids the policy may *generate* (:meth:`output_mask`):
the policy samples only from those, which keeps ``encode(decode(sampled)) == sampled`` for the
byte tokenizer, so the log-prob the learner recomputes from the stored action text is the log-prob
of exactly the tokens the actor sampled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import sentencepiece as spm
import torch

PAD_ID = 0
EOS_ID = 1
UNK_ID = 2


class Tokenizer(ABC):
    """Common interface; subclasses set ``kind``, ``size`` and implement the text mapping."""

    kind: str = ""
    pad_id: int = PAD_ID
    eos_id: int = EOS_ID
    unk_id: int = UNK_ID
    size: int = 0  # ids this tokenizer can emit (the model's vocab may be larger)

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without the end-of-sequence token."""

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; pad, eos and ids outside the text vocabulary are dropped."""

    @abstractmethod
    def _generable(self, vocab_size: int) -> torch.Tensor:
        """Bool ``[vocab_size]`` of the text ids that may be generated (eos is added after)."""

    def encode_prompt(self, text: str, max_tokens: int) -> list[int]:
        """Prompt ids ending in eos, left-truncated so that at most ``max_tokens`` remain.

        The start is dropped (not the end) because the goal sits at the end of AutoUI prompts.
        """
        if max_tokens < 2:
            raise ValueError(
                f"max_tokens must be >= 2 (room for one token and eos), got {max_tokens}"
            )
        ids = self.encode(text)
        keep = max_tokens - 1
        if len(ids) > keep:
            ids = ids[len(ids) - keep :]
        return [*ids, self.eos_id]

    def encode_action(self, text: str, max_new_tokens: int) -> list[int]:
        """Decoder target ids of an action, exactly as sampling would have produced them.

        Sampling stops at eos or after ``max_new_tokens`` tokens; a text whose ids fill the budget
        was therefore cut off and carries no eos, anything shorter ends in eos.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        ids = self.encode(text)
        if len(ids) >= max_new_tokens:
            return ids[:max_new_tokens]
        return [*ids, self.eos_id]

    def token_texts(self, vocab_size: int) -> dict[str, list[int]]:
        """The text each generable id writes, grouped: ``{text: [ids]}`` (eos excluded).

        Ids whose text is not a whole character (a lone non-ASCII byte) are left out, so a
        grammar-constrained decoder never splits a character.
        """
        texts: dict[str, list[int]] = {}
        generable = self._generable(vocab_size)
        for i in torch.nonzero(generable).flatten().tolist():
            text = self.token_text(i)
            if text:
                texts.setdefault(text, []).append(i)
        return texts

    def piece_texts(self, vocab_size: int) -> list[str]:
        """The text of every id below ``vocab_size``: :meth:`token_text` for generable ids, ""
        for the rest (pad, eos, unk, control and sentinel ids write nothing)."""
        generable = self._generable(vocab_size).tolist()
        return [self.token_text(i) if generable[i] else "" for i in range(vocab_size)]

    @abstractmethod
    def token_text(self, token_id: int) -> str:
        """The text one generable id contributes to a decoded string ("" if not a whole char)."""

    def output_mask(self, vocab_size: int) -> torch.Tensor:
        """Bool ``[vocab_size]``: True for ids the policy may generate (eos always included)."""
        if vocab_size < self.size:
            raise ValueError(
                f"model vocab_size {vocab_size} is smaller than the {self.kind} tokenizer's "
                f"{self.size} ids; the checkpoint and tokenizer do not belong together"
            )
        mask = self._generable(vocab_size)
        mask[self.eos_id] = True
        return mask


class ByteTokenizer(Tokenizer):
    """ByT5's scheme without any files: UTF-8 byte ``b`` is id ``b + 3``; pad 0, eos 1, unk 2.

    The vocabulary size is 384 like ByT5 (256 bytes + 3 specials + 125 sentinel ids), so weights
    are interchangeable with ByT5-shaped embeddings. Generation is limited to printable ASCII:
    AutoUI action strings are ASCII, and arbitrary bytes could form invalid UTF-8 that would not
    survive a decode/encode round trip.
    """

    kind = "byte"
    OFFSET = 3
    VOCAB_SIZE = 384

    def __init__(self) -> None:
        self.size = self.VOCAB_SIZE

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"expected text as str, got {type(text).__name__}")
        return [b + self.OFFSET for b in text.encode("utf-8")]

    def decode(self, ids: Sequence[int]) -> str:
        raw = bytes(int(i) - self.OFFSET for i in ids if self.OFFSET <= int(i) < 256 + self.OFFSET)
        return raw.decode("utf-8", errors="replace")

    def _generable(self, vocab_size: int) -> torch.Tensor:
        mask = torch.zeros(vocab_size, dtype=torch.bool)
        mask[0x20 + self.OFFSET : 0x7F + self.OFFSET] = True  # space .. tilde
        return mask

    def token_text(self, token_id: int) -> str:
        return chr(token_id - self.OFFSET)


class SentencePieceTokenizer(Tokenizer):
    """T5's tokenizer read straight from a local ``spiece.model`` with the sentencepiece library.

    T5 appends sentinel ids (``<extra_id_N>``) after the SentencePiece vocabulary; those, pad,
    unk and control pieces are never generated. SentencePiece segmentation is not unique, so a
    sampled id sequence may differ from ``encode(decode(ids))``; the policy handles that case.
    """

    kind = "sentencepiece"

    def __init__(self, model_file: str | Path) -> None:
        path = Path(model_file)
        if not path.is_file():
            raise FileNotFoundError(f"SentencePiece model not found: {path}")
        self.path = path
        self._sp = spm.SentencePieceProcessor(model_file=str(path))
        self.size = int(self._sp.get_piece_size())
        for name, want, got in (
            ("pad", PAD_ID, self._sp.pad_id()),
            ("eos", EOS_ID, self._sp.eos_id()),
            ("unk", UNK_ID, self._sp.unk_id()),
        ):
            if got != want:
                raise ValueError(
                    f"{path}: {name} id is {got}, but T5 checkpoints expect {want} "
                    "(train with pad_id=0, eos_id=1, unk_id=2, bos_id=-1)"
                )

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"expected text as str, got {type(text).__name__}")
        return list(self._sp.encode(text, out_type=int))

    def decode(self, ids: Sequence[int]) -> str:
        keep = [int(i) for i in ids if int(i) < self.size and int(i) not in (PAD_ID, EOS_ID)]
        return self._sp.decode(keep)

    def _generable(self, vocab_size: int) -> torch.Tensor:
        mask = torch.zeros(vocab_size, dtype=torch.bool)
        for i in range(self.size):
            if not (self._sp.is_control(i) or self._sp.is_unknown(i) or self._sp.is_unused(i)):
                mask[i] = True
        return mask

    def token_text(self, token_id: int) -> str:
        if self._sp.is_byte(token_id):  # byte fallback piece "<0xNN>"
            value = int(self._sp.id_to_piece(token_id)[1:-1], 16)
            return chr(value) if value < 0x80 else ""
        return self._sp.id_to_piece(token_id).replace("\u2581", " ")
