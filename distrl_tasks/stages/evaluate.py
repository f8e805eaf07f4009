"""The evaluate stage: success rate of a policy checkpoint on a fixed task list, oracle-judged.

Protocol (DigiRL's README and paper; docs/architecture.md, "A round, stage by stage"): on the
test split, the FIRST ``orchestration.eval_tasks`` goals of the task file in file order,
duplicates included as listed; each runs exactly once (spread round-robin over up to
``orchestration.eval_devices`` simulated devices, which changes nothing about the verdicts: every
episode starts from a reset device; more devices only fill bigger policy batches) and is judged
by the simulator's oracle. On the train split the papers sample tasks at random; here that is a
seeded sample of ``n`` goals without replacement, so two checkpoints evaluated with the same seed
see the same list.

Decoding is greedy by default: a model comparison then depends only on the weights, not on the
sampling noise of 96 episodes (a 40% policy has a binomial standard deviation of 5 points at
n = 96). ``greedy=False`` samples with a fixed seed instead (the papers' actors sample).

Idempotent: the manifest is keyed by task set, split, task list, a digest of the checkpoint's
files, the decoding, the world (:func:`world_key`: its profile, and the seed, rates and faults it
draws from) and the pointer's elements; a finished evaluation is returned from ``runs/eval/``
without running anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from distrl_tasks.agents.policy import AutoUIPolicy, build_policy
from distrl_tasks.config import Config, SimConfig
from distrl_tasks.data.episode_drawing import save_episode
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.runners.evaluation import (
    EpisodeResult,
    evaluate_on_farm,
    results_as_dicts,
    summarize,
)
from distrl_tasks.runners.policies import ModelPolicy
from distrl_tasks.stages.common import located_paths, portable_paths, stage_run, torch_threads
from distrl_tasks.tasks.taskset import load_goals
from distrl_tasks.tracking.versions import eval_tasks_key

EVAL_DIR = Path("runs") / "eval"
# Part of every cached evaluation's name: bump it when the verdicts of the same checkpoint on
# the same tasks change (2: cut-off outputs became invalid actions; 3: typed-query match added to
# the manifest; 4: the pointer's offered elements joined the key; 5: goal typing counts each
# word), so no stale result is reused.
PROTOCOL = 5
# Decoding budget that holds any canonical AutoUI action including typed text, per tokenizer: a
# byte-level one spends a token per byte (the config's 128 cuts such actions off), the bootstrap's
# SentencePiece vocabulary at most 77 tokens over every General and WebShop expert action. An
# output that loops without closing its action runs to the budget, so it is no larger than that.
MIN_BYTE_ACTION_TOKENS = 256
MIN_SUBWORD_ACTION_TOKENS = 128
# Episodes drawn per outcome (failed, succeeded) of every evaluation, and the frames each keeps
# (its first and last steps): bounded, so an evaluation's images stay a few MB.
DRAWN_PER_OUTCOME = 2
DRAWN_FRAMES = (3, 8)
DRAWN_WIDTH = 300


def decode_budget(policy: AutoUIPolicy) -> int:
    """Tokens one action may take when ``policy`` is evaluated or trained on demonstrations:
    ``agent.max_new_tokens`` (its ``max_new_tokens``), raised to what a whole action needs."""
    kind = getattr(policy.tokenizer, "kind", "subword")  # a VLM's tokenizer is subword
    floor = MIN_BYTE_ACTION_TOKENS if kind == "byte" else MIN_SUBWORD_ACTION_TOKENS
    return max(policy.max_new_tokens, floor)


def select_goals(goals: list[str], split: str, n: int, seed: int = 0) -> list[str]:
    """The evaluated task list: the first ``n`` in file order (test) or a seeded sample (train).

    Raises:
        ValueError: ``n`` < 1 or an unknown split.
    """
    if n < 1:
        raise ValueError(f"number of evaluation tasks must be >= 1, got {n}")
    if split == "test":
        return goals[:n]
    if split == "train":
        rng = random.Random(f"eval-train/{seed}")
        return rng.sample(goals, min(n, len(goals)))
    raise ValueError(f"split must be 'train' or 'test', got {split!r}")


def checkpoint_digest(checkpoint_dir: str | os.PathLike) -> str:
    """Short SHA-256 over the names and bytes of a checkpoint's files (identifies the weights).

    Raises:
        ValueError: the directory is missing or empty.
    """
    root = Path(checkpoint_dir)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    if not files:
        raise ValueError(f"checkpoint directory {str(root)!r} is missing or holds no files")
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def world_key(sim: SimConfig) -> str:
    """The world a farm started from ``sim`` judges in, as an evaluation's cache key names it.

    ``static`` draws nothing, so it is the profile alone; ``live`` and ``hostile`` draw their
    dialogs and moved targets from ``sim.seed``, and enabled faults draw from it too, so those
    add the seed and, where set, a digest of the rate overrides and the faults: the same
    checkpoint on another seed's world is another evaluation (``live-s1``, ``live-s0-3f2a9c01``).
    """
    rates = sim.dynamics.rates.overrides() if sim.dynamics.profile != "static" else {}
    faults = asdict(sim.faults) if sim.faults.enabled else {}
    if sim.dynamics.profile == "static" and not faults:
        return "static"
    key = f"{sim.dynamics.profile}-s{sim.seed}"
    if rates or faults:
        drawn = json.dumps({"rates": rates, "faults": faults}, sort_keys=True)
        key += "-" + hashlib.sha256(drawn.encode()).hexdigest()[:8]
    return key


def manifest_path(
    workdir: str | os.PathLike, task_set: str, split: str, tasks_key: str, digest: str, mode: str
) -> Path:
    name = f"eval-v{PROTOCOL}-{task_set}-{split}-{tasks_key}-{digest}-{mode}.json"
    return Path(workdir) / EVAL_DIR / name


def run(
    cfg: Config,
    *,
    round: int,
    checkpoint_dir: str | os.PathLike,
    workdir: str | os.PathLike = ".",
    split: str = "test",
    n_tasks: int | None = None,
    task_set: str | None = None,
    greedy: bool = True,
    seed: int = 0,
    adb_address: tuple[str, int] | None = None,
    devices: int | None = None,
    progress: bool = False,
    track: bool = False,
) -> dict[str, Any]:
    """Evaluate the checkpoint at ``checkpoint_dir``; returns (and stores) a small manifest.

    Args:
        cfg: configuration (``orchestration.eval_tasks``, env, agent, sim).
        round: training round of the checkpoint (recorded in the manifest).
        checkpoint_dir: an ``AutoUIPolicy.save`` directory.
        workdir: the manifest goes to ``<workdir>/runs/eval/``.
        split: ``test`` (first N in file order) or ``train`` (seeded random N).
        n_tasks: N (default ``orchestration.eval_tasks``).
        task_set: default ``env.task_set``.
        greedy: argmax decoding (default) or sampling seeded with ``seed``.
        seed: seeds the train-split sample and sampled decoding.
        adb_address: a running simulator farm to use instead of starting one.
        devices: farm size when one is started (default ``orchestration.eval_devices``).
        progress: show a progress bar.
        track: log the evaluation (its metrics and the drawn episodes, as images under
            ``episodes/``) to an MLflow run nested under round ``round``'s run; a reused
            evaluation was logged when it ran.

    Returns:
        ``success_rate``, ``mean_steps``, ``invalid_rate`` (rejected actions / steps),
        ``episodes``, ``errors``, ``tasks_key``, ``per_family`` ({family: episodes,
        success_rate, mean_steps, invalid_rate}), ``round``, ``split``, ``task_set``,
        ``decoding``, ``dynamics`` (the farm's profile) and ``world`` (:func:`world_key`; both
        ``external`` with ``adb_address``), ``checkpoint_digest``, ``episodes_file``,
        ``episode_images`` (a few failed and succeeded episodes drawn with their actions, PNG),
        ``wall_s`` and ``reused``.
    """
    task_set = task_set or cfg.env.task_set
    n = cfg.orchestration.eval_tasks if n_tasks is None else n_tasks
    goals = select_goals(load_goals(task_set, split, cfg.env.data_dir), split, n, seed)
    key = eval_tasks_key(goals)
    digest = checkpoint_digest(checkpoint_dir)
    mode = "greedy" if greedy else f"sample{seed}"
    # the live world changes the verdicts: a result is reused only on the same world
    dynamics = cfg.sim.dynamics.profile if adb_address is None else "external"
    world = world_key(cfg.sim) if adb_address is None else "external"
    # so does the pointer: the same weights act otherwise when the screens offer elements
    mode += f"-pointer{cfg.agent.tap_elements}" if cfg.agent.tap_elements else ""
    path = manifest_path(workdir, task_set, split, key, digest, f"{mode}-{world}")
    if path.exists():
        return {**located_paths(json.loads(path.read_text()), path.parent), "reused": True}
    policy = build_policy(cfg.agent, checkpoint_dir=checkpoint_dir, seed=seed)
    policy.model.eval()
    policy.max_new_tokens = decode_budget(policy)
    start = time.perf_counter()
    rows: dict[int, list[dict[str, Any]]] = {}
    with torch_threads(cfg.orchestration.threads) as threads:  # an Airflow/DVC task's too
        results = evaluate_on_farm(
            cfg,
            ModelPolicy(policy, greedy=greedy, seed=seed),
            goals,
            task_set=task_set,
            split=split,
            devices=devices,
            adb_address=adb_address,
            progress=progress,
            rows_out=rows,
        )
    wall = time.perf_counter() - start
    path.parent.mkdir(parents=True, exist_ok=True)
    episodes_file = path.with_name(path.stem + "-episodes.json")
    atomic_write_json(episodes_file, results_as_dicts(results))
    images = draw_examples(results, rows, path.with_name(path.stem + "-drawn"))
    manifest = {
        **summarize(results),
        "tasks_key": key,
        "round": round,
        "split": split,
        "task_set": task_set,
        "decoding": mode,
        "dynamics": dynamics,
        "world": world,
        "checkpoint_digest": digest,
        "episodes_file": str(episodes_file),
        "episode_images": [str(p) for p in images],
        "wall_s": wall,
        "torch_threads": threads,
    }
    if track:
        with stage_run(cfg, workdir, round, "evaluate") as run_:
            run_.log_metrics(
                {"eval/success_rate": manifest["success_rate"], "eval/wall_s": wall}, step=round
            )
            if images:
                run_.log_artifacts(images[0].parent, "episodes")
    atomic_write_json(path, portable_paths(manifest, path.parent))
    return {**manifest, "reused": False}


def draw_examples(
    results: list[EpisodeResult],
    rows: dict[int, list[dict[str, Any]]],
    out_dir: Path,
    per_outcome: int = DRAWN_PER_OUTCOME,
) -> list[Path]:
    """The first ``per_outcome`` failed and succeeded episodes (goal order) drawn as PNG sheets
    ``<out_dir>/{failed,succeeded}-<index>.png``; episodes a lost device never played are skipped.
    """
    first, last = DRAWN_FRAMES
    shutil.rmtree(out_dir, ignore_errors=True)  # what a crashed attempt drew is not this one's
    written = []
    for outcome, wanted in (("failed", False), ("succeeded", True)):
        chosen = [r for r in results if r.success == wanted and rows.get(r.index)][:per_outcome]
        for r in chosen:
            steps = rows[r.index]
            if len(steps) > first + last:  # the start and the end say most about an episode
                steps = steps[:first] + steps[-last:]
            title = f"{outcome.upper()} | {r.goal} | {r.steps} steps, ended: {r.reason}"
            path = out_dir / f"{outcome}-{r.index:03d}.png"
            written.append(
                save_episode(steps, path, success=r.success, width=DRAWN_WIDTH, title=title)
            )
    return written
