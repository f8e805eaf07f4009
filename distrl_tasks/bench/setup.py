"""What every run of the learning benchmark starts from: settings, config, SFT policy, directory.

:class:`LearningBenchSettings` says what one invocation runs; :func:`run_config` turns it into
the configuration of one (method, task set, seed) run; :func:`bootstrap_sft` makes (or reuses)
the one SFT policy per task set that every method and seed starts from, and
:func:`seed_registry` puts it into a run's fresh registry; :func:`run_dir` names a run's project
by a hash of everything that shapes its result (the cache key of a finished run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distrl_tasks.bench.records import (
    DEFAULTS_BEFORE,
    DEFAULTS_GENERATION,
    SFT_CHECK_SEED,
    RunRecord,
)
from distrl_tasks.config import MOVED_KEYS, Config, load_config
from distrl_tasks.config.algorithm_specs import ALGORITHMS, SPECS
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.sim.dynamics.catalog import PROFILES
from distrl_tasks.stages import common

# Each method in its own paper's topology (config/algorithm_specs.py says which is asynchronous)
METHODS: dict[str, dict[str, Any]] = {
    s.name: {"algorithm.name": s.name, "orchestration.asynchronous": s.asynchronous} for s in SPECS
}


@dataclass(frozen=True)
class LearningBenchSettings:
    """What one benchmark invocation runs (every method gets exactly the same)."""

    methods: tuple[str, ...] = ALGORITHMS
    task_sets: tuple[str, ...] = ("general", "webshop")
    seeds: tuple[int, ...] = (0, 1, 2)
    # 900 s per run, so the synchronous methods publish well over 8 policy versions
    # (benchmarks/results/2026-11-24-learning-benchmark-asynchronous-synchronous-rl-table-1.md);
    # the full preset (30 runs) takes about nine hours, run in parts
    budget_s: float = 900.0  # wall clock per run, from the farm being up
    devices: int = 8  # simulated devices (orchestration.devices_per_worker, one worker)
    time_scale: float = 0.1  # sim.latency.time_scale (0.1: ten times faster than emulators)
    episodes_per_device: int = 2  # episodes per device per collection round
    round_eval_tasks: int = 24  # per-round evaluation: first N test tasks
    eval_test: int = 96  # final evaluation: first N test tasks in file order (papers: 96)
    eval_train: int = 32  # final evaluation: seeded sample of N train tasks
    sft_episodes_per_device: int | None = None  # bootstrap demos per device (None: config)
    sft_steps: int | None = None  # bootstrap SFT steps (None: agent.sft.steps)
    horizon: int | None = None  # step budget of every episode (None: config's 10/20, papers')
    threads: int = 1  # torch threads (2 fight each other and the actor thread on 2 shared cores)
    overrides: Mapping[str, Any] = field(default_factory=dict)  # config keys, for every run
    config: str | None = None  # base YAML config (None: the built-in defaults)
    preset: str = "custom"
    # collection mode for every method: None = the method's own (DistRL async, the others
    # sync); "async" / "sync" = forced (the ablation's factorial)
    collection: str | None = None
    # final policies are also evaluated (test goals) under these world profiles, for reference
    reference_profiles: tuple[str, ...] = ("static", "hostile")

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"methods must be some of {list(METHODS)}, got {list(self.methods)}")
        bad_sets = [t for t in self.task_sets if t not in ("general", "webshop")]
        if bad_sets or not self.task_sets:
            raise ValueError(f"task sets must be general and/or webshop, got {self.task_sets}")
        bad_profiles = [p for p in self.reference_profiles if p not in PROFILES]
        if bad_profiles:
            raise ValueError(f"reference profiles must be some of {list(PROFILES)}: {bad_profiles}")
        if self.collection not in (None, "async", "sync"):
            raise ValueError(f"collection must be None, 'async' or 'sync', got {self.collection}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {self.seeds}")
        if not self.budget_s > 0 or not self.time_scale >= 0:
            raise ValueError("budget_s must be > 0 and time_scale >= 0")
        counts = (self.devices, self.episodes_per_device, self.round_eval_tasks, self.threads)
        if min((*counts, self.eval_test, self.eval_train, self.horizon or 1)) < 1:
            raise ValueError("devices, episodes, task counts, threads, horizon must be >= 1")

    @classmethod
    def full(cls) -> LearningBenchSettings:
        """The benchmark as reported: 5 methods x 2 task sets x 3 seeds, 900 s each."""
        return cls(preset="full")

    @classmethod
    def smoke(cls) -> LearningBenchSettings:
        """Seconds-scale settings that exercise the machinery (the numbers mean nothing)."""
        return cls(
            methods=("distrl", "digirl", "filtered_bc"),  # the group methods: their own tests
            task_sets=("general",),
            seeds=(0,),
            budget_s=20.0,
            devices=2,
            time_scale=0.02,
            episodes_per_device=1,
            round_eval_tasks=2,
            eval_test=2,
            eval_train=2,
            sft_episodes_per_device=2,
            sft_steps=10,
            reference_profiles=(),
            overrides={
                # the expert solves most General goals in 3 steps without mistakes; a WebShop
                # "Go to" takes 4 and a search 8, more behind a dialog
                "env.horizon_general": 3,
                "env.horizon_webshop": 10,
                "agent.sft.mistake_rate": 0.0,
                "agent.sft.vocab_size": 400,
                "agent.max_new_tokens": 48,
                "algorithm.actor_epochs": 2,
                "algorithm.critic_epochs": 1,
                "algorithm.batch_size": 2,
                "algorithm.offline_actor_steps": 2,
                "algorithm.offline_critic_steps": 1,
                "orchestration.offline_episodes_per_device": 1,
                # a few critic pre-fit steps and one micro-batch per step fit 20 s
                "algorithm.critic_prefit.min_steps": 2,
                "algorithm.critic_prefit.max_steps": 4,
                # DistRL's continuous round: its actors halt this long before the 20 s budget,
                # and its learner is a thread (a process's start, spawn and imports, would take
                # most of the budget)
                "orchestration.continuous.finish_reserve_s": 2.0,
                "orchestration.continuous.learner_process": False,
                "algorithm.distrl.windows": 2,
            },
            preset="smoke",
        )

    def as_params(self) -> dict[str, Any]:
        """Flat values for MLflow params."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "overrides"}
        out = {k: ",".join(map(str, v)) if isinstance(v, tuple) else v for k, v in out.items()}
        return {**out, **{f"override.{k}": v for k, v in sorted(self.overrides.items())}}


# Config keys added after runs were cached, with the value that reproduces the behaviour from
# before they existed: at that value a key stays out of the cache key, so adding it keeps the
# cache. Another value makes a new run as usual.
NEUTRAL_NEW_KEYS: dict[str, Any] = {
    "env.prompt_history": 1,
    "orchestration.continuous.finish_reserve_s": 0.0,
    "orchestration.continuous.learner_process": False,
    "orchestration.continuous.replay_window_rounds": 0,
    "algorithm.distrl.rescore": "all",
    "agent.sft.goal_mix": "file",
    "agent.sft.unfinished_demos": False,
    "orchestration.curriculum.goal_mix": "file",
    "agent.exploration.element_goal_weight": 0.0,
    "agent.goal_typing": False,
    # every cached run trained and collected with the benchmark's one torch thread
    "orchestration.threads": 1,
}
# Keys that decide what is kept on disk, never what a run learns: they never name a result.
STORAGE_KEYS: frozenset[str] = frozenset(
    {"algorithm.keep_states", "tracking.keep_downloads", "tracking.keep_checkpoints"}
)
# New keys that only act in one mode, with the key that turns it off: off, they stay out too.
MODE_KEYS: dict[str, str] = {
    "orchestration.continuous.finish_reserve_s": "orchestration.continuous.replay_ratio",
    "orchestration.continuous.learner_process": "orchestration.continuous.replay_ratio",
    "orchestration.continuous.replay_window_rounds": "orchestration.continuous.replay_ratio",
    "agent.exploration.element_goal_weight": "agent.exploration.element_epsilon",
    # the rule narrows the grammar's text field (build_policy): free decoding has none
    "agent.goal_typing": "agent.constrained_decoding",
}


# The Gemini evaluator's keys at the values every cached run hashed: with oracle verdicts
# (evaluator.kind) no run reads them, so they are hashed at these values whatever the config
# says, and one added later not at all; a new Gemini default keeps the oracle runs' cache.
ORACLE_UNREAD_KEYS: dict[str, Any] = {
    "evaluator.base_url": "",
    "evaluator.cache_dir": "runs/gemini_cache",
    "evaluator.concurrency": 4,
    "evaluator.downscale": 4,
    "evaluator.last_screenshots": 1,
    "evaluator.max_retries": 5,
    "evaluator.model": "gemini-1.5-pro",
    "evaluator.requests_per_minute": 60,
    "evaluator.timeout_s": 60.0,
}

# What a synchronous run never reads (the train stage's ratio is the asynchronous learner's), at
# the value every cached synchronous run hashed: DistRL's replay ratio moving keeps their cache.
SYNC_UNREAD_KEYS: dict[str, Any] = {"orchestration.continuous.replay_ratio": 0.0}

# Retired keys (config.RETIRED_KEYS) at the value the runs cached while they existed hashed
# (the retired feature off): hashing them on keeps those runs found after the keys are gone.
RETIRED_HASHED: dict[str, Any] = {
    "agent.observation": "screenshot",
    "agent.observation_elements": 6,
    "agent.pretrain.copy_word_ends": False,
}


# Cached runs were named before keys moved into sections (issue 54): a view is hashed under the
# old names so that a moved key finds the runs cached under its old one.
_HASHED_NAMES: dict[str, str] = {new: old for old, new in MOVED_KEYS.items()}


def _hashed(view: Mapping[str, Any]) -> dict[str, Any]:
    """``view`` with each moved key under the name cached digests hashed it by."""
    return {_HASHED_NAMES.get(k, k): v for k, v in view.items()}


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:10]


def _cache_view(cfg: Config) -> dict[str, Any]:
    """The config's flat values that name a cached result (see ``NEUTRAL_NEW_KEYS``), with the
    retired keys at their cached values (``RETIRED_HASHED``)."""
    flat = cfg.to_flat_dict()
    if not flat["orchestration.asynchronous"]:
        flat |= SYNC_UNREAD_KEYS

    def counts(k: str, v: Any) -> bool:
        if k in STORAGE_KEYS:
            return False
        if k in MODE_KEYS and not flat[MODE_KEYS[k]]:
            return False
        return k not in NEUTRAL_NEW_KEYS or NEUTRAL_NEW_KEYS[k] != v

    view = {k: v for k, v in flat.items() if counts(k, v)}
    if flat.get("evaluator.kind") == "oracle":
        view = {k: v for k, v in view.items() if not k.startswith("evaluator.")}
        view |= {"evaluator.kind": "oracle", **ORACLE_UNREAD_KEYS}
    return view | RETIRED_HASHED


# Settings that shape a result but are no config key (the others reach the config: run_config)
RESULT_SETTINGS: tuple[str, ...] = (
    "budget_s",
    "eval_test",
    "eval_train",
    "sft_episodes_per_device",
    "sft_steps",
)


def run_overrides(settings: LearningBenchSettings, method: str, task_set: str) -> dict[str, Any]:
    """What a run's settings change from the benchmark's defaults (the full preset on the same
    base config): the config keys whose value differs, as ``--set`` names them, and
    the settings of :data:`RESULT_SETTINGS` that differ, as ``bench.<name>``.

    Keys that name no result (:func:`_cache_view`: storage, a new key at its neutral value, a
    mode's key with the mode off) are left out, so two runs with the same cache key have the
    same overrides. Values are JSON's (a tuple is a list).
    """
    base = LearningBenchSettings(config=settings.config)
    mine_cfg, default_cfg = (
        run_config(settings, task_set, method=method),
        run_config(base, task_set, method=method),
    )
    # the hashed value where the key is hashed (a pinned one: ORACLE_UNREAD_KEYS), else the set one
    mine = {**mine_cfg.to_flat_dict(), **_cache_view(mine_cfg)}
    default = {**default_cfg.to_flat_dict(), **_cache_view(default_cfg)}
    named = {*_cache_view(mine_cfg), *_cache_view(default_cfg)}
    # a mode's key with the mode off in this run says nothing about it
    named = {k for k in named if k not in MODE_KEYS or mine.get(MODE_KEYS[k])}
    out = {k: mine.get(k) for k in sorted(named) if mine.get(k) != default.get(k)}
    for name in RESULT_SETTINGS:
        if getattr(settings, name) != getattr(base, name):
            out[f"bench.{name}"] = getattr(settings, name)
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def current_overrides(record: RunRecord, config: str | None = None) -> dict[str, Any] | None:
    """A record's overrides against today's defaults: those of an older defaults generation
    (:data:`~distrl_tasks.bench.records.DEFAULTS_BEFORE`) are re-read as the settings they
    stood for, with the keys that moved since at their values then. None stays None; overrides
    that no longer load (a retired key) are returned as recorded.

    Args:
        record: The run's record (its method, task set, overrides and their generation).
        config: The base YAML config the invocation runs on (None: the built-in defaults).
    """
    if record.overrides is None or record.overrides_generation >= DEFAULTS_GENERATION:
        return record.overrides
    then: dict[str, Any] = {}
    for moved in DEFAULTS_BEFORE[record.overrides_generation :]:
        for key, value in moved.items():
            then.setdefault(key, value)  # the first move after the record's generation
    keys = {k: v for k, v in record.overrides.items() if not k.startswith("bench.")}
    bench = {k.removeprefix("bench."): v for k, v in record.overrides.items() if k not in keys}
    try:
        settings = LearningBenchSettings(config=config, overrides={**then, **keys}, **bench)
        return run_overrides(settings, record.method, record.task_set)
    except (KeyError, TypeError, ValueError):
        return dict(record.overrides)


def sft_overrides(settings: LearningBenchSettings, task_set: str) -> dict[str, Any]:
    """What a task set's SFT policy's settings change from the benchmark's defaults: those of
    :func:`run_overrides` that reach the bootstrap or its evaluations (no ``algorithm.*`` key,
    as in :func:`sft_key`, no budget, no collection mode)."""
    unread = ("bench.budget_s", "orchestration.asynchronous")
    return {
        k: v
        for k, v in run_overrides(settings, "distrl", task_set).items()
        if not k.startswith("algorithm.") and k not in unread
    }


def run_config(
    settings: LearningBenchSettings,
    task_set: str,
    *,
    method: str = "distrl",
    seed: int = 0,
    latency: bool = True,
    dynamics: str | None = None,
) -> Config:
    """The configuration of one run: the base config, the settings' overrides, then what the
    benchmark fixes (method, task set, seed, devices, latency, round sizes, a free port, the
    horizon if set, and the world profile if given: a reference evaluation's)."""
    fixed = {
        **METHODS[method],
        "env.task_set": task_set,
        "sim.seed": seed,
        "sim.port": 0,
        "sim.latency.enabled": latency,
        "sim.latency.time_scale": settings.time_scale,
        "orchestration.workers": 1,
        "orchestration.devices_per_worker": settings.devices,
        "orchestration.episodes_per_device": settings.episodes_per_device,
        "orchestration.eval_tasks": settings.round_eval_tasks,
        "orchestration.threads": settings.threads,
        # every round's policy stays until the run ends (the final one is the last round in
        # budget, not the newest); the run then keeps only it (``run_one``)
        "tracking.keep_checkpoints": 0,
    }
    if settings.horizon is not None:
        fixed["env.horizon_general"] = fixed["env.horizon_webshop"] = settings.horizon
    if settings.collection is not None:
        fixed["orchestration.asynchronous"] = settings.collection == "async"
    if dynamics is not None:
        fixed["sim.dynamics.profile"] = dynamics
    return load_config(settings.config, {**settings.overrides, **fixed})


def new_project(path: Path) -> None:
    """An empty git project (the version stage commits DVC files into it, never elsewhere)."""
    path.mkdir(parents=True, exist_ok=True)
    if not (path / ".git").exists():
        subprocess.run(["git", "init", "-q", str(path)], check=True)


@dataclass
class SFTPolicy:
    """The bootstrap policy of one task set and its evaluations."""

    task_set: str
    workdir: Path
    policy_dir: Path
    steps: int
    success: dict[str, float]  # train, test (final protocol) and round (per-round task list)
    tasks_key: str  # key of the per-round task list (its registered evaluation)


def start_world_seeds(settings: LearningBenchSettings, policy: SFTPolicy) -> tuple[int, ...]:
    """The seeds whose worlds the SFT start is evaluated on: every run's, or seed
    :data:`SFT_CHECK_SEED`'s alone where the policy is known only from its export."""
    return tuple(settings.seeds) if policy.policy_dir.is_dir() else (SFT_CHECK_SEED,)


def adopt_unseeded_evaluations(root: Path) -> int:
    """Give the evaluations a benchmark cached before the evaluate stage's key named the world's
    seed (a name ending in the bare profile, ``-live.json``) the key of the world they ran on;
    returns how many. Idempotent.

    The layout says which world that was: a run's directory (``<task set>-<method>-s<seed>-…``)
    evaluated on its seed's, an SFT policy's directory on seed :data:`SFT_CHECK_SEED`'s, and its
    ``worlds/s<seed>/`` (where other seeds' starts were kept) on that seed's, moved beside the
    SFT's own. Their episodes and drawings stay where they are; the manifest points at them.
    """
    from distrl_tasks.stages.evaluate import EVAL_DIR  # lazy: torch

    sources: list[tuple[Path, Path, int]] = []  # (evaluated in, cached to, seed)
    for directory in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        if directory.name.startswith("sft-"):
            sources.append((directory, directory, SFT_CHECK_SEED))
            for world in sorted((directory / "worlds").glob("s*")):
                if world.name[1:].isdigit():
                    sources.append((world, directory, int(world.name[1:])))
        elif match := re.search(r"-s(\d+)-[0-9a-f]+$", directory.name):
            sources.append((directory, directory, int(match.group(1))))
    adopted = 0
    for source, target, seed in sources:
        for old in sorted((source / EVAL_DIR).glob("eval-v*.json")):
            profile = next(
                (p for p in PROFILES if p != "static" and old.stem.endswith(f"-{p}")), ""
            )
            if not profile:
                continue
            new = target / EVAL_DIR / f"{old.stem}-s{seed}.json"
            if not new.exists():
                manifest = common.located_paths(json.loads(old.read_text()), old.parent)
                manifest["world"] = f"{profile}-s{seed}"
                new.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_json(new, common.portable_paths(manifest, new.parent))
            old.unlink()
            adopted += 1
    return adopted


def base_identity(cfg: Config) -> str:
    """What names the base checkpoint a bootstrap starts from: a hash of its model card (the
    card records the corpus hash, training and skills, so a rebuilt base has another), "" for no
    base. The setting alone ("shipped") would keep a cached SFT policy across a new base."""
    from distrl_tasks.agents.shipped_base import CARD_FILE, base_dir  # lazy: torch + transformers

    directory = base_dir(cfg.agent.base_checkpoint)
    if directory is None:
        return ""
    card = directory / CARD_FILE
    return hashlib.sha256(card.read_bytes()).hexdigest()[:10] if card.is_file() else "no card"


# Config sections the bootstrap never reads: tuning them keeps the cached SFT policy.
SFT_UNREAD_PREFIXES: tuple[str, ...] = ("algorithm.", "orchestration.continuous.")


def sft_key(cfg: Config, settings: LearningBenchSettings) -> str:
    """Cache key of a bootstrap: its config without the sections it never reads (the RL
    algorithm and the continuous learner), the base it starts from and the SFT budget."""
    flat = {k: v for k, v in _cache_view(cfg).items() if not k.startswith(SFT_UNREAD_PREFIXES)}
    budget = (settings.sft_episodes_per_device, settings.sft_steps)
    return _digest([_hashed(flat), *budget, base_identity(cfg)])


def bootstrap_sft(
    settings: LearningBenchSettings,
    task_set: str,
    root: Path,
    *,
    log: Callable[[str], None] = print,
) -> SFTPolicy:
    """Bootstrap (or reuse) the task set's SFT policy and evaluate it on the final protocol."""
    from distrl_tasks.algorithms.sft import SFTSettings  # lazy: torch + transformers
    from distrl_tasks.stages import (  # lazy: torch + mlflow
        bootstrap,
        evaluate,
    )

    cfg = run_config(settings, task_set, latency=False)
    workdir = root / f"sft-{task_set}-{sft_key(cfg, settings)}"
    new_project(workdir)
    ag, started = cfg.agent, time.perf_counter()
    boot = bootstrap.run(
        cfg,
        workdir=workdir,
        episodes_per_device=settings.sft_episodes_per_device,
        sft=SFTSettings(
            steps=settings.sft_steps or ag.sft.steps, batch_size=ag.sft.batch_size, lr=ag.sft.lr
        ),
        eval_splits=("test",),
        eval_tasks=settings.round_eval_tasks,
        threads=settings.threads,
        progress=True,
    )
    policy_dir = workdir / bootstrap.BOOTSTRAP_DIR / "policy"
    success, keys = {}, {}
    for name, split, n in (
        ("round", "test", settings.round_eval_tasks),  # bootstrap's own evaluation: reused
        ("test", "test", settings.eval_test),
        ("train", "train", settings.eval_train),
    ):
        m = evaluate.run(
            cfg, round=0, checkpoint_dir=policy_dir, workdir=workdir, split=split, n_tasks=n
        )
        success[name], keys[name] = float(m["success_rate"]), m["tasks_key"]
    log(
        f"[sft {task_set}] {boot.get('sft_steps')} steps on {boot.get('demos')} demo steps; "
        f"success train {success['train']:.1%}, test {success['test']:.1%} "
        f"({time.perf_counter() - started:.0f} s{', cached' if boot.get('skipped') else ''})"
    )
    steps = int(boot.get("sft_steps") or 0)
    return SFTPolicy(task_set, workdir, policy_dir, steps, success, keys["round"])


def seed_registry(cfg: Config, workdir: Path, sft: SFTPolicy) -> int:
    """Register the SFT checkpoint in ``workdir``'s registry as round 0 / ``sft``, with its
    per-round evaluation, and point ``behavior`` and ``champion`` at it (what bootstrap leaves)."""

    registry = common.registry(cfg, workdir)
    version = registry.register_checkpoint(
        sft.policy_dir,
        round=0,
        algorithm="sft",
        policy_version=0,
        data_version="",
        eval_success_rate=sft.success["round"],
        eval_tasks_key=sft.tasks_key,
        steps=sft.steps,
        tags={"bootstrap_workdir": str(sft.workdir)},
    )
    registry.set_behavior(version)
    registry.promote_if_better(version, sft.success["round"], sft.tasks_key)
    return version


def run_dir(
    settings: LearningBenchSettings,
    method: str,
    task_set: str,
    seed: int,
    sft: SFTPolicy,
    root: Path,
) -> Path:
    """The project directory of one run, named by a hash of everything that shapes its result.

    The hash holds the SFT policy's directory name, not its path, so every machine names a run
    alike (its export, ``bench.export``, carries the name). A run cached under the older name,
    which hashed the absolute path, is renamed to this one.
    """
    cfg = run_config(settings, task_set, method=method, seed=seed)
    evals = (settings.budget_s, settings.eval_test, settings.eval_train)
    view = _hashed(_cache_view(cfg))
    path = root / f"{task_set}-{method}-s{seed}-{_digest([view, *evals, sft.workdir.name])}"
    legacy = root / f"{task_set}-{method}-s{seed}-{_digest([view, *evals, str(sft.workdir)])}"
    if legacy.is_dir() and not path.exists():
        legacy.rename(path)
    return path
