"""Policy evaluation on the device fleet: each task exactly once, oracle-judged, in task order.

:func:`evaluation_plan` deals the task list round-robin over the devices, so every task runs once
however many devices there are; :func:`evaluate_on_farm` runs the plan with the asynchronous
collector (one thread per device, batched policy calls) and returns one :class:`EpisodeResult`
per task, in the order of the task list. Episodes cut short by a device error are kept and count
as failures (``error`` says why): dropping them would bias the success rate upwards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any

from distrl_tasks.agents.image_encoders import build_image_encoder
from distrl_tasks.config import Config
from distrl_tasks.data.episode_drawing import DRAWN_COLUMNS
from distrl_tasks.envs.adb_device import AdbClient, AdbDevice
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.actions import parse_action
from distrl_tasks.runners.collector import collect_async
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.policies import CollectPolicy
from distrl_tasks.tasks.expert_skills import same_text
from distrl_tasks.tasks.goal_farms import running_farm
from distrl_tasks.tasks.parse import parse_goal


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one evaluation episode."""

    index: int  # position of the task in the evaluated list
    goal: str
    family: str
    device: str
    success: bool  # oracle verdict; False for unlabeled or failed episodes
    steps: int  # actions taken
    reason: str  # why the episode ended (success, complete, horizon, ..., error)
    error: str = ""  # device failure, if any
    # actions the parser rejected (malformed or cut-off output): a policy whose success hides
    # many of them is not producing AutoUI actions
    invalid_steps: int = 0
    query: str = ""  # the query the goal names ("" for goals without one)
    typed: tuple[str, ...] = ()  # the text of each TYPE step, in order
    site: str = ""  # the web site the goal names ("ebay.com"), typed to get there


def searching_texts(result: EpisodeResult) -> list[str]:
    """The text of each TYPE step that searches: not one typing the goal's site to open it, as
    in "Go to ebay.com, search for ...". Empty for goals without a query."""
    if not result.query:
        return []
    site = result.site.lower()
    names = {site, site.split(".")[0]} - {""} if site else set()
    return [t for t in result.typed if t.strip().lower().removeprefix("www.") not in names]


def query_steps(result: EpisodeResult) -> list[bool]:
    """For each searching TYPE step (:func:`searching_texts`), whether it typed exactly the
    goal's query (up to case, spaces and punctuation). Empty for goals without a query."""
    return [same_text(t, result.query) for t in searching_texts(result)]


class ParseGuard:
    """Passes a policy's actions through, blanking any text on which ``parse_action`` raises.

    ``parse_action`` promises never to raise, but a point such as ``"[0.0.042, 0.5]"`` passes its
    regex and fails ``float()``; the env would then kill the device thread mid-evaluation. A
    blanked text parses as the invalid fallback, so the step is penalised and counted as the
    model's mistake, as the contract intends.
    """

    def __init__(self, policy: CollectPolicy) -> None:
        self.policy = policy
        self.blanked = 0

    def act(self, observations: Sequence[object]) -> tuple[list[str], Sequence[float]]:
        texts, log_probs = self.policy.act(observations)  # type: ignore[arg-type]
        out = []
        for text in texts:
            try:
                parse_action(text)
            except ValueError:
                self.blanked += 1
                text = ""
            out.append(text)
        return out, log_probs


def evaluation_plan(goals: Sequence[str], serials: Sequence[str]) -> dict[str, list[int]]:
    """Task indices per device, dealt round-robin: task ``i`` runs on ``serials[i % D]``.

    Raises:
        ValueError: no goals or no devices.
    """
    if not goals:
        raise ValueError("evaluation needs at least one goal")
    if not serials:
        raise ValueError("evaluation needs at least one device")
    plan: dict[str, list[int]] = {s: [] for s in serials}
    for i in range(len(goals)):
        plan[serials[i % len(serials)]].append(i)
    return plan


def summarize(results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """Success rate, mean steps, the share of invalid actions among the steps, errors, and the
    same per task family."""
    if not results:
        raise ValueError("no episode results to summarize")
    fams: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        fams[r.family].append(r)

    def stats(rs: Sequence[EpisodeResult]) -> dict[str, Any]:
        steps = sum(r.steps for r in rs)
        typed = [hit for r in rs for hit in query_steps(r)]
        return {
            "episodes": len(rs),
            "success_rate": sum(r.success for r in rs) / len(rs),
            "mean_steps": steps / len(rs),
            "invalid_rate": sum(r.invalid_steps for r in rs) / steps if steps else 0.0,
            # searching TYPE steps on goals that name a query (query_steps), and the share that
            # typed exactly it: the copying skill
            "type_steps": len(typed),
            "typed_query_match": sum(typed) / len(typed) if typed else None,
        }

    return {
        **stats(results),
        "errors": sum(bool(r.error) for r in results),
        "per_family": {f: stats(rs) for f, rs in sorted(fams.items())},
    }


def evaluate_on_farm(
    cfg: Config,
    policy: object,
    goals: Sequence[str],
    *,
    task_set: str,
    split: str = "test",
    devices: int | None = None,
    adb_address: tuple[str, int] | None = None,
    max_batch: int | None = None,
    progress: bool = False,
    capture_ui_xml: bool = False,
    rows_out: dict[int, list[dict[str, Any]]] | None = None,
) -> list[EpisodeResult]:
    """Run every goal once with ``policy`` and judge it with the simulator's oracle.

    Args:
        cfg: configuration (sim farm, env horizons and penalties, image encoder, batching).
        policy: anything the inference server serves (e.g. ``ModelPolicy(policy, greedy=True)``).
        goals: the task list, in the order results are returned.
        task_set: ``general`` or ``webshop`` (horizon).
        split: recorded on the episodes.
        devices: farm size when one is started, at most one per goal (default
            ``orchestration.eval_devices``); the verdicts do not depend on it.
        adb_address: ``(host, port)`` of a running simulator farm to use instead.
        max_batch: inference batch limit (default ``orchestration.inference_max_batch``).
        progress: show a progress bar.
        capture_ui_xml: give the policy the UI tree too (the scripted expert reads it).
        rows_out: when given, filled with each played goal's step rows (screenshots included),
            by goal index, for drawing episodes.

    Returns:
        One result per goal, in goal order.
    """
    if cfg.env.device_kind != "sim":
        raise ValueError(
            f"env.device_kind {cfg.env.device_kind!r}: oracle evaluation needs simulated devices"
        )
    tasks = [parse_goal(g) for g in goals]  # fail on a bad goal before any device work
    families = [t.family for t in tasks]
    n_devices = devices or cfg.orchestration.eval_devices
    with ExitStack() as stack:
        if adb_address is not None:
            host, port = adb_address
        else:
            farm = stack.enter_context(
                running_farm(
                    min(n_devices, len(goals)),
                    seed=cfg.sim.seed,
                    sim_cfg=cfg.sim,
                    dynamics=cfg.sim.dynamics.profile,  # a running farm: `simctl dynamics set`
                )
            )
            host, port = farm.host, farm.port
        client = AdbClient(host, port)
        serials = [d.serial for d in client.device_list()]
        plan = evaluation_plan(goals, serials)
        encoder = build_image_encoder(cfg.agent)
        envs = [
            AndroidEnv(
                AdbDevice(s, host, port, kind="sim", timeout_s=cfg.env.command_timeout_s),
                encoder,
                cfg.env,
                task_set=task_set,
                capture_ui_xml=capture_ui_xml,
                pointer_elements=cfg.agent.tap_elements,  # agent.pointer
            )
            for s in serials
        ]
        batch = max_batch or cfg.orchestration.inference_max_batch
        with InferenceServer(
            ParseGuard(policy),
            0,
            max_batch=batch,
            max_wait_ms=cfg.orchestration.inference_max_wait_ms,
        ) as server:
            collected = collect_async(
                envs,
                server,
                {s: [goals[i] for i in idx] for s, idx in plan.items()},
                round_=0,
                split=split,
                oracle=OracleEvaluator(),
                gamma=cfg.algorithm.gamma,
                id_prefix="eval-",
                progress=f"evaluate[{split}]" if progress else False,
            )
    out = [
        EpisodeResult(i, g, families[i], "", False, 0, "error", "not run: its device was lost")
        for i, g in enumerate(goals)
    ]  # a device given up mid-run leaves its remaining tasks unplayed: they count as failures
    for serial, idx in plan.items():
        for i, ep in zip(idx, collected.episodes[serial], strict=False):
            if rows_out is not None:  # only what drawing reads: 96 episodes' features add up
                rows_out[i] = [{k: row.get(k) for k in DRAWN_COLUMNS} for row in ep.rows]
            out[i] = EpisodeResult(
                index=i,
                goal=goals[i],
                family=families[i],
                device=serial,
                success=bool(ep.success),
                steps=ep.steps,
                reason=ep.reason,
                error=ep.error,
                invalid_steps=sum(bool(row.get("invalid")) for row in ep.rows),
                query=str(tasks[i].params.get("query", "")),
                site=str(tasks[i].params.get("site", "")),
                typed=tuple(
                    str(row.get("typed_text") or "")
                    for row in ep.rows
                    if row.get("action_type") == "TYPE"
                ),
            )
    return out


def results_as_dicts(results: Sequence[EpisodeResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in results]
