"""One episode from reset to shard rows: stepping, fault truncation and oracle labels.

:class:`EpisodeRunner` is the state machine both collectors share: ``begin`` resets the env,
``advance`` performs one decided action, ``finish`` labels the episode and turns it into rows of
the shard schema (:mod:`distrl_tasks.data.schema`). A :class:`DeviceError` in ``advance``
truncates the episode: the steps already taken are kept, the last observation that was captured
stands in for the final screenshot, and the trajectory is marked ``label_status='unlabeled'``
with ``evaluator='truncated:device_error'`` (the schema has no error column) so it is never
mistaken for a labeled failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from distrl_tasks.data.trajectories import discounted_returns
from distrl_tasks.envs.android_env import AndroidEnv, EnvObservation, StepResult
from distrl_tasks.envs.device import DeviceError
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.ui_dump import element_rows

TRUNCATED = "truncated:device_error"


@dataclass(frozen=True)
class EpisodeMeta:
    """Per-trajectory values of the rows."""

    round: int
    task_set: str
    split: str
    policy_version: int


@dataclass
class _Step:
    obs: EnvObservation
    text: str
    log_prob: float
    result: StepResult


@dataclass
class Episode:
    """A finished (or failed) episode and its rows."""

    trajectory_id: str
    goal: str
    device: str
    rows: list[dict] = field(default_factory=list)
    success: bool | None = None  # oracle verdict; None when unlabeled
    # the oracle's verdict also when another evaluator labels (a reference for agreement)
    oracle_success: bool | None = None
    error: str = ""  # device failure that ended it early
    reason: str = ""  # why it ended (env reason, or "error")

    @property
    def steps(self) -> int:
        return len(self.rows)


class EpisodeRunner:
    """Drives one episode on one env.

    Args:
        env: the device's env.
        meta: round, task set, split and pinned policy version.
        oracle: labels finished episodes (None: leave them unlabeled, e.g. for Gemini); one
            made with ``labels=False`` only records its verdict (``Episode.oracle_success``).
        gamma: discount of ``mc_return``.
    """

    def __init__(
        self,
        env: AndroidEnv,
        meta: EpisodeMeta,
        *,
        oracle: OracleEvaluator | None,
        gamma: float,
    ) -> None:
        self.env = env
        self.meta = meta
        self.oracle = oracle
        self.gamma = gamma
        self.episode: Episode | None = None
        self.obs: EnvObservation | None = None
        self._steps: list[_Step] = []
        self.done = True

    def begin(self, goal: str, trajectory_id: str) -> EnvObservation | None:
        """Reset the env for ``goal``; None (episode failed, nothing to keep) on a device error."""
        self.episode = Episode(trajectory_id, goal, self.env.device.serial)
        self._steps = []
        try:
            self.obs = self.env.reset(goal, episode_id=trajectory_id)
        except DeviceError as exc:
            self.episode.error, self.episode.reason = f"reset: {exc}", "error"
            self.done = True
            return None
        self.done = False
        return self.obs

    def advance(self, text: str, log_prob: float) -> EnvObservation | None:
        """Perform one action; the next observation, or None once the episode is over."""
        if self.done or self.obs is None or self.episode is None:
            raise RuntimeError("advance() on an episode that is not running")
        try:
            result = self.env.step(text)
        except DeviceError as exc:
            self.episode.error, self.episode.reason = f"step {len(self._steps)}: {exc}", "error"
            self.done = True
            return None
        self._steps.append(_Step(self.obs, text, min(float(log_prob), 0.0), result))
        self.obs = result.observation
        if result.done:
            self.episode.reason = result.reason
            self.done = True
            return None
        return self.obs

    def finish(self) -> Episode:
        """Label the episode (oracle, while its final state is on the device) and build rows."""
        ep = self.episode
        if ep is None:
            raise RuntimeError("finish() before begin()")
        self.done = True
        if not self._steps:
            return ep
        status, evaluator = "unlabeled", None
        if ep.error:
            evaluator = TRUNCATED
        elif self.oracle is not None:
            verdict = self.oracle.judge_device(self.env.device)
            if verdict.labeled:
                ep.oracle_success = verdict.reward == 1.0
                if self.oracle.labels:
                    status, evaluator, ep.success = "labeled", verdict.evaluator, ep.oracle_success
        ep.rows = self._rows(ep, status, evaluator)
        return ep

    def _rows(self, ep: Episode, status: str, evaluator: str | None) -> list[dict]:
        n = len(self._steps)
        rewards = [0.0] * n
        if status == "labeled" and ep.success:
            rewards[-1] = 1.0  # sparse reward on the last step (DigiRL / DistRL)
        returns = discounted_returns(rewards, self.gamma) if status == "labeled" else None
        rows = []
        for t, s in enumerate(self._steps):
            a, last = s.result.action, t == n - 1
            dual = a.action_type.value == "DUAL_POINT" and not a.invalid
            rows.append(
                {
                    "trajectory_id": ep.trajectory_id,
                    "step": t,
                    "round": self.meta.round,
                    "task": ep.goal,
                    "task_set": self.meta.task_set,
                    "split": self.meta.split,
                    "device": ep.device,
                    "policy_version": self.meta.policy_version,
                    "prompt": s.obs.prompt,
                    "elements": element_rows(s.obs.elements) or None,
                    "state_key": s.obs.state_key or None,
                    "action": s.text,
                    "action_type": a.action_type.value,
                    "invalid": a.invalid,
                    "touch_point": list(a.touch_point) if dual else None,
                    "lift_point": list(a.lift_point) if dual else None,
                    "typed_text": a.typed_text if a.action_type.value == "TYPE" else None,
                    "screenshot_png": s.obs.screenshot_png,
                    "final_screenshot_png": s.result.observation.screenshot_png if last else None,
                    "image_features": s.obs.image_features,
                    "final_image_features": s.result.observation.image_features if last else None,
                    "behavior_log_prob": s.log_prob,
                    "reward": rewards[t] if status == "labeled" else None,
                    "penalty": min(s.result.penalty, 0.0),
                    "done": last,
                    "mc_return": float(returns[t]) if returns is not None else None,
                    "trajectory_reward": sum(rewards) if status == "labeled" else None,
                    "evaluator": evaluator,
                    "label_status": status,
                    "started_at": s.result.started_at,
                    "ended_at": s.result.ended_at,
                }
            )
        return rows
