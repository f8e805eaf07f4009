"""Each DVC stage's slice of the config, and dvc.yaml following the slices."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from distrl_tasks.config import load_config
from distrl_tasks.stages.config_slices import STAGE_READS, config_slice, reads, write_slices

REPO = Path(__file__).resolve().parents[2]


def test_a_slice_holds_every_key_a_stage_reads_and_nothing_else() -> None:
    cfg = load_config(None, ["algorithm.lm_lr=0.5", "evaluator.model=gemini-3.1-flash-lite"])
    train = config_slice(cfg, "train")
    assert train["algorithm.lm_lr"] == 0.5 and train["sim.seed"] == cfg.sim.seed
    assert any(k.startswith("algorithm.distrl.") for k in train)  # nested sections come whole
    assert not any(k.startswith("evaluator.") for k in train)
    # of orchestration, only what picks the learner's steps per round (its replay ratio)
    assert {k for k in train if k.startswith("orchestration.")} == {
        "orchestration.asynchronous",
        "orchestration.continuous.replay_ratio",
    }
    label = config_slice(cfg, "label")
    assert label["evaluator.model"] == "gemini-3.1-flash-lite"
    assert set(label) == {k for k in cfg.to_flat_dict() if reads(k, STAGE_READS["label"])}
    assert reads("sim.dynamics.profile", ("sim",)) and not reads("simulator.x", ("sim",))


def test_slices_are_rewritten_only_when_they_change(tmp_path: Path) -> None:
    cfg = load_config(None)
    paths = write_slices(cfg, tmp_path)
    assert set(paths) == set(STAGE_READS)
    collect = Path(paths["collect"])
    before = collect.stat().st_mtime_ns
    write_slices(load_config(None, ["algorithm.lm_lr=0.5"]), tmp_path)  # collect reads no lm_lr
    assert collect.stat().st_mtime_ns == before
    assert json.loads(Path(paths["train"]).read_text())["algorithm.lm_lr"] == 0.5


def _stages(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["stages"]


def test_dvc_yaml_follows_the_slices() -> None:
    stages = _stages(REPO / "dvc.yaml") | {
        "pretrain": _stages(REPO / "pretrain" / "dvc.yaml")["pretrain"]
    }
    wd = yaml.safe_load((REPO / "dvc.yaml").read_text())["vars"][0]["wd"]
    slices = {f"{wd}/runs/config/{s}.json" for s in STAGE_READS}
    written = {next(iter(o)) if isinstance(o, dict) else o for o in stages["config"]["outs"]}
    assert {o.replace("${wd}", wd) for o in written} == slices  # config writes every slice
    flat = load_config(None).to_flat_dict()
    assert set(stages) - {"config"} == set(STAGE_READS)
    for name, reads_of in STAGE_READS.items():
        deps = [d.replace("${wd}", wd) for d in stages[name]["deps"]]
        assert f"{wd}/runs/config/{name}.json" in deps, name  # re-runs on what it reads
        for key in stages[name].get("params", []):
            assert key in flat, (name, key)  # a real key,
            assert reads(key, reads_of), (name, key)  # one the stage reads
    shown = [k for s in stages.values() for k in s.get("params", [])]
    assert 15 <= len(set(shown)) <= 40  # the columns of `dvc exp show --param-deps`
