"""The trajectory-analysis notebook, executed headless on a tiny real pipeline run.

The run uses the real stages on the simulator: round 1 collected by the scripted expert (its
episodes succeed), round 2 by the random policy (they fail), both labeled by the sim oracle and
logged to MLflow. The second labeling for the agreement section is the real Gemini evaluator
talking to the fake Gemini server, which answers "success" exactly when the goal mentions news,
so the expected agreement is known from the goals and the oracle labels.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import torch
from fakes.gemini_server import FakeGemini, Reply, failure, success
from nbclient import NotebookClient
from PIL import Image

from distrl_tasks.analysis import episodes as A
from distrl_tasks.config import Config, load_config
from distrl_tasks.data.episode_drawing import FRAME_WIDTH
from distrl_tasks.data.schema import feature_dim_of, table_from_rows
from distrl_tasks.data.shards import read_verified, verify_shards, write_shard
from distrl_tasks.data.trajectories import discounted_returns, group_trajectories, observations
from distrl_tasks.evaluators.gemini import GeminiEvaluator
from distrl_tasks.protocol.ratelimit import RetryPolicy
from distrl_tasks.stages import collect, label

pytestmark = pytest.mark.integration

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "trajectory_analysis.ipynb"
KEY = "test-key"
_GOAL = re.compile(r"Task: (?P<goal>.+)\nAnswer in this format", re.S)


def _judge_news(request) -> Reply:
    goal = _GOAL.search(request.texts()[-1]).group("goal")
    return success() if "news" in goal.lower() else failure()


def _gemini_labels(cfg: Config, workdir: Path, out: Path) -> None:
    """Judge every labeled trajectory with Gemini (fake server) into shards under ``out``."""
    labeled = workdir / cfg.data.root / "labeled"
    with FakeGemini(api_key=KEY, responder=_judge_news) as fake:
        judge = GeminiEvaluator(
            api_key=KEY,
            base_url=fake.base_url,
            requests_per_minute=60_000,
            retry=RetryPolicy(max_retries=1, base_delay=0.01, seed=0),
            timeout_s=10.0,
        )
        for shard in verify_shards(labeled).shards:
            table = read_verified([shard])
            trajs = group_trajectories(table)
            verdicts = judge.label_many(
                [(t.column("task")[0].as_py(), observations(t)) for t in trajs], progress=False
            )
            assert all(v.labeled for v in verdicts), verdicts
            rows: list[dict] = []
            for traj, verdict in zip(trajs, verdicts, strict=True):
                steps = traj.to_pylist()
                rewards = [0.0] * len(steps)
                rewards[-1] = float(verdict.reward)
                for row, r, g in zip(steps, rewards, discounted_returns(rewards, 0.5), strict=True):
                    row.update(
                        reward=r,
                        mc_return=float(g),
                        trajectory_reward=sum(rewards),
                        evaluator="gemini",
                        label_status="labeled",
                    )
                rows += steps
            write_shard(
                table_from_rows(rows, feature_dim_of(table) or 0),
                out,
                round=shard.rounds[0],
                name=shard.path.stem,
                gamma=0.5,
            )


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    workdir = tmp_path_factory.mktemp("tiny-run")
    cfg = load_config(
        None, {"orchestration.devices_per_worker": 2, "orchestration.episodes_per_device": 2}
    )
    for rnd, policy in ((1, "scripted"), (2, "random")):
        collect.run(
            cfg, collect.CollectRequest(round=rnd, policy=policy, progress=False), workdir=workdir
        )
        label.run(cfg, round=rnd, workdir=workdir)
    _gemini_labels(cfg, workdir, workdir / "gemini-labels")
    return workdir


def _outputs(nb) -> list[dict]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def test_notebook_runs_headless_on_a_tiny_run(
    tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISTRL_WORKDIR", str(tiny_run))
    monkeypatch.setenv("DISTRL_SECOND_LABELS", "gemini-labels")
    monkeypatch.setenv("DISTRL_FIGURES", str(tmp_path / "figures"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not _outputs(nb), "the committed notebook must be stripped of outputs"
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises CellExecutionError on any failing cell
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]

    # five figures and two drawn episodes inline, and the same seven saved as PNG
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 7
    saved = sorted(p.stem for p in (tmp_path / "figures").glob("*.png"))
    episodes = [name for name in saved if name.startswith("drawn_episode_")]
    assert len(episodes) == 2
    assert sorted(set(saved) - set(episodes)) == sorted(
        ["success_by_family", "episode_length", "action_types", "tap_heatmap", "learning_curves"]
    )

    # every figure fits a screen's width: no 8000-pixel strip of twenty panels in one row
    for png in (tmp_path / "figures").glob("*.png"):
        with Image.open(png) as image:
            width, height = image.size
        assert 150 <= width <= 2000, (png.name, image.size)
        if not png.stem.startswith("drawn_episode_"):  # a sheet scrolls down, step by step
            assert 100 <= height <= 2400 and width / height <= 6, (png.name, image.size)
    for name in episodes:  # whole frames at a readable width (not 130-pixel thumbnails)
        with Image.open(tmp_path / "figures" / f"{name}.png") as image:
            columns, rest = divmod(image.width + 6, FRAME_WIDTH + 6)  # 6-pixel gaps
            assert rest == 0 and 1 <= columns <= 5, image.size

    # the success table: every family of the run, both rounds, scripted beats random
    eps = A.episodes(A.load_steps(tiny_run / "data/trajectories/labeled"))
    assert len(eps) == 8 and set(eps["round"]) == {1, 2}
    by_round = eps.groupby("round")["success"].mean()
    assert by_round[1] == 1.0 and by_round[2] == 0.0
    html = "\n".join(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    for family in set(eps["family"]):
        assert family in html
    assert "round 1" in html and "round 2" in html
    assert "success_if_exact" in html  # the typed-queries table

    # agreement: Gemini (fake) says success iff the goal mentions news
    gemini = eps["task"].str.lower().str.contains("news")
    agree = int((gemini == eps["success"].astype(bool)).sum())
    markdown = "\n".join(
        o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})
    )
    assert "Agreement: oracle vs gemini" in markdown
    assert f"compared (both labeled): {len(eps)}" in markdown
    assert f"accuracy: {agree / len(eps):.3f}" in markdown

    # learning curve from MLflow: the label stage's rollout/success_rate per round
    assert "rollout/success_rate" in html
