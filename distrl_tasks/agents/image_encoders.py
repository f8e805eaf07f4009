"""Screenshot feature extractors: BLIP-2 vision features and a small weight-free default.

Both expose ``dim`` and ``encode(png_bytes_list) -> np.ndarray[float16] [N, dim]``. Features
are computed once per screenshot at collection time and stored with the trajectory, so training
never re-runs the encoder.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from PIL import Image
from transformers import Blip2Config, Blip2VisionConfig, Blip2VisionModel

from distrl_tasks.agents.checkpoint import CheckpointError, read_weights, weight_files
from distrl_tasks.config import AgentConfig
from distrl_tasks.protocol.files import read_json_object

BLIP2_DIM = 1408  # ViT-g pooled output of Salesforce/blip2-opt-2.7b
# BLIP-2's processor normalises with the OpenAI CLIP statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


class ImageEncoder(Protocol):
    """What the collector needs from an encoder."""

    dim: int

    def encode(self, pngs: Sequence[bytes]) -> np.ndarray: ...


def _open_rgb(png: bytes, index: int) -> Image.Image:
    if not isinstance(png, bytes | bytearray | memoryview):
        raise TypeError(f"screenshot {index}: expected PNG bytes, got {type(png).__name__}")
    try:
        with Image.open(io.BytesIO(png)) as img:
            return img.convert("RGB")
    except (OSError, ValueError) as exc:
        raise ValueError(f"screenshot {index}: not a decodable image: {exc}") from exc


class SmallImageEncoder:
    """Deterministic, weight-free features of a screenshot (1408 values, like BLIP-2).

    Three views of the screen, each area-averaged to a fixed grid so any resolution maps to the
    same layout:

    * grey levels on a 24x48 (columns x rows) grid (1152): where text, icons and fields are;
    * colour on a 4x8 grid (96): which app or page theme is showing;
    * edge density on a 10x16 grid (160): fine structure such as text lines that averaging blurs.

    Values are centred near zero so the policy's linear projection starts well conditioned.
    """

    GREY_GRID = (24, 48)
    COLOUR_GRID = (4, 8)
    EDGE_GRID = (10, 16)
    dim = 24 * 48 + 4 * 8 * 3 + 10 * 16

    def _features(self, img: Image.Image) -> np.ndarray:
        grey = np.asarray(img.convert("L").resize(self.GREY_GRID, Image.Resampling.BOX), np.float32)
        colour = np.asarray(img.resize(self.COLOUR_GRID, Image.Resampling.BOX), np.float32)
        # Edges from a 4x finer grey image: mean absolute neighbour difference per cell.
        cols, rows = self.EDGE_GRID
        fine = np.asarray(
            img.convert("L").resize((cols * 8, rows * 8), Image.Resampling.BOX), np.float32
        )
        gx = np.abs(np.diff(fine, axis=1, append=fine[:, -1:]))
        gy = np.abs(np.diff(fine, axis=0, append=fine[-1:, :]))
        edges = (gx + gy).reshape(rows, 8, cols, 8).mean(axis=(1, 3))
        return np.concatenate(
            [
                (grey.ravel() / 255.0 - 0.5) * 2.0,
                (colour.ravel() / 255.0 - 0.5) * 2.0,
                np.tanh(edges.ravel() / 32.0),
            ]
        )

    def encode(self, pngs: Sequence[bytes]) -> np.ndarray:
        """Features ``[N, 1408]`` float16 of PNG (or any PIL-readable) screenshots."""
        out = np.zeros((len(pngs), self.dim), dtype=np.float16)
        for i, png in enumerate(pngs):
            out[i] = self._features(_open_rgb(png, i))
        return out


class Blip2ImageEncoder:
    """BLIP-2 vision tower features (pooled CLS token after the last layer norm).

    Reads a local directory holding either a full BLIP-2 checkpoint (``model_type: blip-2``; only
    the ``vision_model.*`` tensors are read, the language model is never loaded) or a saved
    ``Blip2VisionModel`` (``model_type: blip_2_vision_model``). Weights must be safetensors.
    Preprocessing follows BLIP-2's processor: resize to the model's square input (bicubic),
    scale to [0, 1], normalise; ``preprocessor_config.json`` overrides size, mean and std.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        batch_size: int = 16,
    ) -> None:
        root = Path(path)
        config = read_json_object(root / "config.json", CheckpointError)
        kind = config.get("model_type")
        if kind == "blip-2":
            vision_config = Blip2Config.from_dict(config).vision_config
            prefix = "vision_model."
        elif kind == "blip_2_vision_model":
            vision_config = Blip2VisionConfig.from_dict(config)
            prefix = ""
        else:
            raise CheckpointError(
                f"{root}/config.json: model_type {kind!r} is neither 'blip-2' nor "
                "'blip_2_vision_model'"
            )
        state = read_weights(weight_files(root), prefix)
        if prefix == "" and any(k.startswith("vision_model.") for k in state):
            state = {k.removeprefix("vision_model."): v for k, v in state.items()}
        model = Blip2VisionModel(vision_config)
        result = model.load_state_dict(state, strict=False)
        if result.missing_keys:
            raise CheckpointError(f"{root}: vision tensors missing: {result.missing_keys[:5]}")
        self.model = model.to(device=device, dtype=dtype).eval()
        self.device = torch.device(device)
        self.dtype = dtype
        self.batch_size = batch_size
        self.dim = int(vision_config.hidden_size)
        size: int | dict[str, int] = vision_config.image_size
        mean, std = CLIP_MEAN, CLIP_STD
        pre = root / "preprocessor_config.json"
        if pre.is_file():
            pcfg = read_json_object(pre, CheckpointError)
            size = pcfg.get("size", size)
            mean = tuple(pcfg.get("image_mean", mean))
            std = tuple(pcfg.get("image_std", std))
        if isinstance(size, dict):
            self.size = (int(size["width"]), int(size["height"]))
        else:
            self.size = (int(size), int(size))
        self.mean = np.asarray(mean, np.float32)
        self.std = np.asarray(std, np.float32)

    def _pixels(self, pngs: Sequence[bytes], offset: int) -> torch.Tensor:
        arrays = []
        for i, png in enumerate(pngs):
            img = _open_rgb(png, offset + i).resize(self.size, Image.Resampling.BICUBIC)
            arr = (np.asarray(img, np.float32) / 255.0 - self.mean) / self.std
            arrays.append(arr.transpose(2, 0, 1))
        return torch.from_numpy(np.stack(arrays)).to(self.device, self.dtype)

    @torch.no_grad()
    def encode(self, pngs: Sequence[bytes]) -> np.ndarray:
        """Pooled BLIP-2 vision features ``[N, dim]`` float16 (``dim`` = 1408 for ViT-g)."""
        out = np.zeros((len(pngs), self.dim), dtype=np.float16)
        for start in range(0, len(pngs), self.batch_size):
            chunk = pngs[start : start + self.batch_size]
            pooled = self.model(pixel_values=self._pixels(chunk, start)).pooler_output
            out[start : start + len(chunk)] = pooled.float().cpu().numpy()
        return out


def image_feature_dim(cfg: AgentConfig) -> int:
    """Feature size the configured encoder produces, without loading any weights."""
    if cfg.image_encoder == "small":
        return SmallImageEncoder.dim
    config = read_json_object(Path(cfg.image_encoder_path) / "config.json", CheckpointError)
    vision = config.get("vision_config", config) if config.get("model_type") == "blip-2" else config
    return int(vision.get("hidden_size", BLIP2_DIM))


def build_image_encoder(
    cfg: AgentConfig, *, device: str | torch.device = "cpu"
) -> SmallImageEncoder | Blip2ImageEncoder:
    """The encoder named by ``agent.image_encoder`` (BLIP-2 from ``agent.image_encoder_path``)."""
    if cfg.image_encoder == "small":
        return SmallImageEncoder()
    if cfg.image_encoder == "blip2":
        if not cfg.image_encoder_path:
            raise ValueError("agent.image_encoder_path: needed for image_encoder 'blip2'")
        return Blip2ImageEncoder(cfg.image_encoder_path, device=device)
    raise ValueError(f"agent.image_encoder: unknown encoder {cfg.image_encoder!r}")
