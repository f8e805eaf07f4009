"""MLflow tracking and registry against a real SQLite store in a temporary project directory.

One store is shared by the module (creating MLflow's schema takes seconds); each registry test
uses its own registered-model name so the tests stay independent. Nothing is mocked and nothing
leaves the machine (telemetry is off, the store is a local file).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from distrl_tasks.config import Config, load_config
from distrl_tasks.tracking import REDACTED, download_cache
from distrl_tasks.tracking.registry import BEHAVIOR, CHAMPION, ModelRegistry
from distrl_tasks.tracking.runs import (
    CONFIG_ARTIFACT,
    ERROR_TAG,
    PARENT_TAG,
    Tracker,
    resolve_tracking_uri,
    round_run,
    stage_run,
)
from distrl_tasks.tracking.versions import eval_tasks_key, format_compare_table

pytestmark = [
    pytest.mark.integration,
    # MLflow's own SQLAlchemy usage, not ours.
    pytest.mark.filterwarnings("ignore:.*``noload`` loader strategy is deprecated"),
]

# A secret with no recognisable shape: only the environment tells the filter it is one.
FAKE_ENV_SECRET = "fake-gemini-secret-0123456789"
TASKS_A = eval_tasks_key(["open settings", "search for cats", "set an alarm for 7am"])
TASKS_B = eval_tasks_key(["open settings", "search for dogs"])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project root; the fake key is in the environment while the tracker is built."""
    for name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
        logging.getLogger(name).setLevel(logging.WARNING)  # schema-creation chatter
    root = tmp_path_factory.mktemp("project")
    yield root


@pytest.fixture(scope="module")
def tracker(project: Path) -> Tracker:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEMINI_API_KEY", FAKE_ENV_SECRET)
        return Tracker("sqlite:///runs/mlflow.db", "distrl-test", root=project)


@pytest.fixture
def cfg() -> Config:
    return load_config(None, {"algorithm.name": "digirl", "orchestration.rounds": 5})


@pytest.fixture
def registry(tracker: Tracker, request: pytest.FixtureRequest) -> ModelRegistry:
    return ModelRegistry(tracker, model_name=f"policy-{request.node.name}".replace("_", "-"))


def _checkpoint(directory: Path, seed: int) -> Path:
    """A small checkpoint-like directory: binary weights, json config, a nested tokenizer file."""
    directory.mkdir(parents=True)
    (directory / "model.safetensors").write_bytes(hashlib.sha256(bytes([seed])).digest() * 300)
    (directory / "config.json").write_text(json.dumps({"d_model": 64, "seed": seed}))
    (directory / "tokenizer").mkdir()
    (directory / "tokenizer" / "vocab.txt").write_text("a\nb\nc\n")
    return directory


def _digests(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_tracking_uri_resolution(tmp_path: Path) -> None:
    uri = resolve_tracking_uri("sqlite:///runs/mlflow.db", tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve()}/runs/mlflow.db"
    assert (tmp_path / "runs").is_dir()
    assert resolve_tracking_uri("sqlite:////abs/x.db?timeout=5", tmp_path) == (
        "sqlite:////abs/x.db?timeout=5"
    )
    assert resolve_tracking_uri("http://127.0.0.1:5000", tmp_path) == "http://127.0.0.1:5000"
    assert resolve_tracking_uri("mlruns", tmp_path) == (tmp_path.resolve() / "mlruns").as_uri()
    for bad in ("", "sqlite://", "sqlite:///:memory:"):
        with pytest.raises(ValueError, match=r"tracking\.tracking_uri"):
            resolve_tracking_uri(bad, tmp_path)


def test_store_layout_under_project_root(tracker: Tracker, project: Path) -> None:
    experiment = tracker.client.get_experiment(tracker.experiment_id)
    assert experiment.name == "distrl-test"
    assert experiment.artifact_location == (project / "runs" / "mlartifacts").as_uri()
    assert (project / "runs" / "mlflow.db").is_file()


def test_round_parent_with_nested_stage_runs(tracker: Tracker, cfg: Config) -> None:
    with round_run(cfg, 2, tracker=tracker) as parent:
        with stage_run("collect") as collect:
            collect.log_metrics({"rollout/success_rate": 0.25, "rollout/episodes": 8}, step=2)
        with stage_run("train", params={"learner": {"steps": 20}}) as train:
            train.log_metrics({"actor": 1.5}, step=0, prefix="losses")

    client = tracker.client
    run = client.get_run(parent.run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "round-2"
    tags = run.data.tags
    assert (tags["distrl.kind"], tags["distrl.round"]) == ("round", "2")
    assert (tags["algorithm"], tags["mode"]) == ("digirl", "off2on")
    assert PARENT_TAG not in tags

    children = tracker.child_runs(parent.run_id)
    assert [c.info.run_name for c in children] == ["collect", "train"]
    assert [c.info.run_id for c in children] == [collect.run_id, train.run_id]
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags[PARENT_TAG] == parent.run_id
        assert child.data.tags["distrl.kind"] == "stage"
        assert child.data.tags["distrl.stage"] == child.info.run_name
        assert child.data.tags["distrl.round"] == "2"
    assert children[1].data.params == {"learner.steps": "20"}
    assert children[0].data.metrics == {"rollout/success_rate": 0.25, "rollout/episodes": 8.0}


def test_round_params_are_the_flat_config(tracker: Tracker, cfg: Config, tmp_path: Path) -> None:
    with round_run(cfg, 0, tracker=tracker) as parent:
        pass
    params = tracker.client.get_run(parent.run_id).data.params
    flat = cfg.to_flat_dict()
    assert set(params) == set(flat)
    assert params["algorithm.name"] == "digirl"
    assert params["orchestration.rounds"] == "5"
    assert params["algorithm.distrl.priority_weights"] == "[1.0, 1.0, 0.01]"
    assert params["agent.max_new_tokens"] == "128"  # "tokens" is not a secret word
    local = tracker.client.download_artifacts(parent.run_id, CONFIG_ARTIFACT, str(tmp_path))
    assert json.loads(Path(local).read_text()) == params


def test_metrics_are_namespaced_and_stepped(tracker: Tracker, cfg: Config) -> None:
    with round_run(cfg, 1, tracker=tracker), stage_run("train") as train:
        for step, loss in enumerate([0.9, 0.7, 0.4]):
            train.log_metrics({"losses/critic": loss, "train/lr": 1e-4}, step=step)
        with pytest.raises(ValueError, match="not namespaced"):
            train.log_metrics({"critic_loss": 0.1})
        with pytest.raises(ValueError, match="not namespaced"):
            train.log_metrics({"x": 0.1}, prefix="charts")
        with pytest.raises(ValueError, match="expected a number"):
            train.log_metrics({"eval/success": "high"})
        with pytest.raises(ValueError, match="NaN"):
            train.log_metrics({"eval/success": float("nan")})
    history = tracker.client.get_metric_history(train.run_id, "losses/critic")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
        (0, 0.9),
        (1, 0.7),
        (2, 0.4),
    ]
    assert set(tracker.client.get_run(train.run_id).data.metrics) == {"losses/critic", "train/lr"}


def test_failed_stage_marks_runs_failed_with_a_scrubbed_error(
    tracker: Tracker, cfg: Config
) -> None:
    with (
        pytest.raises(RuntimeError, match="device farm down"),
        round_run(cfg, 7, tracker=tracker) as parent,
        stage_run("collect"),
    ):
        raise RuntimeError(f"device farm down (token {FAKE_ENV_SECRET})")
    child = tracker.child_runs(parent.run_id)[0]
    assert child.info.status == "FAILED"
    assert tracker.client.get_run(parent.run_id).info.status == "FAILED"
    assert child.data.tags[ERROR_TAG] == f"RuntimeError: device farm down (token {REDACTED})"


def test_round_can_be_reattached_by_run_id(tracker: Tracker, cfg: Config) -> None:
    with round_run(cfg, 4, tracker=tracker) as first, stage_run("collect"):
        pass
    # A later process (another Airflow task) attaches its stage to the same round.
    with round_run(cfg, 4, tracker=tracker, run_id=first.run_id), stage_run("train"):
        pass
    assert [c.info.run_name for c in tracker.child_runs(first.run_id)] == ["collect", "train"]
    assert tracker.client.get_run(first.run_id).info.status == "FINISHED"
    with (
        pytest.raises(ValueError, match="is round 4, not round 5"),
        round_run(cfg, 5, tracker=tracker, run_id=first.run_id),
    ):
        pass
    with pytest.raises(ValueError, match="does not exist"):
        tracker.resume("0" * 32)
    with pytest.raises(RuntimeError, match="inside round_run"), stage_run("train"):
        pass
    with (
        pytest.raises(ValueError, match="non-negative integer"),
        round_run(cfg, -1, tracker=tracker),
    ):
        pass


def test_register_versions_aliases_and_round_trip(registry: ModelRegistry, tmp_path: Path) -> None:
    dirs = [_checkpoint(tmp_path / f"ckpt{i}", seed=i) for i in range(3)]
    versions = [
        registry.register_checkpoint(
            d,
            round=i,
            algorithm="distrl",
            policy_version=10 + i,
            data_version=f"{i:032x}.dir",
            steps=100 * (i + 1),
        )
        for i, d in enumerate(dirs)
    ]
    assert versions == [1, 2, 3]
    info = registry.get_version(2)
    assert dict(info.tags) == {
        "round": "1",
        "algorithm": "distrl",
        "policy_version": "11",
        "data_version": f"{1:032x}.dir",
        "eval_success_rate": "",
        "steps": "200",
    }
    run = registry.client.get_run(info.run_id)
    assert run.data.tags["distrl.stage"] == "register" and run.info.status == "FINISHED"
    assert info.source.endswith(f"/{info.run_id}/artifacts/checkpoint")

    assert registry.alias_version(BEHAVIOR) is None
    registry.set_behavior(1)
    registry.set_behavior(3)  # the learner moves behaviour forward
    assert registry.alias_version(BEHAVIOR).version == 3

    loaded = registry.load_by_alias(BEHAVIOR, tmp_path / "cache")
    assert loaded == tmp_path / "cache" / "v3"
    assert _digests(loaded) == _digests(dirs[2])
    stamp = (loaded / "model.safetensors").stat().st_mtime_ns
    assert registry.load_by_alias(BEHAVIOR, tmp_path / "cache") == loaded  # cached, not refetched
    assert (loaded / "model.safetensors").stat().st_mtime_ns == stamp
    assert _digests(registry.download_version(1, tmp_path / "cache")) == _digests(dirs[0])
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["v1", "v3"]  # no leftovers


def test_checkout_prunes_old_downloads_but_keeps_aliases_and_held_versions(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    """Each round's checkout keeps the newest ``keep`` downloads plus the aliases' versions; a
    version another reader is loading survives the prune and goes at the next one."""
    dirs = [_checkpoint(tmp_path / f"ckpt{i}", seed=i) for i in range(5)]
    for i, d in enumerate(dirs):
        registry.register_checkpoint(
            d, round=i, algorithm="distrl", policy_version=i, data_version=f"{i:032x}.dir"
        )
    registry.set_behavior(1)  # an alias on the oldest version: protected
    cache = tmp_path / "cache"
    with download_cache.reading(cache, 2):  # another process loading v2 while the rounds run
        for version in (1, 2, 3, 4):
            with registry.checkout(version, cache, keep=1) as path:
                assert path == cache / f"v{version}"
                assert _digests(path) == _digests(dirs[version - 1])
        assert download_cache.cached_versions(cache) == [1, 2, 4]  # v3 went; v2 is held
    with registry.checkout(5, cache, keep=1):
        pass
    assert download_cache.cached_versions(cache) == [1, 5]
    with registry.checkout(2, cache, keep=0) as again:  # a pruned version downloads again
        assert _digests(again) == _digests(dirs[1])
    assert download_cache.cached_versions(cache) == [1, 2, 5]
    with pytest.raises(ValueError, match="no version 9"), registry.checkout(9, cache, keep=1):
        pass


def test_champion_moves_only_on_strictly_better_same_tasks(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    for i in range(3):
        registry.register_checkpoint(
            _checkpoint(tmp_path / f"c{i}", seed=i),
            round=i,
            algorithm="distrl",
            policy_version=i,
            data_version="",
        )
    first = registry.promote_if_better(1, 0.5, TASKS_A)
    assert (first.promoted, first.champion, first.previous) == (True, 1, None)

    tie = registry.promote_if_better(2, 0.5, TASKS_A)
    assert (tie.promoted, tie.champion) == (False, 1)
    worse = registry.promote_if_better(3, 0.25, TASKS_A)
    assert (worse.promoted, worse.champion) == (False, 1)
    # A higher score on a different task list is not comparable: the champion stays.
    other = registry.promote_if_better(3, 0.9, TASKS_B)
    assert (other.promoted, other.champion) == (False, 1)
    assert "never evaluated on tasks" in other.reason
    assert registry.alias_version(CHAMPION).version == 1

    better = registry.promote_if_better(2, 0.75, TASKS_A)
    assert (better.promoted, better.champion, better.previous) == (True, 2, 1)
    assert registry.alias_version(CHAMPION).version == 2
    # Once the champion has a score on list B too, challengers on B compare against it.
    registry.record_eval(2, 0.9, TASKS_B)
    assert not registry.promote_if_better(3, 0.9, TASKS_B).promoted
    assert registry.promote_if_better(3, 0.95, TASKS_B).promoted
    info = registry.get_version(3)
    assert info.eval_success_rate == 0.95 and info.eval_tasks == TASKS_B
    assert info.score_on(TASKS_A) == 0.25 and info.score_on(TASKS_B) == 0.95


def test_compare_versions_and_table(registry: ModelRegistry, tmp_path: Path) -> None:
    assert registry.compare_versions() == []
    registry.register_checkpoint(
        _checkpoint(tmp_path / "a", 1),
        round=0,
        algorithm="filtered_bc",
        policy_version=0,
        data_version="0123456789abcdef0123456789abcdef.dir",
        eval_success_rate=0.375,
        eval_tasks_key=TASKS_A,
        steps=40,
    )
    registry.register_checkpoint(
        _checkpoint(tmp_path / "b", 2),
        round=1,
        algorithm="distrl",
        policy_version=1,
        data_version="",
    )
    registry.promote_if_better(1, 0.375, TASKS_A)
    registry.set_behavior(1)
    registry.set_behavior(2)
    rows = registry.compare_versions()
    assert [(r.version, r.round, r.algorithm, r.steps, r.aliases) for r in rows] == [
        (1, 0, "filtered_bc", 40, ("champion",)),
        (2, 1, "distrl", None, ("behavior",)),
    ]
    assert rows[0].eval_success_rate == 0.375 and rows[1].eval_success_rate is None
    assert len(TASKS_A) == 19  # "n3-" + 16 hex digits
    assert format_compare_table(rows).splitlines() == [
        "version  round  algorithm    data_version  eval_success  "
        "eval_tasks           steps  aliases",
        "-------  -----  -----------  ------------  ------------  "
        "-------------------  -----  --------",
        f"1        0      filtered_bc  0123456789ab  37.5%         {TASKS_A}  40     champion",
        "2        1      distrl       -             -             "
        "-                    -      behavior",
    ]


def test_registry_rejects_bad_input(registry: ModelRegistry, tmp_path: Path) -> None:
    common = {"round": 0, "algorithm": "distrl", "policy_version": 0, "data_version": ""}
    with pytest.raises(ValueError, match="does not exist"):
        registry.register_checkpoint(tmp_path / "missing", **common)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no files"):
        registry.register_checkpoint(tmp_path / "empty", **common)
    pickled = _checkpoint(tmp_path / "pickled", 0)
    (pickled / "optimizer.pt").write_bytes(b"\x80\x04")
    with pytest.raises(ValueError, match=r"pickle files \['optimizer.pt'\]"):
        registry.register_checkpoint(pickled, **common)
    good = _checkpoint(tmp_path / "good", 0)
    with pytest.raises(ValueError, match=r"eval_success_rate must be in \[0, 1\]"):
        registry.register_checkpoint(good, eval_success_rate=1.5, eval_tasks_key=TASKS_A, **common)
    with pytest.raises(ValueError, match="eval_tasks_key must be"):
        registry.register_checkpoint(good, eval_success_rate=0.5, **common)
    version = registry.register_checkpoint(good, **common)
    run_id = registry.get_version(version).run_id
    with pytest.raises(ValueError, match="already holds artifacts"):
        registry.register_checkpoint(good, run_id=run_id, **common)
    with pytest.raises(ValueError, match="has no version 99"):
        registry.set_behavior(99)
    with pytest.raises(ValueError, match="has no alias 'champion'"):
        registry.load_by_alias(CHAMPION, tmp_path / "dl")
    with pytest.raises(ValueError, match="eval_tasks_key must be"):
        registry.promote_if_better(version, 0.5, "tasks with spaces")
    with pytest.raises(ValueError, match="non-empty sequence"):
        eval_tasks_key([])


def test_secrets_never_reach_the_store(
    tracker: Tracker, registry: ModelRegistry, project: Path, tmp_path: Path
) -> None:
    """Fake key in the environment and in config-like data: absent from params, tags, artifacts.

    Runs last in the module so it also inspects what every earlier test wrote to the store.
    """
    cfg = load_config(None, {"agent.checkpoint_dir": f"/models/{FAKE_ENV_SECRET}/autoui"})
    with round_run(cfg, 9, tracker=tracker, tags={"note": f"key={FAKE_ENV_SECRET}"}) as parent:
        with stage_run("label", params={"evaluator": {"api_key": "sk-live-abcdefghijklmnop12"}}):
            pass
        with stage_run("train") as train:
            train.set_tags({"GEMINI_API_KEY": FAKE_ENV_SECRET, "debug": FAKE_ENV_SECRET})
            with pytest.raises(ValueError, match="refusing to upload"):
                train.log_dict({"prompt": f"use {FAKE_ENV_SECRET}"}, "debug/request.json")
            leaky = _checkpoint(tmp_path / "leaky", 0)
            (leaky / "config.json").write_text(json.dumps({"api": FAKE_ENV_SECRET}))
            with pytest.raises(ValueError, match=r"secret-like content in config\.json"):
                train.log_artifacts(leaky, "checkpoint")
        registry.register_checkpoint(
            _checkpoint(tmp_path / "clean", 0),
            round=9,
            algorithm="distrl",
            policy_version=9,
            data_version="",
            run_id=train.run_id,
            tags={"launched_with": FAKE_ENV_SECRET},
        )
    assert tracker.client.get_run(parent.run_id).data.params["agent.checkpoint_dir"] == REDACTED

    client = tracker.client
    for run in client.search_runs([tracker.experiment_id], max_results=1000):
        for key, value in {**run.data.params, **run.data.tags}.items():
            assert FAKE_ENV_SECRET not in value, key
            assert "sk-live" not in value, key
    for model in client.search_registered_models():
        for mv in client.search_model_versions(f"name='{model.name}'"):
            assert all(FAKE_ENV_SECRET not in v for v in mv.tags.values())
    # Raw bytes of the whole store: the SQLite file and every artifact on disk.
    files = [p for p in (project / "runs").rglob("*") if p.is_file()]
    assert any(p.name == "mlflow.db" for p in files) and len(files) > 10
    for path in files:
        blob = path.read_bytes()
        assert FAKE_ENV_SECRET.encode() not in blob, path
        assert b"sk-live" not in blob, path
