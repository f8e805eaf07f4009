"""`distrl eval`: any policy on any goals, oracle-judged (contract: docs/architecture.md).

A policy reference (REF) is a checkpoint directory, ``expert`` (the scripted expert, no
mistakes), ``random``, or a registry alias or version (``champion``, ``behavior``, ``3``). Goals
come from a file (one per line) or a task set's split. Each goal runs once on the simulated farm
(greedy decoding for models), and the result is a table (success, mean steps, invalid rate,
typed-query match) plus, on request, the JSON the contract specifies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, ConfigError
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.runners.evaluation import (
    EpisodeResult,
    evaluate_on_farm,
    query_steps,
    summarize,
)
from distrl_tasks.runners.policies import ModelPolicy, RandomPolicy, ScriptedPolicy
from distrl_tasks.stages.common import checkout, registry
from distrl_tasks.stages.evaluate import decode_budget
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GENERAL, GoalParseError
from distrl_tasks.tasks.taskset import load_goals
from distrl_tasks.tracking.stores import local_store_file


def read_goal_file(path: str | os.PathLike) -> list[str]:
    """Goals of a file, one per line (blank lines and ``#`` comments skipped).

    Raises:
        FileNotFoundError / ValueError: a missing file, no goals, or a goal no family parses
            (the message names the file and line).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--goals: goal file {p} not found")
    goals = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            parse_goal(text)
        except GoalParseError as exc:
            raise ValueError(f"{p}:{n}: {exc}") from exc
        goals.append(text)
    if not goals:
        raise ValueError(f"--goals: {p} holds no goals")
    return goals


def resolve_policy(cfg: Config, ref: str, workdir: str | os.PathLike, seed: int) -> object:
    """The collect-API policy REF names (module docstring).

    Raises:
        ValueError: REF is none of the accepted kinds (the message lists them).
    """

    if ref == "expert":
        return ScriptedPolicy(mistake_rate=0.0, seed=seed)
    if ref == "random":
        return RandomPolicy(seed=seed)
    path = Path(ref)
    if path.is_dir():
        policy = build_policy(cfg.agent, checkpoint_dir=path, seed=seed)
    else:
        _check_registry_ref(cfg, ref, workdir)  # before anything is created in workdir
        with _registry_checkpoint(cfg, ref, workdir) as path:
            policy = build_policy(cfg.agent, checkpoint_dir=path, seed=seed)
    policy.model.eval()
    policy.max_new_tokens = decode_budget(policy)
    return ModelPolicy(policy, greedy=True, seed=seed)


def _check_registry_ref(cfg: Config, ref: str, workdir: str | os.PathLike) -> None:
    """Refuse a REF that can only be a typo before the registry (and its store) is opened.

    Raises:
        ValueError: REF looks like a path that does not exist, ``workdir`` does not exist, or
            the local registry store it would be looked up in was never created.
    """
    kinds = "a checkpoint directory, 'expert', 'random', a registry version or an alias"
    if os.sep in ref or ref.startswith("."):
        raise ValueError(f"--policy {ref!r}: no such checkpoint directory (expected {kinds})")
    if not Path(workdir).is_dir():
        raise ValueError(f"--workdir {str(workdir)!r}: no such directory")
    store = local_store_file(cfg.tracking.tracking_uri, workdir)
    if store is not None and not store.is_file():
        raise ValueError(
            f"--policy {ref!r} is not {kinds} of an existing registry: there is no registry "
            f"at {store} (run `distrl bootstrap` or `distrl round` with this --workdir first)"
        )


def _registry_checkpoint(
    cfg: Config, ref: str, workdir: str | os.PathLike
) -> contextlib.AbstractContextManager[Path]:
    """The registry version or alias REF names, checked out (held while the block loads it)."""

    reg = registry(cfg, workdir)
    if ref.isdigit():
        version = int(ref)
    else:
        info = reg.alias_version(ref)
        if info is None:
            raise ValueError(
                f"--policy {ref!r} is not a checkpoint directory, 'expert', 'random', a registry "
                f"version or an alias of the registry {cfg.tracking.model_name!r}"
            )
        version = info.version
    return checkout(cfg, workdir, reg, version)


def episode_rows(results: Sequence[EpisodeResult]) -> list[dict[str, Any]]:
    """Per-episode records of the JSON contract; ``typed_query_match`` is the share of the
    episode's searching TYPE steps (:func:`query_steps`) that typed the goal's query (0 when it
    typed nothing), null where the goal names no query; ``typed`` is what each TYPE step typed
    and ``ended`` why the episode stopped, so a miss can be read without rerunning it."""
    rows = []
    for r in results:
        match = None
        if r.query:
            hits = query_steps(r)
            match = sum(hits) / len(hits) if hits else 0.0
        rows.append(
            {
                "goal": r.goal,
                "success": r.success,
                "steps": r.steps,
                "invalid_steps": r.invalid_steps,
                "typed_query_match": match,
                "typed": list(r.typed),
                "ended": r.reason,
            }
        )
    return rows


def run(
    cfg: Config,
    *,
    policy: str,
    goals_file: str | None = None,
    task_set: str | None = None,
    split: str = "test",
    limit: int | None = None,
    devices: int | None = None,
    workdir: str | os.PathLike = ".",
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Evaluate ``policy`` (REF) on the goals; returns the contract's JSON object plus a summary.

    Raises:
        ConfigError: a non-simulated device kind. (The live world is ``sim.dynamics.profile``:
            ``distrl eval --dynamics P`` sets it where the config is loaded.)
        ValueError: bad goals, limit or REF.
    """
    dynamics = cfg.sim.dynamics.profile
    if cfg.env.device_kind != "sim":
        raise ConfigError(
            f"env.device_kind {cfg.env.device_kind!r}: distrl eval judges episodes with the "
            "simulator's oracle, so it runs on simulated devices only"
        )
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    if goals_file:
        goals = read_goal_file(goals_file)
    else:
        goals = load_goals(task_set or cfg.env.task_set, split, cfg.env.data_dir)
    goals = goals[:limit] if limit else goals
    horizon_set = {parse_goal(g).task_set for g in goals}
    if len(horizon_set) > 1:
        raise ValueError("the goals mix General and WebShop tasks (different horizons): split them")
    pol = resolve_policy(cfg, policy, workdir, seed)
    results = evaluate_on_farm(
        cfg,
        pol,
        goals,
        task_set=horizon_set.pop() if horizon_set else GENERAL,
        split=split if not goals_file else "goals",
        devices=devices,
        progress=progress,
        capture_ui_xml=isinstance(pol, ScriptedPolicy),
    )
    summary = summarize(results)
    return {
        "policy": policy,
        "dynamics": dynamics,
        "success_rate": summary["success_rate"],
        "mean_steps": summary["mean_steps"],
        "invalid_rate": summary["invalid_rate"],
        "errors": summary["errors"],
        "type_steps": summary["type_steps"],
        "typed_query_match": summary["typed_query_match"],
        "per_family": summary["per_family"],
        "episodes": episode_rows(results),
    }


def table(result: dict[str, Any]) -> str:
    """The printed table: one row per family, then all goals."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    head = (
        f"{'family':<20} {'episodes':>8} {'success':>8} {'steps':>6} {'invalid':>8} {'typed=q':>8}"
    )
    lines = [f"policy {result['policy']}, dynamics {result['dynamics']}", head]
    rows = [*sorted(result["per_family"].items()), ("all", result)]
    for name, s in rows:
        n = s["episodes"] if isinstance(s["episodes"], int) else len(s["episodes"])
        lines.append(
            f"{name:<20} {n:>8} {pct(s['success_rate']):>8} {s['mean_steps']:>6.2f} "
            f"{pct(s['invalid_rate']):>8} {pct(s['typed_query_match']):>8}"
        )
    if result.get("errors"):
        lines.append(f"{result['errors']} episodes ended in a device error (counted as failures)")
    return "\n".join(lines)


def write_json(result: dict[str, Any], path: str | os.PathLike) -> None:
    """The contract's JSON, written atomically."""
    atomic_write_json(path, result)
