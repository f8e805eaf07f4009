"""`dvc repro` of dvc.yaml in a fresh clone: one full round, a no-op re-run, a param change.

The repository's files are copied into a temporary git repository (what a fresh clone holds),
with a params.yaml shrunk to tiny sizes (2 devices, 1 episode each, 2 train steps, 4 eval tasks).
Everything then runs for real through the real `dvc` and `distrl` executables of this virtualenv:
the simulator farm, the stages, DVC's cache and local remote, MLflow's SQLite registry. Git, DVC
and MLflow read no user or system configuration and write nothing outside the temporary dir.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from distrl_tasks.cli.main import main
from distrl_tasks.config import config_from_dict, load_config
from distrl_tasks.stages import common
from distrl_tasks.stages.config_slices import declared_params
from distrl_tasks.stages.dvc_metrics import dvc_hash, labeled_data_version, write_metrics

pytestmark = [
    pytest.mark.integration,
    # DVC 3.67 calls a pygtrie API that pygtrie deprecates; not ours to fix.
    pytest.mark.filterwarnings("ignore:_NoneStep.value:DeprecationWarning"),
]
repro = pytest.mark.slow  # the tests that run `dvc repro` (the first one takes a few minutes)

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WD = "runs/dvc"  # the stages' --workdir in dvc.yaml
RDIR = "r000001"
ALL_STAGES = [  # what a plain `dvc repro` runs: the round, not the base (pretrain/dvc.yaml)
    "config",
    "bootstrap",
    "collect",
    "label",
    "train",
    "evaluate",
    "register",
    "metrics",
]
SECTIONS = {"sim", "env", "agent", "algorithm", "data", "evaluator", "tracking", "orchestration"}
GENERATED = ("dvc.lock", "metrics.json", "plots/")  # pipeline results, never copied in
TINY = {
    "sim": {"port": 0},
    "agent": {
        "max_new_tokens": 48,
        # a bootstrap that fits a test: a few demos, a few SFT steps, the file-free tokenizer
        "sft": {"tokenizer": "byte", "episodes_per_device": 1, "steps": 3, "batch_size": 2},
        # a base rebuild that fits a test: a handful of goals, demos and steps
        "pretrain": {
            "goals": 16,
            "webshop_goals": 8,
            "heldout_per_family": 1,
            "heldout_episodes_per_device": 1,
            "episodes_per_device": 2,
            "webshop_episodes_per_device": 1,
            "steps": 3,
            "batch_size": 2,
        },
    },
    # the paper's signed A-RIDE: every update moves the policy, so a changed lm_lr always
    # changes the checkpoint (the released form's positive-only update may have no window with
    # A > 0 in a two-trajectory round, leaving evaluate nothing new to run)
    "algorithm": {
        "actor_epochs": 2,
        "critic_epochs": 1,
        "batch_size": 2,
        "distrl": {"advantage": "signed", "windows": 2},
        "critic_prefit": {"enabled": False},
    },
    "orchestration": {"devices_per_worker": 2, "episodes_per_device": 1, "eval_tasks": 4},
}


# ---- DVC's hash and the metrics files, on hand-built inputs (fast) ----


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def dvc_dir_md5(files: dict[str, bytes]) -> str:
    """DVC 3's directory hash by hand: md5 of the JSON list of (relpath, md5), sorted by path."""
    entries = [{"md5": md5(data), "relpath": rel} for rel, data in sorted(files.items())]
    return md5(json.dumps(entries, sort_keys=True).encode()) + ".dir"


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


SHARDS = {"r000001-w00-a.parquet": b"shard a", "sub/r000001-w00-b.parquet": b"shard b" * 50}


def test_dvc_hash_is_dvcs_directory_and_file_md5(tmp_path: Path) -> None:
    data = tmp_path / "labeled"
    write_tree(data, SHARDS)
    assert dvc_hash(data) == dvc_dir_md5(SHARDS)
    assert dvc_hash(data / "r000001-w00-a.parquet") == md5(b"shard a")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        dvc_hash(tmp_path / "missing")


def test_dvc_hash_leaves_out_what_the_repositorys_dvcignore_ignores(tmp_path: Path) -> None:
    from dvc.repo import Repo

    Repo.init(str(tmp_path), no_scm=True).close()
    (tmp_path / ".dvcignore").write_text("__pycache__/\n")
    data = tmp_path / "labeled"
    write_tree(data, {**SHARDS, "__pycache__/x.pyc": b"noise"})
    assert dvc_hash(data) == dvc_dir_md5(SHARDS)
    (tmp_path / ".dvcignore").unlink()
    assert dvc_hash(data) == dvc_dir_md5({**SHARDS, "__pycache__/x.pyc": b"noise"})


def test_labeled_data_version_needs_labeled_shards(tmp_path: Path) -> None:
    cfg = config_from_dict({})
    with pytest.raises(FileNotFoundError, match="no labeled shards"):
        labeled_data_version(cfg, tmp_path)
    write_tree(common.labeled_dir(cfg, tmp_path), {"r000001-w00-a.parquet": b"shard a"})
    assert labeled_data_version(cfg, tmp_path) == dvc_dir_md5({"r000001-w00-a.parquet": b"shard a"})


def write_json(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_metrics_and_plot_rows_come_from_the_round_manifests(tmp_path: Path) -> None:
    cfg = config_from_dict({})
    raw, rounds = common.raw_dir(cfg, tmp_path), common.rounds_dir(tmp_path)
    write_json(rounds / "r000001" / "evaluate.json", {"success_rate": 0.25})
    write_json(rounds / "r000002" / "evaluate.json", {"success_rate": 0.5})
    write_json(rounds / "r000002" / "register.json", {"version": 7})
    write_json(rounds / "r000003" / "train.json", {})  # not evaluated yet: no row
    counts = ("trajectories", "labeled", "successes")
    write_json(raw / "collect-r000001-w00.json", dict(zip(counts, (4, 4, 1), strict=True)))
    write_json(raw / "collect-r000001-w01.json", dict(zip(counts, (4, 3, 2), strict=True)))
    write_json(raw / "collect-r000002-w00.json", dict(zip(counts, (2, 2, 2), strict=True)))
    test_split = {"split": "test", **dict(zip(counts, (9, 9, 0), strict=True))}
    write_json(raw / "collect-r000002-w01.json", test_split)  # not training data: left out

    metrics = write_metrics(
        cfg, workdir=tmp_path, metrics_path=tmp_path / "m.json", plots_path=tmp_path / "p/s.csv"
    )
    expected = {
        "round": 2,
        "test_success_rate": 0.5,
        "train_success_rate": 1.0,
        "trajectories": 2,
        "registered_version": 7,
    }
    assert metrics == expected
    assert json.loads((tmp_path / "m.json").read_text()) == expected
    assert (tmp_path / "p" / "s.csv").read_text().splitlines() == [
        "round,test_success_rate,train_success_rate,trajectories",
        f"1,0.25,{3 / 7},8",
        "2,0.5,1.0,2",
    ]


def test_metrics_command_writes_files_and_fails_clearly_without_an_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no params.yaml here: the built-in defaults
    argv = ["metrics", "--workdir", "wd", "--metrics", "m.json", "--plots", "s.csv"]
    assert main(argv) != 0
    assert "no evaluated round" in capsys.readouterr().err
    write_json(common.rounds_dir("wd") / "r000004" / "evaluate.json", {"success_rate": 0.75})
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(Path("m.json").read_text())
    assert printed == {
        "round": 4,
        "test_success_rate": 0.75,
        "train_success_rate": 0.0,
        "trajectories": 0,
    }
    assert Path("s.csv").read_text().splitlines()[1] == "4,0.75,0.0,0"


@pytest.mark.parametrize("command", ["train", "register"])
def test_data_version_option_accepts_only_auto_or_a_dvc_hash(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--round", "1", "--data-version", "latest"])
    assert exc.value.code == 2
    assert "expected 'auto' or a DVC hash" in capsys.readouterr().err


# ---- `dvc repro` of dvc.yaml in a fresh clone (slow) ----


@dataclass
class Clone:
    root: Path
    env: dict[str, str]
    first: subprocess.CompletedProcess[str] | None = field(default=None)  # the first repro

    @property
    def workdir(self) -> Path:
        return self.root / WD

    def run(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(argv),
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert proc.returncode == 0, f"{argv} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        return proc

    def dvc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "dvc"), *args)

    def lock(self) -> dict:
        return yaml.safe_load((self.root / "dvc.lock").read_text())["stages"]

    def config(self):
        return load_config(self.root / "params.yaml")


def ran_stages(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """Stages `dvc repro` ran, in order, from its own report lines."""
    return re.findall(r"^Running stage '([^']+)'", proc.stdout + proc.stderr, re.MULTILINE)


def lock_md5(stage: dict, kind: str, suffix: str) -> str:
    (entry,) = [e for e in stage[kind] if e["path"].endswith(suffix)]
    return entry["md5"]


def source_files() -> list[str]:
    """What a clone of the repository holds: tracked files plus new files not yet committed."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    return [f for f in listed if f and (REPO / f).is_file() and not f.startswith(GENERATED)]


def isolated_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir()
    (home / "gitconfig").write_text("")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISTRL_", "MLFLOW_", "DVC_", "GIT_", "PYTHON"))
    }
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(tmp / "repo"),  # the stages run the clone's code, as on a fresh clone
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        DVC_NO_ANALYTICS="1",
        DVC_GLOBAL_CONFIG_DIR=str(home / "dvc-global"),
        DVC_SYSTEM_CONFIG_DIR=str(home / "dvc-system"),
        DVC_SITE_CACHE_DIR=str(home / "dvc-site-cache"),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",  # two cores shared with other work: no torch oversubscription
        MKL_NUM_THREADS="1",
    )
    return env


def tiny_params(path: Path) -> None:
    """``params.yaml`` with :data:`TINY` merged in, nested sections key by key (every key the
    stages declare must stay in the file)."""

    def merge(into: dict, values: dict) -> None:
        for key, value in values.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    params = yaml.safe_load(path.read_text())
    merge(params, TINY)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def git(root: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def clone(module_tmp_path: Path) -> Clone:
    """A fresh clone after its first `dvc repro`."""
    if not (BIN / "dvc").is_file() or not (BIN / "distrl").is_file():
        pytest.skip("needs the `dvc` and `distrl` executables in the virtualenv (make install)")
    tmp = module_tmp_path
    root = tmp / "repo"
    for rel in source_files():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    tiny_params(root / "params.yaml")
    env = isolated_env(tmp)
    git(root, env, "init", "-q")
    git(root, env, "config", "user.name", "DVC Repro Test")
    git(root, env, "config", "user.email", "dvc-repro@test.invalid")
    git(root, env, "add", "-A")
    git(root, env, "commit", "-q", "-m", "fresh clone")
    fresh = Clone(root, env)
    fresh.first = fresh.dvc("repro")
    return fresh


@repro
def test_fresh_clone_repro_runs_one_full_round(clone: Clone) -> None:
    assert clone.first is not None and ran_stages(clone.first) == ALL_STAGES
    # every long stage shows its progress (tqdm bars on stderr, which `dvc repro` passes on)
    for bar in ("sft:", "evaluate[test]:", "collect[async]:", "label r1:", "train r1:"):
        assert bar in clone.first.stderr, bar
    cfg = clone.config()
    evaluation = common.read_manifest(clone.workdir, 1, "evaluate")
    collected = json.loads(
        (common.raw_dir(cfg, clone.workdir) / f"collect-{RDIR}-w00.json").read_text()
    )
    assert collected["trajectories"] == 2

    metrics = json.loads((clone.root / "metrics.json").read_text())
    assert metrics == {
        "round": 1,
        "test_success_rate": pytest.approx(evaluation["success_rate"]),
        "train_success_rate": pytest.approx(collected["successes"] / collected["labeled"]),
        "trajectories": 2,
        "registered_version": 2,  # version 1 is the bootstrap policy
    }
    shown = json.loads(clone.dvc("metrics", "show", "--json").stdout)
    assert shown[""]["data"]["metrics.json"]["data"] == metrics

    plot_rows = (clone.root / "plots" / "success_per_round.csv").read_text().splitlines()
    assert plot_rows[0] == "round,test_success_rate,train_success_rate,trajectories"
    assert len(plot_rows) == 2 and plot_rows[1].startswith("1,")
    plots = json.loads(clone.dvc("plots", "show", "--json").stdout)["data"]
    assert list(plots) == ["success per round"]  # only the declared plot, nothing inferred
    values = plots["success per round"][0]["content"]["data"]["values"]
    assert {v["field"] for v in values} == {"test_success_rate", "train_success_rate"}

    # Outputs live under the git-ignored runs/: the clone only gains the pipeline's results.
    untracked = git(clone.root, clone.env, "status", "--porcelain").split("\n")
    assert sorted(line for line in untracked if line) == [
        "?? dvc.lock",
        "?? metrics.json",
        "?? plots/",
    ]


@repro
def test_lineage_hash_is_dvc_lock_md5_of_labeled_data(clone: Clone) -> None:
    lock = clone.lock()
    labeled = lock_md5(lock["label"], "outs", "/labeled")
    assert labeled.endswith(".dir")
    assert lock_md5(lock["train"], "deps", "/labeled") == labeled
    assert dvc_hash(common.labeled_dir(clone.config(), clone.workdir)) == labeled
    trained = common.read_manifest(clone.workdir, 1, "train")
    assert trained["data_version"] == labeled

    registry = common.registry(clone.config(), clone.workdir)
    version = registry.alias_version("behavior")
    assert version is not None and version.version == 2
    assert version.round == 1 and version.data_version == labeled
    evaluation = common.read_manifest(clone.workdir, 1, "evaluate")
    assert version.eval_success_rate == pytest.approx(evaluation["success_rate"])


@repro
def test_cached_outputs_push_to_the_default_local_remote(clone: Clone) -> None:
    clone.dvc("push")
    remote = clone.root / "runs" / "dvc-remote"  # .dvc/config: url = ../runs/dvc-remote
    labeled = lock_md5(clone.lock()["label"], "outs", "/labeled").removesuffix(".dir")
    assert (remote / "files" / "md5" / labeled[:2] / f"{labeled[2:]}.dir").is_file()


@repro
def test_second_repro_is_a_no_op(clone: Clone) -> None:
    before = (clone.root / "dvc.lock").read_text()
    again = clone.dvc("repro")
    assert ran_stages(again) == []
    # the round's pipeline; a plain `dvc status` also lists pretrain/dvc.yaml until it is built,
    # exactly as docs/running.md shows it
    assert "Data and pipelines are up to date" in clone.dvc("status", "dvc.yaml").stdout
    docs = (REPO / "docs" / "running.md").read_text()
    shown = docs[docs.index("```\npretrain/dvc.yaml:pretrain:") + 4 :]
    assert clone.dvc("status").stdout.strip() == shown[: shown.index("```")].strip()
    assert (clone.root / "dvc.lock").read_text() == before


@repro
def test_changing_a_training_param_reruns_only_train_and_later_stages(clone: Clone) -> None:
    params_path = clone.root / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params["algorithm"]["lm_lr"] = 2 * params["algorithm"]["lm_lr"]
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    labeled_before = lock_md5(clone.lock()["label"], "outs", "/labeled")

    status = json.loads(clone.dvc("status", "--json", "dvc.yaml").stdout)
    assert status == {
        "config": [{"changed deps": {"params.yaml": "modified"}}],
        "train": [{"changed deps": {"params.yaml": {"algorithm.lm_lr": "modified"}}}],
    }
    rerun = clone.dvc("repro")
    # config re-slices; only train's slice changed, so collect and label stay as they were
    assert ran_stages(rerun) == ["config", "train", "evaluate", "register", "metrics"]

    lock = clone.lock()
    # float(): PyYAML (YAML 1.1) reads the lock's "2e-05" (no dot) back as a string
    locked_lr = lock["train"]["params"]["params.yaml"]["algorithm.lm_lr"]
    assert float(locked_lr) == params["algorithm"]["lm_lr"]
    assert lock_md5(lock["label"], "outs", "/labeled") == labeled_before
    registry = common.registry(clone.config(), clone.workdir)
    newest = registry.alias_version("behavior")
    assert newest is not None and newest.version == 3 and newest.data_version == labeled_before
    assert json.loads((clone.root / "metrics.json").read_text())["registered_version"] == 3
    assert ran_stages(clone.dvc("repro")) == []


@repro
def test_the_base_is_rebuilt_only_as_an_explicit_target(clone: Clone) -> None:
    assert "pretrain" not in ran_stages(clone.first)
    rebuilt = clone.dvc("repro", "pretrain/dvc.yaml")
    assert ran_stages(rebuilt) == ["pretrain/dvc.yaml:pretrain"]
    card = json.loads(
        (clone.workdir / "runs" / "pretrain" / "base" / "model_card.json").read_text()
    )
    assert card["parameters"] > 0
    assert ran_stages(clone.dvc("repro", "pretrain/dvc.yaml")) == []  # up to date now


def _find_experiment(node, lr: float) -> dict | None:
    """The `dvc exp show --json` entry whose params.yaml has algorithm.lm_lr == ``lr``."""
    if isinstance(node, dict):
        params = node.get("params", {}).get("params.yaml", {}).get("data", {})
        if float(params.get("algorithm", {}).get("lm_lr", "nan")) == lr and "metrics" in node:
            return node
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _find_experiment(child, lr)
        if found is not None:
            return found
    return None


@repro
def test_dvc_exp_run_sets_one_param_and_exp_show_compares_it(clone: Clone) -> None:
    # DVC's own experiment flow: one param changed from the command line, results compared
    lr = 1.5e-5
    ran = clone.dvc("exp", "run", "--set-param", f"algorithm.lm_lr={lr}")
    assert ran_stages(ran) == ["config", "train", "evaluate", "register", "metrics"]
    # the table a person reads: the keys that define a run, not all of params.yaml
    table = clone.run(str(BIN / "distrl"), "experiments", "--csv").stdout.splitlines()
    header = table[0].split(",")
    params = [c for c in header if c.split(".")[0] in SECTIONS]
    declared = declared_params(clone.root / "dvc.yaml", clone.root / "pretrain" / "dvc.yaml")
    assert sorted(params) == sorted(declared) and 15 <= len(params) <= 40, params
    assert "test_success_rate" in header and not [c for c in header if "/" in c]  # no dep hashes
    assert any(row.split(",")[header.index("algorithm.lm_lr")] == "1.5e-05" for row in table)
    shown = json.loads(clone.dvc("exp", "show", "--json").stdout)
    experiment = _find_experiment(shown, lr)
    assert experiment is not None, json.dumps(shown)[:3000]
    metrics = experiment["metrics"]["metrics.json"]["data"]
    assert metrics["round"] == 1 and 0.0 <= metrics["test_success_rate"] <= 1.0
    assert metrics["registered_version"] > 2  # a new registry version for the experiment
