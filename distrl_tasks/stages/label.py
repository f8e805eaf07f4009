"""The label stage: every trajectory of a round gets a reward, or stays honestly unlabeled.

On the simulator the oracle (``simctl task check``) already labeled each episode when it ended,
so labeling keeps those rows. With ``evaluator.kind: gemini`` the final screenshot(s) of every
trajectory that is still unlabeled are judged by Gemini; a verdict that cannot be obtained keeps
the trajectory ``unlabeled`` (retried on the next run of this stage), never a silent failure.
Truncated episodes (device errors) stay unlabeled. Rewards are sparse (1 on the last step of a
success), and ``mc_return``/``trajectory_reward`` are computed here, at labeling time.

Raw shards (``<data.root>/raw``) are never modified; labeled copies go to ``<data.root>/labeled``
under the same names, which is what replay reads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from distrl_tasks.config import Config
from distrl_tasks.data.schema import feature_dim_of, table_from_rows
from distrl_tasks.data.shards import read_verified, verify_shards, write_shard
from distrl_tasks.data.trajectories import discounted_returns, group_trajectories, observations
from distrl_tasks.evaluators.agreement import AgreementReport, agreement
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.protocol.ui_dump import elements_from_rows, pointed_element
from distrl_tasks.runners.exploration import exploration_metrics, goal_family
from distrl_tasks.stages import common

TRUNCATED_PREFIX = "truncated"


def _needs_label(traj: pa.Table) -> bool:
    last = traj.slice(traj.num_rows - 1).to_pylist()[0]
    evaluator = last.get("evaluator") or ""
    return last["label_status"] != "labeled" and not evaluator.startswith(TRUNCATED_PREFIX)


def _relabel(traj: pa.Table, success: bool, evaluator: str, gamma: float) -> list[dict]:
    rows = traj.to_pylist()
    rewards = [0.0] * len(rows)
    if success:
        rewards[-1] = 1.0
    returns = discounted_returns(rewards, gamma)
    for row, r, g in zip(rows, rewards, returns, strict=True):
        row.update(
            reward=r,
            mc_return=float(g),
            trajectory_reward=float(sum(rewards)),
            evaluator=evaluator,
            label_status="labeled",
        )
    return rows


def pointer_fallbacks(table: pa.Table) -> int:
    """Steps of ``table`` that offered the pointer no element (``elements`` null or empty: the
    dump failed, was empty or unreadable), where a pointer policy had to write coordinates.
    Meaningful only for steps collected with ``agent.pointer`` on."""
    if "elements" not in table.column_names:
        return table.num_rows
    lengths = pc.list_value_length(table.column("elements")).fill_null(0)
    return int(pc.sum(pc.equal(lengths, 0)).as_py() or 0)


def pointed_taps(table: pa.Table) -> tuple[int, int, set[str]]:
    """Taps of ``table`` (DUAL_POINT steps that listed elements), those that tap a listed
    element's centre (what pointing writes), and the trajectories with at least one of them:
    the episodes that explored through the pointer."""
    if "elements" not in table.column_names:
        return 0, 0, set()
    taps = hits = 0
    episodes: set[str] = set()
    rows = zip(
        table.column("trajectory_id").to_pylist(),
        table.column("action_type").to_pylist(),
        table.column("action").to_pylist(),
        table.column("elements").to_pylist(),
        strict=True,
    )
    for tid, kind, action, listed in rows:
        if kind != "DUAL_POINT" or not listed:
            continue
        taps += 1
        if pointed_element(action, elements_from_rows(listed)) is not None:
            hits += 1
            episodes.add(tid)
    return taps, hits, episodes


def _evaluator(cfg: Config, api_key: str | None, workdir: str | os.PathLike):
    from distrl_tasks.evaluators.gemini import GeminiEvaluator  # lazy: google-genai

    judge = GeminiEvaluator.from_config(
        cfg, api_key=api_key, cache_dir=common.resolve(workdir, cfg.evaluator.cache_dir)
    )
    judge.check_model()  # a retired model fails here, before a shard is read
    return judge


def run(
    cfg: Config,
    *,
    round: int,
    workdir: str | os.PathLike = ".",
    api_key: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Label round ``round``'s raw shards; returns ``{labeled, unlabeled, shards, ...}``.

    ``api_key`` is the Gemini key when it does not come from ``GEMINI_API_KEY`` (e.g. read from
    an Airflow connection by the DAG); it is handed to the client and stored nowhere.
    ``progress`` shows a bar over the round's shards (stderr).
    """
    done = common.read_manifest(workdir, round, "label")
    if done is not None and done["unlabeled_retryable"] == 0:
        return {**done, "reused": True}
    raw = common.raw_dir(cfg, workdir)
    report = verify_shards(raw)
    shards = [s for s in report.shards if round in s.rounds]
    if not shards:
        raise FileNotFoundError(f"no shards of round {round} in {raw}: run the collect stage first")
    out_dir = common.labeled_dir(cfg, workdir)
    judge = _evaluator(cfg, api_key, workdir) if cfg.evaluator.kind == "gemini" else None
    counts = {"labeled": 0, "unlabeled": 0, "unlabeled_retryable": 0, "successes": 0}
    finals: dict[str, Any] = {}  # trajectory id -> its label (True/False, None: unlabeled)
    families: dict[str, str] = {}  # trajectory id -> its goal's family
    steps = fallbacks = 0  # the round's steps and those the pointer had no element for
    taps = pointed = 0  # the round's taps on screens with elements, and those on a centre
    pointing: set[str] = set()  # trajectories that pointed at least once
    written: list[str] = []
    bar = progress_bar(shards, desc=f"label r{round}", unit="shard", enabled=progress)
    with common.stage_run(cfg, workdir, round, "label") as run_, bar:
        for shard in bar:
            table = read_verified([shard])
            steps, fallbacks = steps + table.num_rows, fallbacks + pointer_fallbacks(table)
            if cfg.agent.points:
                shard_taps, shard_hits, shard_episodes = pointed_taps(table)
                taps, pointed = taps + shard_taps, pointed + shard_hits
                pointing |= shard_episodes
            trajectories = group_trajectories(table)
            pending = [t for t in trajectories if _needs_label(t)] if judge else []
            verdicts = (
                judge.label_many([(t.column("task")[0].as_py(), observations(t)) for t in pending])
                if pending
                else []
            )
            by_id = {
                t.column("trajectory_id")[0].as_py(): v
                for t, v in zip(pending, verdicts, strict=True)
            }
            rows: list[dict] = []
            for traj in trajectories:
                tid = traj.column("trajectory_id")[0].as_py()
                verdict = by_id.get(tid)
                if verdict is not None and verdict.labeled:
                    rows += _relabel(
                        traj, verdict.reward == 1.0, verdict.evaluator, cfg.algorithm.gamma
                    )
                else:
                    rows += traj.to_pylist()
                last = rows[-1]
                families[tid] = goal_family(str(last["task"]))
                finals[tid] = (
                    (last["trajectory_reward"] or 0) > 0
                    if last["label_status"] == "labeled"
                    else None
                )
                if last["label_status"] == "labeled":
                    counts["labeled"] += 1
                    counts["successes"] += int((last["trajectory_reward"] or 0) > 0)
                else:
                    counts["unlabeled"] += 1
                    evaluator = last.get("evaluator") or ""
                    counts["unlabeled_retryable"] += not evaluator.startswith(TRUNCATED_PREFIX)
            labeled = table_from_rows(rows, feature_dim_of(table) or 0)
            info = write_shard(
                labeled,
                out_dir,
                round=round,
                name=Path(shard.path).stem,
                gamma=cfg.algorithm.gamma,
                overwrite=True,  # relabeling replaces an earlier, less complete labeled copy
            )
            written.append(str(info.path))
        total = counts["labeled"] + counts["unlabeled"]
        rollout = {
            "rollout/trajectories": total,
            "rollout/labeled": counts["labeled"],
            "rollout/unlabeled": counts["unlabeled"],
            "rollout/success_rate": counts["successes"] / max(1, counts["labeled"]),
        }
        fallback_rate = fallbacks / steps if cfg.agent.points and steps else None
        if fallback_rate is not None:  # steps the pointer could not point: coordinates written
            rollout["rollout/pointer_fallback_rate"] = fallback_rate
        if cfg.agent.points and taps:  # taps that went to an element's centre
            rollout["rollout/pointer_tap_share"] = pointed / taps
        run_.log_metrics(rollout, step=round)
        explored = _explored_episodes(raw, round)
        if cfg.agent.points:  # exploring through the pointer: the episodes that pointed
            explored = (explored or set()) | pointing
        if explored is not None:
            outcomes = [(t, families[t], finals[t]) for t in finals]
            run_.log_metrics(exploration_metrics(outcomes, explored), step=round)
        report = _agreement_with_oracle(cfg, raw, round, finals)
        if report is not None:
            print(report.to_markdown(), file=sys.stderr, flush=True)
            run_.log_metrics(_agreement_metrics(report), step=round)
    manifest = {
        "round": round,
        "evaluator": cfg.evaluator.kind,
        "shards": written,
        "trajectories": total,
        **counts,
        "reused": False,
    }
    if fallback_rate is not None:
        manifest["pointer_fallback_rate"] = fallback_rate
    if report is not None:
        manifest["agreement"] = {
            "with": "oracle",
            **_agreement_metrics(report),
            "confusion": {f"{a}/{b}": n for (a, b), n in report.counts.items()},
        }
    return common.write_manifest(workdir, round, "label", manifest)


def _agreement_with_oracle(
    cfg: Config, raw: Path, round_: int, finals: dict[str, Any]
) -> AgreementReport | None:
    """The configured evaluator's labels against the simulator oracle's verdicts of the same
    trajectories (kept in the round's collect manifests), or None when there are none (the
    oracle labeled, or no simulator)."""
    if cfg.evaluator.kind == "oracle":
        return None
    reference: dict[str, bool] = {}
    for path in sorted(raw.glob(f"collect-r{round_:06d}-w*.json")):
        reference.update(json.loads(path.read_text()).get("oracle_verdicts", {}))
    ids = [tid for tid in reference if tid in finals]
    if not ids:
        return None
    return agreement(
        [finals[t] for t in ids],
        [reference[t] for t in ids],
        name_a=cfg.evaluator.kind,
        name_b="oracle",
    )


def _explored_episodes(raw: Path, round_: int) -> set[str] | None:
    """Ids of the round's episodes that explored (collect manifests' ``exploration``); None
    when no worker of the round explored at all (exploration off)."""
    ids: set[str] | None = None
    for path in sorted(raw.glob(f"collect-r{round_:06d}-w*.json")):
        info = json.loads(path.read_text()).get("exploration")
        if info is not None:
            ids = (ids or set()) | set(info.get("episodes", []))
    return ids


def _agreement_metrics(report: AgreementReport) -> dict[str, float]:
    """Pairs compared, accuracy and Cohen's kappa (the last two only when defined)."""
    metrics = {"rollout/agreement_compared": float(report.compared)}
    if report.accuracy is not None:
        metrics["rollout/agreement_accuracy"] = report.accuracy
    if report.kappa is not None:
        metrics["rollout/agreement_kappa"] = report.kappa
    return metrics
