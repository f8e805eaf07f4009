"""The pretrain stage: our AutoUI-Base, behaviour-cloned on a large generated demonstration corpus.

AutoUI-Base is a T5 cloned on the large AitW corpus; it already copies a goal's query into the
TYPE field, and RL then improves its decisions. No model hub is reachable here, so :func:`run`
builds the equivalent for the tiny policy:

1. writes family-balanced training goals of both task sets
   (:func:`~distrl_tasks.tasks.generators.balanced_corpus`: web searches a minority, every
   family with its share, only the *text* of test goals kept out) and held-out goals of every
   family, as goal files;
2. records scripted-expert demonstrations on them in the ``sim.dynamics.bootstrap_profile`` world
   with the expert's mistake-and-recovery rate (the collect stage, ``policy="scripted"``) as
   Parquet shards, plus mistake-free demonstrations on the held-out goals;
3. fits a SentencePiece vocabulary on the corpus and behaviour-clones a fresh tiny policy (copy
   head with match bias, :mod:`distrl_tasks.agents.autoui`) with the SFT loop until the held-out
   demonstrations' loss plateaus (``agent.pretrain.eval_every`` / ``patience``; the
   best measured weights are kept);
   With ``agent.pointer``, the tap-target pointer's head is then fitted onto the finished model
   (:func:`fit_pointer`: the head alone, to the plateau of its held-out cross-entropy), so the
   token model is the one a base without the pointer gets; :func:`run_onto` fits it onto an
   existing base (``distrl pretrain --onto``);
4. measures it on every held-out goal (success overall and per family, typed-query match) and
   saves the checkpoint with a model card (:mod:`distrl_tasks.agents.shipped_base`) to the output
   directory, atomically.

Idempotent and resumable: each step reuses its finished output (goal files, collect manifests,
the final checkpoint), and training saves its whole state under ``runs/pretrain/sft_state`` at
every held-out measurement, so a run of hours goes in parts (``agent.pretrain.time_budget_s``
per part, or a kill) and the same command goes on from the last measurement.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.shipped_base import CARD_FILE, REBUILD, card_model_config, load_base
from distrl_tasks.agents.tokenizer import SentencePieceTokenizer
from distrl_tasks.algorithms.sft import (
    DEMO_COLUMNS,
    Demo,
    SFTResult,
    SFTSettings,
    demos_from_rows,
    train_sft,
    train_tokenizer,
)
from distrl_tasks.config import Config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.protocol.files import atomic_directory, atomic_write_text
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.stages import collect, evaluate
from distrl_tasks.stages.common import torch_threads, tracker
from distrl_tasks.tasks.generators import balanced_corpus
from distrl_tasks.tasks.task import GENERAL, TASK_SETS, WEBSHOP
from distrl_tasks.tasks.taskset import load_goals

PRETRAIN_DIR = Path("runs") / "pretrain"
SKILL_KEYS = ("success_rate", "mean_steps", "invalid_rate", "episodes", "type_steps")
SKILL_KEYS += ("typed_query_match",)


def _write_goals(path: Path, goals: list[str]) -> None:
    if path.is_file() and path.read_text().splitlines() == goals:
        return
    atomic_write_text(path, "\n".join(goals) + "\n")


def write_goal_files(cfg: Config, work: Path, seed: int) -> dict[str, dict[str, Any]]:
    """Family-balanced training goals and held-out goals per task set, as ``<set>_<split>.txt``
    files under ``work/goals`` (the layout ``env.data_dir`` reads). Returns, per task set, the
    counts per family (:func:`~distrl_tasks.tasks.generators.balanced_corpus`).

    The AitW train file's goals join the generated ones; only the *text* of a test goal is kept
    out (the AitW General train file holds every test goal verbatim), and the held-out goals,
    which measure the base, are texts in neither the training goals nor the test files.
    """
    pc = cfg.agent
    sizes = {GENERAL: pc.pretrain.goals, WEBSHOP: pc.pretrain.webshop_goals}
    counts: dict[str, dict[str, Any]] = {}
    for i, task_set in enumerate(TASK_SETS):
        corpus = balanced_corpus(
            task_set,
            sizes[task_set],
            pc.pretrain.heldout_per_family,
            seed=seed * 10 + i,
            search_share=pc.pretrain.search_share,
            extra=load_goals(task_set, "train"),
        )
        _write_goals(work / "goals" / f"{task_set}_train.txt", corpus.train)
        _write_goals(work / "goals" / f"{task_set}_test.txt", corpus.heldout)
        counts[task_set] = {
            "train": len(corpus.train),
            "heldout": len(corpus.heldout),
            "families": corpus.families,
        }
    return counts


def record_demos(
    cfg: Config, work: Path, progress: bool, *, heldout: bool = False
) -> tuple[list[Demo], dict[str, Any]]:
    """Expert demonstrations on the training goals of both task sets (collect stage), or, with
    ``heldout``, mistake-free ones on the held-out goals (the loss that decides the plateau);
    a corpus already there is reused only if it was recorded under the same world, mistake rate
    and episodes (the collect stage's :func:`~distrl_tasks.stages.collect.recorded_under`)."""
    pc = cfg.agent
    stats: dict[str, Any] = {}
    demos: list[Demo] = []
    for task_set in TASK_SETS:
        demo_cfg = cfg.in_world(cfg.sim.dynamics.bootstrap_profile)  # the demonstrations' world
        set_cfg = dataclasses.replace(
            demo_cfg,
            env=dataclasses.replace(cfg.env, task_set=task_set, data_dir=str(work / "goals")),
            sim=dataclasses.replace(
                demo_cfg.sim, expert_mistake_rate=0.0 if heldout else pc.pretrain.mistake_rate
            ),
        )
        episodes = pc.pretrain.episodes_per_device
        if heldout:
            episodes = pc.pretrain.heldout_episodes_per_device
        elif task_set == WEBSHOP:
            episodes = pc.pretrain.webshop_episodes_per_device
        out_dir = work / ("demos_heldout" if heldout else "demos") / task_set
        out = collect.run(
            set_cfg,
            collect.CollectRequest(
                round=0,
                policy="scripted",
                out_dir=out_dir,
                mode="async",
                episodes_per_device=episodes,
                split="test" if heldout else "train",
                progress=progress,
            ),
        )
        table = read_shards(out_dir).select(list(DEMO_COLUMNS))
        set_demos = demos_from_rows(
            table.to_pylist(),
            unfinished=pc.pretrain.unfinished_demos and not heldout,
            history=cfg.env.prompt_history,
        )
        demos += set_demos
        stats[task_set] = {
            "trajectories": out["trajectories"],
            "expert_success_rate": out["success_rate"],
            "examples": len(set_demos),
            "shards": sorted(Path(p).name for p in out["shards"]),
        }
    return demos, stats


def corpus_sha256(work: Path) -> str:
    """SHA-256 over the names and bytes of every demonstration shard (identifies the corpus)."""
    h = hashlib.sha256()
    for p in sorted((work / "demos").rglob("*.parquet")):
        h.update(p.relative_to(work).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def run(
    cfg: Config,
    *,
    workdir: str | os.PathLike = ".",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    command: str = "",
    progress: bool = False,
) -> dict[str, Any]:
    """Build the base policy; returns its model card (also written next to the weights).

    Args:
        cfg: configuration (``agent.pretrain``, sim farm, image encoder, tracking).
        workdir: project directory (goals, demos and scratch under ``runs/pretrain``).
        out: checkpoint directory to write (default ``runs/pretrain/base``); replaced atomically.
        seed: seeds the goals, the model initialisation and the batch order.
        command: the command line, recorded in the card.
        progress: show progress bars.
    """
    work = Path(workdir) / PRETRAIN_DIR
    final = Path(out) if out is not None else work / "base"
    started = time.perf_counter()
    pc = cfg.agent
    goal_counts = write_goal_files(cfg, work, seed)
    demos, demo_stats = record_demos(cfg, work, progress)
    if not demos:
        raise RuntimeError("pretrain: the expert produced no successful demonstration to clone")
    heldout, _ = record_demos(cfg, work, progress, heldout=True)
    goals_text = [line for f in sorted((work / "goals").glob("*_train.txt")) for line in
                  f.read_text().splitlines()]  # fmt: skip
    texts = [d.prompt for d in demos] + [d.target for d in demos] + goals_text
    tok = SentencePieceTokenizer(
        train_tokenizer(texts, work / "tokenizer", vocab_size=pc.sft.vocab_size)
    )
    with torch_threads(cfg.agent.pretrain.threads) as used_threads:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoUIModel(tiny_t5_config(tok.size), image_feature_dim(pc))
        policy = AutoUIPolicy(model, tok, max_prompt_tokens=pc.max_prompt_tokens)
        policy.max_new_tokens = evaluate.MIN_SUBWORD_ACTION_TOKENS
        settings = _settings(cfg)
        with progress_bar(
            total=settings.steps, desc="pretrain", unit="step", enabled=progress
        ) as bar:

            def show(step: int, loss: float, _elapsed: float) -> None:
                bar.update(step - bar.n)
                bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

            result = train_sft(
                policy,
                demos,
                settings,
                seed=seed,
                callback=show,
                heldout=heldout,
                state_dir=work / "sft_state",
            )
        pointing = None
        if pc.points and result.stopped != "time_budget":
            pointing = fit_pointer(cfg, policy, demos, heldout, work, seed, progress)
    for part in (result, pointing):
        if part is not None and part.stopped == "time_budget":
            return _part_ended(cfg, part)
    with atomic_directory(final) as tmp:
        policy.save(tmp, metadata={"algorithm": "pretrain", "round": -1, "steps": result.steps})
        skills = measure_skills(cfg, tmp, work, progress)
        card = {
            "name": "distrl-tiny-base",
            "command": command,
            "seed": seed,
            "corpus": {
                "goals": goal_counts,
                "demonstrations": demo_stats,
                "examples": len(demos),
                "sha256": corpus_sha256(work),
                "dynamics": cfg.sim.dynamics.bootstrap_profile,
                "mistake_rate": pc.pretrain.mistake_rate,
                "unfinished_demos": pc.pretrain.unfinished_demos,
                "search_share": pc.pretrain.search_share,
            },
            "training": {
                "steps": result.steps,
                "batch_size": settings.batch_size,
                "lr": settings.lr,
                "examples_seen": result.examples,
                "final_loss": result.losses[-1] if result.losses else None,
                "heldout_loss": result.heldout,
                "best_step": result.best_step,
                "rate_cuts_at": result.decays,
                "stopped": result.stopped,
                "parts": result.parts,
                "train_wall_s": result.wall_s,
                "threads": used_threads,
            },
            **({"pointer": _pointer_card(pointing, work)} if pointing is not None else {}),
            "skills": skills,
            "model_config": card_model_config(model.config),
            "parameters": model.num_parameters(),
            "wall_s": time.perf_counter() - started,
            "rebuild": REBUILD,
        }
        (tmp / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
    _log(cfg, workdir, card, final)
    return {**card, "checkpoint_dir": str(final)}


def _settings(cfg: Config) -> SFTSettings:
    """The pretraining's SFT settings (the token model's and the pointer head's)."""
    pre = cfg.agent.pretrain
    return SFTSettings(
        steps=pre.steps,
        batch_size=pre.batch_size,
        lr=pre.lr,
        warmup_steps=min(100, pre.steps // 10),
        time_budget_s=pre.time_budget_s or None,
        eval_every=pre.eval_every,
        patience=pre.patience,
    )


def _part_ended(cfg: Config, result: SFTResult) -> dict[str, Any]:
    print(
        f"pretrain: part {result.parts} ended after {cfg.agent.pretrain.time_budget_s:.0f} s at "
        f"step {result.steps} (held-out loss {_last_heldout(result)}); run the same command "
        "again to go on from there"
    )
    return {"stopped": "time_budget", "steps": result.steps, "parts": result.parts}


def fit_pointer(
    cfg: Config,
    policy: AutoUIPolicy,
    demos: list[Demo],
    heldout: list[Demo],
    work: Path,
    seed: int,
    progress: bool,
) -> SFTResult:
    """Give ``policy``'s model a new pointer head and fit it alone on the corpus's demonstrated
    taps and swipes (``train_sft(pointer_only=True)``, the same plateau rule and settings as
    the token model; state under ``runs/pretrain/pointer_state``, resumable). Every other
    weight stays as it was: pointing is added to a base, not traded against its tokens."""
    if not any(d.elements for d in demos):
        raise RuntimeError(
            f"pretrain: the demonstrations under {work} list no elements; they were recorded "
            "without agent.pointer (remove runs/pretrain/demos* to record them again)"
        )
    if policy.model.pointer_head is None:
        policy.model.add_pointer(seed)
    settings = _settings(cfg)
    with progress_bar(total=settings.steps, desc="pointer", unit="step", enabled=progress) as bar:
        return train_sft(
            policy,
            demos,
            settings,
            seed=seed,
            callback=lambda step, _loss, _t: bar.update(step - bar.n),
            heldout=heldout,
            state_dir=work / "pointer_state",
            pointer_only=True,
        )


def _pointer_card(result: SFTResult, work: Path) -> dict[str, Any]:
    return {
        "fitted": "the head alone, onto the finished model (pretrain.fit_pointer)",
        "corpus_sha256": corpus_sha256(work),
        "steps": result.steps,
        "examples_seen": result.examples,
        "heldout_loss": result.heldout,  # the pointer's cross-entropy on held-out demos
        "best_step": result.best_step,
        "rate_cuts_at": result.decays,
        "stopped": result.stopped,
        "train_wall_s": result.wall_s,
    }


def run_onto(
    cfg: Config,
    base: str | os.PathLike,
    *,
    workdir: str | os.PathLike = ".",
    out: str | os.PathLike | None = None,
    seed: int = 0,
    command: str = "",
    progress: bool = False,
) -> dict[str, Any]:
    """Fit the tap-target pointer onto an existing base (``distrl pretrain --onto``): the same
    corpus as :func:`run` (recorded or reused under ``runs/pretrain``), the base's weights and
    tokenizer unchanged, the head fitted by :func:`fit_pointer`; writes the base plus the head
    with the base's card, its ``pointer`` section and skills measured with the pointer and
    without it (``skills_without_pointer``, the same weights). A base that carries a head
    gets a new one in its place (``pointer.replaced_head`` in the card), so a head whose inputs
    changed is refitted onto the same token model. Returns the card.

    Raises:
        ValueError: The pointer is off (``AgentConfig.points``).
        BaseCheckpointError: the base is missing, corrupt or stale.
    """
    if not cfg.agent.points:
        raise ValueError(
            "pretrain --onto fits the tap-target pointer: it needs agent.pointer: true on an "
            "AutoUI model (agent.model: tiny or autoui-base) with agent.constrained_decoding: true"
        )
    loaded = load_base(str(base))
    if loaded is None:
        raise ValueError("pretrain --onto needs a base checkpoint (a directory or 'shipped')")
    model, tokenizer, base_card = loaded
    replaced_head = model.pointer_head is not None
    model.pointer_head = None  # fit_pointer gives it a fresh one
    work = Path(workdir) / PRETRAIN_DIR
    final = Path(out) if out is not None else work / "base"
    started = time.perf_counter()
    write_goal_files(cfg, work, seed)
    demos, _ = record_demos(cfg, work, progress)
    heldout, _ = record_demos(cfg, work, progress, heldout=True)
    policy = AutoUIPolicy(model, tokenizer, max_prompt_tokens=cfg.agent.max_prompt_tokens)
    with torch_threads(cfg.agent.pretrain.threads):
        pointing = fit_pointer(cfg, policy, demos, heldout, work, seed, progress)
    if pointing.stopped == "time_budget":
        return _part_ended(cfg, pointing)
    without = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, pointer=False))
    metadata = {"algorithm": "pretrain", "round": -1, "steps": base_card["training"]["steps"]}
    with atomic_directory(final) as tmp:
        policy.save(tmp, metadata=metadata)
        card = {
            **base_card,
            "pointer": {
                **_pointer_card(pointing, work),
                "corpus_dynamics": cfg.sim.dynamics.bootstrap_profile,  # its corpus's world
                "onto": str(base),
                "replaced_head": replaced_head,
                "command": command,
            },
            "skills": measure_skills(cfg, tmp, work, progress),
            # the same weights with the pointer off, measured by today's code (not the old card's)
            "skills_without_pointer": measure_skills(without, tmp, work, progress),
            "model_config": card_model_config(model.config),
            "parameters": model.num_parameters(),
            "pointer_wall_s": time.perf_counter() - started,
        }
        (tmp / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
    _log(cfg, workdir, card, final)
    return {**card, "checkpoint_dir": str(final)}


def measure_skills(cfg: Config, checkpoint: Path, work: Path, progress: bool) -> dict[str, Any]:
    """Greedy success and typed-query match on every held-out goal of each task set, in the
    static world, overall and per family (``per_family``: success rate, episodes, typed-query
    match: None for families whose goals name no query)."""
    out: dict[str, Any] = {}
    for task_set in TASK_SETS:
        data_dir = str(work / "goals")
        set_cfg = dataclasses.replace(
            cfg.in_world("static"),  # skills of the static world
            env=dataclasses.replace(cfg.env, task_set=task_set, data_dir=data_dir),
        )
        res = evaluate.run(
            set_cfg,
            round=-1,
            checkpoint_dir=checkpoint,
            workdir=work,
            split="test",
            n_tasks=len(load_goals(task_set, "test", data_dir)),
            task_set=task_set,
            progress=progress,
        )
        skill = {k: res[k] for k in SKILL_KEYS if k in res}
        skill["per_family"] = {
            family: {k: f[k] for k in ("success_rate", "episodes", "typed_query_match")}
            for family, f in res["per_family"].items()
        }
        out[f"heldout_{task_set}"] = skill
    return out


def _last_heldout(result: Any) -> str:
    return f"{result.heldout[-1][1]:.4f}" if result.heldout else "not measured yet"


def _log(cfg: Config, workdir: str | os.PathLike, card: dict[str, Any], final: Path) -> None:
    """The card as an MLflow run (params, metrics, the card itself)."""
    track = tracker(cfg, workdir)
    run = track.start_run("pretrain", tags={"distrl.kind": "pretrain", "seed": card["seed"]})
    try:
        run.log_params(cfg)
        metrics = {
            "data/corpus_examples": card["corpus"]["examples"],
            "train/steps": card["training"]["steps"],
            "perf/train_wall_s": card["training"]["train_wall_s"],
        }
        for name, skill in card["skills"].items():
            for key, value in skill.items():
                if isinstance(value, int | float):
                    metrics[f"eval/{name}_{key}"] = float(value)
            for family, stats in skill.get("per_family", {}).items():
                metrics[f"eval/{name}_family_{family}"] = float(stats["success_rate"])
                if stats.get("typed_query_match") is not None:
                    metrics[f"eval/{name}_typed_{family}"] = float(stats["typed_query_match"])
        run.log_metrics(metrics)
        run.log_dict(card, CARD_FILE)
        run.set_tags({"checkpoint_dir": str(final)})
    finally:
        run.end()
