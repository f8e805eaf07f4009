"""The sections of the configuration: one frozen dataclass per concern, each checking itself.

Every section of ``params.yaml`` (``env``, ``agent``, ``algorithm``, ``data``, ``evaluator``,
``tracking``, ``orchestration``; ``sim`` lives in :mod:`~distrl_tasks.config.sim_sections`) is a
class here whose fields carry their defaults and a comment saying what they mean, and whose
``validate(key)`` rejects impossible values with a :class:`ConfigError` naming the dotted key.
They live apart from :mod:`distrl_tasks.config`, which assembles them into the one
:class:`~distrl_tasks.config.Config` and loads it from YAML, so that the list of settings and
their limits can be read without the loading machinery, and ``config`` re-exports every class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from distrl_tasks.config.algorithm_specs import AlgorithmName, algorithm_spec
from distrl_tasks.config.rl_sections import (
    ContinuousConfig,
    CriticPrefitConfig,
    CurriculumConfig,
    DistRLConfig,
    GroupConfig,
)
from distrl_tasks.config.typed_yaml import check as _check


@dataclass(frozen=True)
class EnvConfig:
    """How episodes run on a device (simulated or real)."""

    device_kind: Literal["sim", "emulator"] = "sim"  # which device fleet backs the env
    adb_host: str = "127.0.0.1"  # adb server host (emulators: the local adb server)
    adb_port: int = 5037  # adb server port for emulators (the sim farm uses sim.port)
    task_set: Literal["general", "webshop"] = "general"  # AitW task family
    data_dir: str = ""  # directory of the AitW task files (empty: the copy shipped in the package)
    horizon_general: int = 10  # step budget per episode, general tasks (papers: 10)
    horizon_webshop: int = 20  # step budget per episode, webshop tasks (papers: 20)
    command_timeout_s: float = 20.0  # a device command slower than this counts as a hang
    repeat_penalty: float = 0.4  # DistRL: cumulative penalty per repeated action
    empty_text_penalty: float = 1.0  # DistRL: penalty for TYPE with empty text
    invalid_action_penalty: float = 1.0  # penalty for an unparseable model output
    end_on_invalid: bool = False  # end the episode on unparseable output (DigiRL) or go on
    prompt_history: int = 1  # previous actions in the policy's prompt (the papers keep 1)
    emulator_bin: str = "emulator"  # Android emulator binary for device_kind = emulator
    avd: str = "distrl_pixel"  # AVD started for device_kind = emulator (devices_per_worker copies)
    avd_snapshot: str = "clean"  # AVD snapshot loaded on every reset (not re-cloned)

    def validate(self, key: str) -> None:
        _check(self.horizon_general >= 1, f"{key}.horizon_general", "must be >= 1")
        _check(self.horizon_webshop >= 1, f"{key}.horizon_webshop", "must be >= 1")
        _check(self.command_timeout_s > 0, f"{key}.command_timeout_s", "must be > 0")
        _check(self.prompt_history >= 0, f"{key}.prompt_history", "must be >= 0")
        _check(0 < self.adb_port < 65536, f"{key}.adb_port", "must be a TCP port")


@dataclass(frozen=True)
class ExplorationConfig:
    """How collection explores beyond sampling the policy: temperatures per part of the action
    and taps on the screen's actionable elements. The behaviour log-prob stored per step is the
    probability of what acted under the whole mixture, so importance weights stay right."""

    type_temperature: float = 0.0  # plan and action type (0 = agent.temperature)
    coord_temperature: float = 0.0  # tap target: pointer choice or digits (0 = agent.temperature)
    text_temperature: float = 0.0  # typed text (0 = agent.temperature)
    element_epsilon: float = 0.0  # per step: tap a drawn element of the UI dump instead
    # goal-aware draws: element e weighs 1 + element_goal_weight * (goal words in its label,
    # +0.5 for a text field); 0 = uniform. Goal words point exploring taps at the elements a
    # goal needs (benchmarks/results/2026-11-27-goal-aware-element-exploration.md)
    element_goal_weight: float = 4.0

    def validate(self, key: str) -> None:
        for part in ("type", "coord", "text"):
            value = getattr(self, f"{part}_temperature")
            _check(value >= 0, f"{key}.{part}_temperature", "must be >= 0 (0 = agent.temperature)")
        _check(0.0 <= self.element_epsilon < 1.0, f"{key}.element_epsilon", "must be in [0, 1)")
        _check(self.element_goal_weight >= 0, f"{key}.element_goal_weight", "must be >= 0")

    def temperatures(self, default: float) -> dict[str, float]:
        """The temperature of each part ("type", "coords", "text"), zeros replaced by
        ``default``."""
        pick = {"type": self.type_temperature, "coords": self.coord_temperature,
                "text": self.text_temperature}  # fmt: skip
        return {part: value or default for part, value in pick.items()}


@dataclass(frozen=True)
class SFTConfig:
    """The bootstrap: supervised fine-tuning on expert demonstrations before the first round."""

    tokenizer: Literal["sentencepiece", "byte"] = "sentencepiece"  # bootstrap vocabulary
    vocab_size: int = 1024  # size of the SentencePiece vocabulary fitted to the demos
    episodes_per_device: int = 24  # expert demonstrations per device for the bootstrap
    mistake_rate: float = 0.2  # expert mistake rate of those demonstrations
    steps: int = 300  # supervised optimizer steps of the bootstrap
    batch_size: int = 8  # demonstration steps per SFT optimizer step
    lr: float = 1e-4  # peak bootstrap SFT rate (1e-3 erases the base; a fresh model wants 1e-3)
    # which train goals the bootstrap's demonstrations attempt: "file" = the train file's lines
    # uniformly (AitW General: 2/3 web searches, like its test goals); "balanced" = every task
    # family the same share (it keeps no more of the base:
    # benchmarks/results/2026-11-27-bootstrap-keeps-base.md)
    goal_mix: Literal["balanced", "file"] = "file"
    unfinished_demos: bool = True  # also imitate expert runs that ran out of steps (not mistakes)

    def validate(self, key: str) -> None:
        _check(self.vocab_size >= 300, f"{key}.vocab_size", "must be >= 300")
        _check(self.episodes_per_device >= 1, f"{key}.episodes_per_device", "must be >= 1")
        _check(0.0 <= self.mistake_rate < 1.0, f"{key}.mistake_rate", "must be in [0, 1)")
        _check(self.steps >= 1, f"{key}.steps", "must be >= 1")
        _check(self.batch_size >= 1, f"{key}.batch_size", "must be >= 1")
        _check(self.lr > 0, f"{key}.lr", "must be > 0")


@dataclass(frozen=True)
class PretrainConfig:
    """The base checkpoint's corpus and training (``distrl pretrain``, ``pretrain/dvc.yaml``)."""

    goals: int = 3000  # General training goals of the pretrain corpus (family-balanced)
    webshop_goals: int = 600  # WebShop training goals of the pretrain corpus
    search_share: float = 0.2  # web searches' share of the General corpus (AitW: 0.66)
    heldout_per_family: int = 8  # held-out generated goals per family, to measure it
    episodes_per_device: int = 200  # General expert demonstrations per device
    webshop_episodes_per_device: int = 60  # WebShop expert demonstrations per device
    heldout_episodes_per_device: int = 16  # expert demos on held-out goals (the loss)
    mistake_rate: float = 0.2  # expert mistake-and-recovery rate of the corpus
    unfinished_demos: bool = True  # also imitate expert runs that ran out of steps (not mistakes)
    steps: int = 20000  # ceiling; training stops when the held-out loss plateaus
    eval_every: int = 100  # optimizer steps between held-out loss measurements
    patience: int = 4  # measurements without a 1% improvement that end training
    batch_size: int = 16  # demonstration steps per optimizer step
    lr: float = 1e-3  # peak learning rate
    time_budget_s: float = 0.0  # end this part after this long; a rerun resumes (0 = none)
    threads: int = 1  # torch threads while training (0 = all CPUs; 1 is faster on a busy box)

    def validate(self, key: str) -> None:
        at_least_one = (
            "goals",
            "webshop_goals",
            "episodes_per_device",
            "webshop_episodes_per_device",
            "heldout_episodes_per_device",
            "eval_every",
            "patience",
            "steps",
            "batch_size",
        )
        for name in at_least_one:
            _check(getattr(self, name) >= 1, f"{key}.{name}", "must be >= 1")
        _check(
            self.heldout_per_family >= 1,
            f"{key}.heldout_per_family",
            "must be >= 1 (the plateau and the card need held-out goals of every family)",
        )
        _check(0.0 < self.search_share < 1.0, f"{key}.search_share", "must be in (0, 1)")
        _check(0.0 <= self.mistake_rate < 1.0, f"{key}.mistake_rate", "must be in [0, 1)")
        _check(self.lr > 0, f"{key}.lr", "must be > 0")
        _check(self.time_budget_s >= 0, f"{key}.time_budget_s", "must be >= 0")
        _check(self.threads >= 0, f"{key}.threads", "must be >= 0")


@dataclass(frozen=True)
class AgentConfig:
    """The policy and its critics."""

    # tiny = embedded default; autoui-base = a local Auto-UI-Base; vlm = a local Qwen2-VL-family
    # model (agent.vlm_base_dir) with LoRA adapters
    model: Literal["tiny", "autoui-base", "vlm"] = "tiny"
    vlm_base_dir: str = ""  # local Qwen2-VL / Qwen2.5-VL directory (safetensors) for model: vlm
    vlm_lora_rank: int = 16  # LoRA rank on the language model's attention projections
    vlm_lora_alpha: int = 32  # LoRA scaling numerator (alpha / rank scales the update)
    checkpoint_dir: str = ""  # local Auto-UI-Base style checkpoint (empty: train from scratch)
    image_encoder: Literal["small", "blip2"] = "small"  # image feature extractor
    image_encoder_path: str = ""  # local path of BLIP-2 weights when image_encoder = blip2
    # collection sampling temperature; at 0.5 sampled success matches greedy
    # (benchmarks/results/2026-11-22-sft-copy-head.md)
    temperature: float = 0.5
    exploration: ExplorationConfig = field(default_factory=ExplorationConfig)  # beyond sampling
    # a tap may point at one of the screen's actionable elements instead of writing coordinates
    # (agents/pointer.py); the action is still written as the element's centre. Like goal typing,
    # it lives on the grammar: no effect on free decoding or on agent.model: vlm
    pointer: bool = True
    pointer_elements: int = 16  # most elements offered, the goal's first (agent.pointer)
    max_new_tokens: int = 128  # decoding budget for one action string (a byte-level tap takes 160)
    constrained_decoding: bool = True  # decode only well-formed AutoUI actions (false: free text)
    # with constrained_decoding, every word the policy types is a goal word, used no more often
    # than the goal holds it (agents/goal_typing.py; like the grammar itself, it has no effect on
    # free decoding or on agent.model: vlm)
    goal_typing: bool = True
    max_prompt_tokens: int = 512  # prompts are left-truncated to this length
    critic_text_encoder: Literal["hashed", "minilm", "roberta"] = "hashed"  # critics' text input
    critic_text_encoder_path: str = ""  # local model directory (roberta; optional for minilm)
    critic_hidden: int = 256  # width of the critics' MLP heads (papers: 768)
    sft: SFTConfig = field(default_factory=SFTConfig)  # the bootstrap: SFT on expert demos
    base_checkpoint: str = "shipped"  # bootstrap starts here: shipped base, a dir, "" = fresh
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)  # the base's corpus
    remote_base_url: str = ""  # OpenAI-compatible VLM endpoint (…/v1) for evaluation-only runs
    remote_model: str = ""  # served model name at remote_base_url
    remote_api_key_env: str = "VLM_API_KEY"  # env var holding the endpoint's key ("" = no auth)
    remote_timeout_s: float = 60.0  # per-request timeout of the remote VLM
    remote_concurrency: int = 4  # requests in flight to the remote VLM

    @property
    def points(self) -> bool:
        """Whether a tap may point: ``pointer`` on an AutoUI model under the grammar, which marks
        where a tap's touch point goes (a VLM and free decoding write coordinates)."""
        return self.pointer and self.model != "vlm" and self.constrained_decoding

    @property
    def tap_elements(self) -> int:
        """Elements each observation offers the pointer (0 = coordinates only)."""
        return self.pointer_elements if self.points else 0

    def validate(self, key: str) -> None:
        _check(self.temperature > 0, f"{key}.temperature", "must be > 0")
        _check(self.max_new_tokens >= 8, f"{key}.max_new_tokens", "must be >= 8")
        _check(self.pointer_elements >= 1, f"{key}.pointer_elements", "must be >= 1")
        _check(
            self.model != "vlm" or bool(self.vlm_base_dir),
            f"{key}.vlm_base_dir",
            "needed for agent.model: vlm (a local Qwen2-VL / Qwen2.5-VL directory)",
        )
        _check(self.vlm_lora_rank >= 1, f"{key}.vlm_lora_rank", "must be >= 1")
        _check(self.vlm_lora_alpha >= 1, f"{key}.vlm_lora_alpha", "must be >= 1")
        _check(self.max_prompt_tokens >= 16, f"{key}.max_prompt_tokens", "must be >= 16")
        _check(
            self.remote_base_url == "" or self.remote_base_url.startswith(("http://", "https://")),
            f"{key}.remote_base_url",
            "must be empty or start with http:// or https://",
        )
        _check(
            not self.remote_base_url or bool(self.remote_model),
            f"{key}.remote_model",
            "needed when remote_base_url is set",
        )
        _check(self.remote_timeout_s > 0, f"{key}.remote_timeout_s", "must be > 0")
        _check(self.remote_concurrency >= 1, f"{key}.remote_concurrency", "must be >= 1")
        _check(self.critic_hidden >= 1, f"{key}.critic_hidden", "must be >= 1")
        if self.critic_text_encoder == "roberta":
            _check(
                bool(self.critic_text_encoder_path),
                f"{key}.critic_text_encoder_path",
                "needed for the roberta text encoder",
            )
        if self.image_encoder == "blip2":
            _check(bool(self.image_encoder_path), f"{key}.image_encoder_path", "needed for blip2")


@dataclass(frozen=True)
class AlgorithmConfig:
    """The RL algorithm and its hyperparameters (defaults from the papers' configs)."""

    name: AlgorithmName = "distrl"  # algorithm (config/algorithm_specs.py lists them)
    # data regime: offline = round 0 only (the offline phase: critics, then actor, on rollouts
    # of the bootstrap policy); online = rounds 1.. only; off2on = round 0, then online rounds
    mode: Literal["offline", "online", "off2on"] = "off2on"
    gamma: float = 0.5  # discount (papers' code: 0.5)
    lambda_: float = 1.0  # Retrace trace coefficient lambda
    rho_bar: float = 1.0  # truncation of importance ratios in targets and policy gradient
    c_bar: float = 1.0  # truncation of importance ratios in the traces
    entropy_coef: float = 0.01  # beta: weight of the entropy bonus
    invalid_coef: float = 1.0  # lambda_inv: weight of the invalid-action penalty
    ratio_clip: float = 0.0  # DistRL: PPO-style trust region eps on pi/mu (0 = off, the paper)
    lm_lr: float = 1e-5  # policy learning rate (papers: 1e-4; it breaks the tiny SFT policy)
    critic_lr: float = 1e-4  # critic learning rate
    max_grad_norm: float = 0.01  # gradient clipping (papers' code: 0.01)
    grad_accum_steps: int = 1  # micro-batches per optimizer step (batch_size must divide)
    mixed_precision: Literal["no", "bf16"] = "no"  # bf16 autocast on GPUs
    warmup_steps: int = 0  # linear learning-rate warmup, in optimizer steps
    weight_decay: float = 0.0  # AdamW weight decay (0 = plain Adam)
    batch_size: int = 4  # trajectories (or windows) per optimizer step
    actor_epochs: int = 20  # actor updates per round
    critic_epochs: int = 5  # critic-only warm-up steps per round, before the actor steps
    offline_critic_steps: int = 20  # offline phase (round 0): critic-only steps (papers: 20)
    offline_actor_steps: int = 30  # offline phase (round 0): actor steps (papers: 30)
    sequence_length: int = 3  # contiguous steps per sampled window (Retrace)
    filter_top_fraction: float = 0.1  # DigiRL / Filtered BC: keep the top p of trajectories
    digirl_lambda: float = 0.5  # DigiRL doubly-robust advantage lambda (lambda^(H-h) weight)
    keep_states: int = 2  # newest learner states kept in runs/learner/checkpoints (0 = all)
    distrl: DistRLConfig = field(default_factory=DistRLConfig)  # A-RIDE's form (released)
    critic_prefit: CriticPrefitConfig = field(default_factory=CriticPrefitConfig)  # fresh critic
    group: GroupConfig = field(default_factory=GroupConfig)  # GRPO / GiGPO groups and clip

    def validate(self, key: str) -> None:
        _check(0.0 <= self.gamma <= 1.0, f"{key}.gamma", "must be in [0, 1]")
        _check(0.0 <= self.lambda_ <= 1.0, f"{key}.lambda_", "must be in [0, 1]")
        _check(self.rho_bar > 0 and self.c_bar > 0, f"{key}.rho_bar", "clips must be > 0")
        _check(self.lm_lr > 0 and self.critic_lr > 0, f"{key}.lm_lr", "learning rates must be > 0")
        _check(self.batch_size >= 1, f"{key}.batch_size", "must be >= 1")
        _check(self.grad_accum_steps >= 1, f"{key}.grad_accum_steps", "must be >= 1")
        _check(
            self.batch_size % self.grad_accum_steps == 0,
            f"{key}.batch_size",
            f"must be divisible by grad_accum_steps ({self.grad_accum_steps})",
        )
        _check(self.warmup_steps >= 0, f"{key}.warmup_steps", "must be >= 0")
        _check(self.actor_epochs >= 1, f"{key}.actor_epochs", "must be >= 1")
        _check(self.critic_epochs >= 0, f"{key}.critic_epochs", "must be >= 0")
        _check(self.offline_actor_steps >= 1, f"{key}.offline_actor_steps", "must be >= 1")
        _check(self.offline_critic_steps >= 0, f"{key}.offline_critic_steps", "must be >= 0")
        _check(self.weight_decay >= 0, f"{key}.weight_decay", "must be >= 0")
        _check(self.sequence_length >= 1, f"{key}.sequence_length", "must be >= 1")
        _check(
            0.0 < self.filter_top_fraction <= 1.0,
            f"{key}.filter_top_fraction",
            "must be in (0, 1]",
        )
        _check(0.0 <= self.ratio_clip < 1.0, f"{key}.ratio_clip", "must be in [0, 1)")
        _check(0.0 <= self.digirl_lambda <= 1.0, f"{key}.digirl_lambda", "must be in [0, 1]")
        _check(self.keep_states >= 0, f"{key}.keep_states", "must be >= 0 (0 keeps all)")
        _check(
            not algorithm_spec(self.name).groups or self.group.size >= 2,
            f"{key}.group.size",
            f"must be >= 2 for {self.name} (a group of one has no relative advantage)",
        )


@dataclass(frozen=True)
class DataConfig:
    """Trajectory shards, replay and versioning."""

    root: str = "data/trajectories"  # Parquet trajectory shards (raw/, labeled/), DVC-tracked
    replay_capacity: int = 10000  # transitions kept in the replay window
    replay_window_rounds: int = 4  # newest rounds of shards the learner reads
    dvc_remote: str = "runs/dvc-remote"  # default DVC remote: a local directory

    def validate(self, key: str) -> None:
        _check(self.replay_capacity >= 1, f"{key}.replay_capacity", "must be >= 1")
        _check(self.replay_window_rounds >= 1, f"{key}.replay_window_rounds", "must be >= 1")


@dataclass(frozen=True)
class EvaluatorConfig:
    """Who labels trajectories: the simulator oracle or Gemini."""

    kind: Literal["oracle", "gemini"] = "oracle"  # oracle = `simctl task check` on sim devices
    model: str = "gemini-3.5-flash"  # Gemini model (stable GA; checked at start-up)
    base_url: str = ""  # override of the Gemini endpoint (empty: the public default)
    concurrency: int = 4  # requests in flight at once
    requests_per_minute: int = 60  # rate budget
    max_retries: int = 5  # retries on 429 / 5xx / timeouts
    last_screenshots: int = 1  # how many final screenshots are judged
    downscale: int = 4  # images are sent at width/downscale x height/downscale
    timeout_s: float = 60.0  # per-request timeout before a retry
    cache_dir: str = "runs/gemini_cache"  # verdict cache; relative paths: under the workdir

    def validate(self, key: str) -> None:
        _check(self.concurrency >= 1, f"{key}.concurrency", "must be >= 1")
        _check(self.requests_per_minute >= 1, f"{key}.requests_per_minute", "must be >= 1")
        _check(self.max_retries >= 0, f"{key}.max_retries", "must be >= 0")
        _check(self.last_screenshots >= 1, f"{key}.last_screenshots", "must be >= 1")
        _check(self.downscale >= 1, f"{key}.downscale", "must be >= 1")
        _check(self.timeout_s > 0, f"{key}.timeout_s", "must be > 0")


@dataclass(frozen=True)
class TrackingConfig:
    """MLflow tracking and registry."""

    tracking_uri: str = "sqlite:///runs/mlflow.db"  # local SQLite store by default
    experiment: str = "distrl"  # MLflow experiment name
    model_name: str = "distrl-policy"  # registered model name
    artifact_root: str = "runs/mlartifacts"  # where new experiments store artifacts (path or URI)
    # newest registry versions kept in runs/learner/registry, plus the aliases' (0 = all)
    keep_downloads: int = 3
    # newest round policies kept in runs/checkpoints once registered; the registry keeps every
    # version, so an older round's local copy is only disk (0 = all)
    keep_checkpoints: int = 3

    def validate(self, key: str) -> None:
        _check(self.keep_downloads >= 0, f"{key}.keep_downloads", "must be >= 0 (0 keeps all)")
        _check(self.keep_checkpoints >= 0, f"{key}.keep_checkpoints", "must be >= 0 (0 keeps all)")
        _check(bool(self.experiment), f"{key}.experiment", "must not be empty")
        _check(bool(self.model_name), f"{key}.model_name", "must not be empty")
        _check(bool(self.artifact_root), f"{key}.artifact_root", "must not be empty")


@dataclass(frozen=True)
class OrchestrationConfig:
    """Topology and rounds (replaces the seeds' `bsize`/`parallel` flags)."""

    workers: int = 1  # collection workers (one Airflow mapped task each)
    devices_per_worker: int = 8  # devices each worker drives
    episodes_per_device: int = 2  # episodes each device runs per round
    # round 0 (algorithm.mode offline / off2on): episodes each device runs with the bootstrap
    # policy to make the offline dataset
    offline_episodes_per_device: int = 4
    rounds: int = 3  # training rounds of the demo / DAG
    asynchronous: bool = True  # DistRL actor/learner (True) or DigiRL lockstep rounds (False)
    eval_tasks: int = 96  # first N test tasks in file order (papers: 96)
    # simulated devices an evaluation starts (at most one per task): more devices fill bigger
    # policy batches, so it ends sooner (benchmarks/results/2026-11-23-evaluation-devices.md);
    # verdicts don't change
    eval_devices: int = 32
    inference_max_batch: int = 32  # most observations per batched policy call (async collection)
    inference_max_wait_ms: float = 5.0  # how long a policy batch waits to fill up
    # torch threads of the collect, train and evaluate stages (an Airflow task, `dvc repro`)
    # and of the rounds `distrl round` / `demo` / `bench` run in one process (the actors'
    # inference, the learner and its process): 0 = every CPU; 1 is faster where they share 2 cores
    threads: int = 1
    # async: most collections finished or in flight that the learner is not done with
    # (2 = one round ahead; 0 = data.replay_window_rounds)
    actor_max_pending: int = 0
    continuous: ContinuousConfig = field(default_factory=ContinuousConfig)  # async learner
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)  # goals by difficulty

    def validate(self, key: str) -> None:
        _check(self.workers >= 1, f"{key}.workers", "must be >= 1")
        _check(self.actor_max_pending >= 0, f"{key}.actor_max_pending", "must be >= 0")
        _check(self.devices_per_worker >= 1, f"{key}.devices_per_worker", "must be >= 1")
        _check(self.episodes_per_device >= 1, f"{key}.episodes_per_device", "must be >= 1")
        _check(
            self.offline_episodes_per_device >= 1,
            f"{key}.offline_episodes_per_device",
            "must be >= 1",
        )
        _check(self.rounds >= 1, f"{key}.rounds", "must be >= 1")
        _check(self.eval_tasks >= 1, f"{key}.eval_tasks", "must be >= 1")
        _check(self.eval_devices >= 1, f"{key}.eval_devices", "must be >= 1")
        _check(self.inference_max_batch >= 1, f"{key}.inference_max_batch", "must be >= 1")
        _check(self.inference_max_wait_ms >= 0, f"{key}.inference_max_wait_ms", "must be >= 0")
        _check(self.threads >= 0, f"{key}.threads", "must be >= 0")
