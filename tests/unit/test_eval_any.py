"""`distrl eval`: goal files, REF kinds, the dynamics guard, and a real run of the expert."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from distrl_tasks.cli.main import main
from distrl_tasks.config import Config, ConfigError
from distrl_tasks.runners.evaluation import EpisodeResult, query_steps
from distrl_tasks.stages import eval_any


def test_goal_file_errors_name_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        eval_any.read_goal_file(tmp_path / "none.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("# comment\nSet an alarm for 7am\nfly me to the moon please\n")
    with pytest.raises(ValueError, match=r"bad.txt:3"):
        eval_any.read_goal_file(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# nothing\n")
    with pytest.raises(ValueError, match="holds no goals"):
        eval_any.read_goal_file(empty)


def test_unknown_dynamics_profile_is_a_config_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ConfigError, match=r"sim\.dynamics\.profile: must be one of"):
        Config().in_world("stormy")
    # the CLI's --dynamics goes through the same check, before any device starts
    args = ["eval", "--policy", "expert", "--task-set", "general", "--dynamics", "stormy"]
    assert main(args) == 2
    assert "sim.dynamics.profile" in capsys.readouterr().err


def test_in_world_changes_only_the_profile() -> None:
    cfg = Config()
    static = cfg.in_world("static")
    assert static.sim.dynamics.profile == "static"
    assert (
        dataclasses.replace(static, sim=dataclasses.replace(static.sim, dynamics=cfg.sim.dynamics))
        == cfg
    )


def test_unknown_ref_is_explained(tmp_path: Path) -> None:
    # the default tracking URI is relative: its SQLite store lands in tmp_path
    with pytest.raises(ValueError, match="not a checkpoint directory"):
        eval_any.resolve_policy(Config(), "no-such-alias", tmp_path, 0)


def test_a_mistyped_policy_or_workdir_creates_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with pytest.raises(ValueError, match="there is no registry at"):
        eval_any.resolve_policy(Config(), "champion", project, 0)
    with pytest.raises(ValueError, match="no such checkpoint directory"):
        eval_any.resolve_policy(Config(), "./runs/ckpt-typo", project, 0)
    with pytest.raises(ValueError, match=r"--workdir .*no such directory"):
        eval_any.resolve_policy(Config(), "champion", tmp_path / "projcet", 0)
    assert list(project.iterdir()) == []  # no MLflow store, no runs/ directory
    assert not (tmp_path / "projcet").exists()


def test_episode_rows_follow_the_contract() -> None:
    rows = eval_any.episode_rows(
        [
            EpisodeResult(0, "Open the settings", "open_app", "d", True, 2, "success"),
            EpisodeResult(1, "Who is Adele?", "web_search", "d", False, 4, "horizon", "", 1,
                          "Who is Adele", ("who is adele", "adel")),
        ]
    )  # fmt: skip
    assert rows[0]["typed_query_match"] is None
    assert rows[1] == {
        "goal": "Who is Adele?",
        "success": False,
        "steps": 4,
        "invalid_steps": 1,
        "typed_query_match": 0.5,
        "typed": ["who is adele", "adel"],
        "ended": "horizon",
    }
    assert rows[0]["typed"] == [] and rows[0]["ended"] == "success"


def test_expert_on_a_goal_file_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    goals = tmp_path / "goals.txt"
    goals.write_text("What's the weather like in Lagos?\nOpen the calculator\n")
    out = tmp_path / "res.json"
    code = main(
        ["eval", "--policy", "expert", "--goals", str(goals), "--devices", "2", "--dynamics",
         "static", "--json", str(out), "--no-progress", "--workdir", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "policy expert, dynamics static" in printed and "all" in printed
    data = json.loads(out.read_text())
    assert data["policy"] == "expert" and data["dynamics"] == "static"
    assert data["success_rate"] == 1.0
    assert [e["typed_query_match"] for e in data["episodes"]] == [1.0, None]
    assert set(data["episodes"][0]) == {
        "goal",
        "success",
        "steps",
        "invalid_steps",
        "typed_query_match",
        "typed",
        "ended",
    }
    assert data["episodes"][0]["typed"]  # the search it typed (its query: match 1.0)
    assert data["episodes"][1]["typed"] == []  # opening an app types nothing
    assert {e["ended"] for e in data["episodes"]} == {"success"}


def test_typing_the_goal_site_is_not_a_query_attempt() -> None:
    goal = "Go to ebay.com, search for 'jbl flip', and select the first entry"
    result = EpisodeResult(0, goal, "webshop", "d", True, 6, "success", "", 0, "jbl flip",
                           ("ebay.com", "JBL flip", "jbl flop"), "ebay.com")  # fmt: skip
    assert query_steps(result) == [True, False]
    no_query = EpisodeResult(1, "Go to ebay.com", "webshop", "d", True, 2, "success")
    assert query_steps(no_query) == []
