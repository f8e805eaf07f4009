"""A vision-language policy trained with LoRA: Qwen2-VL / Qwen2.5-VL behind the policy API.

``agent.model: vlm`` acts with a Hugging Face vision-language model of the Qwen2-VL family
(transformers' own classes, loaded from a local directory, safetensors only) on the screenshot
itself and the same text prompt as AutoUI, and writes the same AutoUI action strings. Only LoRA
adapters (``peft``) train; the base model stays frozen and is named by its digest.

Input, the same for sampling and for scoring (no chat template, so any checkpoint of the family
reads it the same way)::

    <|vision_start|><|image_pad|> x N<|vision_end|>{prompt}\\nAction: {action}<eos>

where N is the number of merged image patches the image processor gives the screenshot and
``{prompt}`` is the observation's prompt ("Previous Actions: ... Goal: ..."). Rows are padded
on the left, so a batch generates and scores alike.

Behaviour log-probs are what the learner computes: a sampled action's ids are decoded to text
and the text is scored teacher-forced (its canonical encoding, plus eos) at the sampling
temperature, exactly as :meth:`score` does in training. Generation is unconstrained (the grammar
of :mod:`.grammar` is for the AutoUI tokenizers); a malformed action parses as invalid and is
penalised by the environment, as for the remote VLM.

Checkpoints (:meth:`VLMPolicy.save`) hold the adapters (``adapter_model.safetensors``,
``adapter_config.json``) and ``distrl_vlm.json``: the base model's directory and digest (SHA-256
of its config and weight files), checked when the adapters are loaded.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

from distrl_tasks.agents.policy_types import Sample, Scores
from distrl_tasks.protocol.observation import Observation

VLM_FILE = "distrl_vlm.json"
FORMAT_VERSION = 1
ACTION_CUE = "\nAction: "
# every projection of the language model (attention and MLP), as benchmarks/gpu.py measures it;
# the vision tower and the embeddings stay frozen
LORA_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"


class VLMCheckpointError(ValueError):
    """A VLM checkpoint or base model is missing, unreadable, or not the one the adapters fit."""


def is_vlm_checkpoint(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds VLM adapters written by :meth:`VLMPolicy.save`."""
    return (Path(directory) / VLM_FILE).is_file()


def base_digest(base_dir: str | os.PathLike) -> str:
    """SHA-256 over the base model's config and safetensors files (names and bytes)."""
    root = Path(base_dir)
    files = sorted([root / "config.json", *root.glob("*.safetensors")])
    missing = [f.name for f in files if not f.is_file()]
    if missing or len(files) < 2:
        raise VLMCheckpointError(
            f"{root}: not a base model directory (needs config.json and *.safetensors weights)"
        )
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def load_base_vlm(base_dir: str | os.PathLike) -> tuple[Any, Any, Any]:
    """The base model (float32, eval mode), its tokenizer and image processor, from a local
    directory; pickled weights are refused.

    Raises:
        VLMCheckpointError: the directory is not a loadable Qwen2-VL-family model.
    """
    root = Path(base_dir)
    base_digest(root)  # config and safetensors present
    try:
        model = AutoModelForImageTextToText.from_pretrained(
            str(root), dtype=torch.float32, use_safetensors=True, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        images = AutoImageProcessor.from_pretrained(str(root), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise VLMCheckpointError(f"{root}: cannot load the base VLM ({exc})") from exc
    return model.eval(), tokenizer, images


class VLMPolicy:
    """Sampling and teacher-forced scoring of AutoUI actions with a LoRA-adapted VLM.

    Args:
        model: the ``peft`` model (base frozen, adapters trainable).
        tokenizer: the base's tokenizer (with the Qwen vision special tokens).
        image_processor: the base's image processor.
        base_dir: where the base lives (recorded in checkpoints).
        temperature: default sampling temperature (> 0).
        max_new_tokens: decoding budget per action.
        max_prompt_tokens: text prompts are left-truncated to this many tokens.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        *,
        base_dir: str | os.PathLike,
        temperature: float = 1.0,
        max_new_tokens: int = 96,
        max_prompt_tokens: int = 512,
    ) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.base_dir = str(base_dir)
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.max_prompt_tokens = int(max_prompt_tokens)
        self.part_temperatures: dict[str, float] | None = None  # AutoUI grammar only
        cfg = model.config
        self._image_token = self._special("<|image_pad|>", getattr(cfg, "image_token_id", None))
        self._vision_start = self._special("<|vision_start|>", None)
        self._vision_end = self._special("<|vision_end|>", None)
        # transformers 5.2x builds M-RoPE positions from mm_token_type_ids; older 5.x does not
        # take it: pass it only where the model's forward names it
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._mm_types = "mm_token_type_ids" in inspect.signature(base.forward).parameters
        merge = getattr(image_processor, "merge_size", None) or 2
        self._merge = int(merge) ** 2
        eos = tokenizer.eos_token_id
        if eos is None:
            raise VLMCheckpointError("the VLM's tokenizer has no eos token")
        self.eos_id = int(eos)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos)
        # special tokens other than eos (vision placeholders, chat markers) are never written:
        # masked in sampling and in scoring alike, so both stay one distribution
        self._banned = sorted({int(i) for i in tokenizer.all_special_ids} - {self.eos_id})
        extra = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        self._banned = sorted({*self._banned, *(int(i) for i in extra)} - {self.eos_id})

    def _special(self, token: str, fallback: int | None) -> int:
        ids = self.tokenizer.convert_tokens_to_ids(token)
        if isinstance(ids, int) and ids != self.tokenizer.unk_token_id:
            return ids
        if fallback is not None:
            return int(fallback)
        raise VLMCheckpointError(f"the VLM's tokenizer has no {token} token")

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ----- inputs ------------------------------------------------------------------------------
    def _image(self, obs: Observation) -> Image.Image:
        png = getattr(obs, "screenshot_png", None)
        if not png:
            raise ValueError(
                "the VLM policy acts on screenshots: this observation carries none (an "
                "Observation needs screenshot_png; shards keep it per step)"
            )
        return Image.open(io.BytesIO(png)).convert("RGB")

    def _prompt_ids(self, obs: Observation, n_image: int) -> list[int]:
        text = self.tokenizer.encode(obs.prompt + ACTION_CUE, add_special_tokens=False)
        text = text[-self.max_prompt_tokens :]
        return [self._vision_start, *[self._image_token] * n_image, self._vision_end, *text]

    def _encode(
        self, observations: Sequence[Observation], actions: Sequence[Sequence[int]] | None = None
    ) -> dict[str, torch.Tensor]:
        """Left-padded model inputs; with ``actions`` (ids) appended, plus ``labels_mask``
        marking the action positions (the targets of the logits one step earlier)."""
        images = [self._image(o) for o in observations]
        vision = self.image_processor(images=images, return_tensors="pt")
        grid = vision["image_grid_thw"]
        rows, marks = [], []
        for i, obs in enumerate(observations):
            n_image = int(grid[i].prod()) // self._merge
            prompt = self._prompt_ids(obs, n_image)
            act = list(actions[i]) if actions is not None else []
            rows.append(prompt + act)
            marks.append([0] * len(prompt) + [1] * len(act))
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        label = torch.zeros((len(rows), width), dtype=torch.bool)
        for i, (row, mark) in enumerate(zip(rows, marks, strict=True)):
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
            label[i, width - len(row) :] = torch.tensor(mark, dtype=torch.bool)
        device = self.device
        dtype = next(self.model.parameters()).dtype
        out = {
            "input_ids": ids.to(device),
            "attention_mask": mask.to(device),
            "pixel_values": vision["pixel_values"].to(device, dtype=dtype),
            "image_grid_thw": grid.to(device),
            "labels_mask": label.to(device),
        }
        if self._mm_types:  # modality per position (0 text, 1 image): M-RoPE's positions
            out["mm_token_type_ids"] = (ids == self._image_token).long().to(device)
        return out

    def _action_ids(self, text: str) -> list[int]:
        # a special token's spelling inside an action is plain text, never the token itself
        ids = self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
        return [*ids, self.eos_id]

    # ----- scoring -----------------------------------------------------------------------------
    def score(
        self,
        observations: Sequence[Observation],
        actions: Sequence[str],
        *,
        temperature: float | None = None,
        constrained: bool = True,
    ) -> Scores:
        """Teacher-forced log-probs and entropies of ``actions`` (with gradient).

        ``constrained`` is accepted for the policy API and ignored (VLM decoding is free).
        """
        if len(actions) != len(observations):
            raise ValueError(f"{len(observations)} observations but {len(actions)} actions")
        t = self.temperature if temperature is None else float(temperature)
        if t <= 0:
            raise ValueError(f"temperature must be > 0, got {t}")
        targets = [self._action_ids(a) for a in actions]
        inputs = self._encode(observations, targets)
        labels_mask = inputs.pop("labels_mask")
        logits = self.model(**inputs).logits[:, :-1].float()  # [B, L-1, V]: predicts j + 1
        if self._banned:
            logits[..., self._banned] = float("-inf")
        logp = torch.log_softmax(logits / t, dim=-1)
        ids = inputs["input_ids"][:, 1:]
        keep = labels_mask[:, 1:]
        picked = logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        token_lp = torch.where(keep, picked, torch.zeros_like(picked))
        safe = logp.masked_fill(~torch.isfinite(logp), 0.0)
        entropy_t = -(safe.exp() * safe).sum(-1)
        entropy = torch.where(keep, entropy_t, torch.zeros_like(entropy_t)).sum(-1)
        # align to [B, T] action positions (left padding: actions end every row)
        width = max(len(x) for x in targets)
        token_log_probs = token_lp[:, -width:]
        lengths = keep.sum(-1)
        return Scores(token_lp.sum(-1), entropy, token_log_probs, lengths)

    def log_prob(
        self,
        observations: Sequence[Observation],
        actions: Sequence[str],
        *,
        temperature: float | None = None,
    ) -> torch.Tensor:
        """``[B]`` log-probs of ``actions`` given ``observations``; differentiable."""
        return self.score(observations, actions, temperature=temperature).log_prob

    # ----- sampling ----------------------------------------------------------------------------
    @torch.no_grad()
    def sample(
        self,
        observations: Sequence[Observation],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> Sample:
        """One action per observation, sampled (or argmax), with its behaviour log-prob."""
        t = self.temperature if temperature is None else float(temperature)
        inputs = self._encode(observations)
        inputs.pop("labels_mask")
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator)) if generator else None
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            out = self.model.generate(
                **inputs,
                do_sample=not greedy,
                temperature=t if not greedy else None,
                top_k=None,
                top_p=None,
                max_new_tokens=self.max_new_tokens,
                eos_token_id=self.eos_id,
                pad_token_id=self.pad_id,
                suppress_tokens=self._banned or None,
            )
        new = out[:, inputs["input_ids"].shape[1] :].tolist()
        rows = [r[: r.index(self.eos_id) + 1] if self.eos_id in r else r for r in new]
        texts = [self.tokenizer.decode([i for i in r if i != self.eos_id]) for r in rows]
        scores = self.score(observations, texts, temperature=t)
        canonical = [self._action_ids(x) == r for x, r in zip(texts, rows, strict=True)]
        return Sample(texts, rows, scores.log_prob.detach(), canonical)

    def act(
        self,
        observations: Sequence[Observation],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[list[str], torch.Tensor]:
        """Actions (AutoUI strings) and their ``[B]`` behaviour log-probs (no gradient)."""
        out = self.sample(observations, greedy=greedy, temperature=temperature, generator=generator)
        return out.texts, out.log_probs

    # ----- checkpoints -------------------------------------------------------------------------
    def save(self, directory: str | Path, metadata: Mapping[str, Any] | None = None) -> Path:
        """Write the adapters and the base's pointer (see the module docstring)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(out), safe_serialization=True)
        info = {
            "format_version": FORMAT_VERSION,
            "kind": "vlm-lora",
            "base_dir": self.base_dir,
            "base_digest": base_digest(self.base_dir),
            "metadata": dict(metadata or {}),
        }
        (out / VLM_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        return out


def new_vlm_policy(
    base_dir: str | os.PathLike,
    *,
    rank: int = 16,
    alpha: int = 32,
    temperature: float = 1.0,
    max_new_tokens: int = 96,
    seed: int = 0,
) -> VLMPolicy:
    """Fresh LoRA adapters (rank ``rank`` on the language model's projections) on a base."""
    from peft import LoraConfig, get_peft_model  # lazy: peft, only LoRA needs it

    model, tokenizer, images = load_base_vlm(base_dir)
    lora = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=LORA_TARGETS)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        peft_model = get_peft_model(model, lora)
    return VLMPolicy(peft_model, tokenizer, images, base_dir=base_dir, temperature=temperature,
                     max_new_tokens=max_new_tokens)  # fmt: skip


def load_vlm_policy(
    directory: str | os.PathLike,
    *,
    base_dir: str | os.PathLike | None = None,
    temperature: float = 1.0,
    max_new_tokens: int = 96,
) -> VLMPolicy:
    """Adapters from :meth:`VLMPolicy.save` on their base (``base_dir``, default the recorded
    one), trainable.

    Raises:
        VLMCheckpointError: no adapters there, or the base is not the one they were trained on.
    """
    from peft import PeftModel  # lazy: peft, only LoRA needs it

    root = Path(directory)
    if not is_vlm_checkpoint(root):
        raise VLMCheckpointError(f"{root}: no {VLM_FILE} (not a VLM checkpoint)")
    info = json.loads((root / VLM_FILE).read_text())
    base = Path(base_dir or info["base_dir"])
    digest = base_digest(base)
    if digest != info["base_digest"]:
        raise VLMCheckpointError(
            f"{root}: its adapters were trained on a base with digest {info['base_digest'][:12]}, "
            f"but {base} has {digest[:12]} (another model, or its weights changed)"
        )
    model, tokenizer, images = load_base_vlm(base)
    peft_model = PeftModel.from_pretrained(model, str(root), is_trainable=True)
    return VLMPolicy(peft_model, tokenizer, images, base_dir=base, temperature=temperature,
                     max_new_tokens=max_new_tokens)  # fmt: skip
