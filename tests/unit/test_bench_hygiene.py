"""Learning-benchmark hygiene: overrides recorded and kept apart, chosen seeds, per-seed starts."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from distrl_tasks.bench import export as ex
from distrl_tasks.bench import records as recs
from distrl_tasks.bench import report as rep
from distrl_tasks.bench.records import RoundPoint, RunRecord
from distrl_tasks.bench.setup import LearningBenchSettings, SFTPolicy, run_dir, run_overrides
from distrl_tasks.stages import common

ROOT = Path(__file__).resolve().parents[2]
KL = {"algorithm.group.kl_coef": 0.04}
INTEL = {"cpu": "Intel(R) Xeon(R) Processor", "nproc": 2, "python": "3.12", "torch": "2.13"}


def record(
    method: str,
    seed: int,
    test: float,
    overrides: dict | None = None,
    *,
    rounds: list[RoundPoint] | None = None,
    start: float | None = None,
    task_set: str = "webshop",
) -> RunRecord:
    return RunRecord(
        method=method,
        task_set=task_set,
        seed=seed,
        budget_s=100.0,
        final={"train": test / 2, "test": test},
        final_round=1,
        rounds=[RoundPoint(1, 50.0, 40.0, 4, test, None)] if rounds is None else rounds,
        collections=[(40.0, 4)],
        machine=INTEL,
        overrides=overrides,
        start_success=start,
    )


def an_export(
    name: str, rec: RunRecord | None, *, sft: str = "aa", overrides: dict | None = None
) -> ex.PolicyExport:
    return ex.PolicyExport(
        name=name,
        task_set="webshop",
        checkpoint="cc",
        sft_checkpoint=sft,
        per_family={"search": {"episodes": 2, "success_rate": 0.5}},
        profiles={},
        machine=INTEL,
        commit="0123456789abcdef",
        record=None if rec is None else rec.to_dict(),
        overrides=overrides,
    )


# --- 1. overrides: recorded, read back, told apart in old exports, rows of their own ---------


def test_run_overrides_are_what_differs_from_the_defaults() -> None:
    full = LearningBenchSettings.full()
    assert run_overrides(full, "gigpo", "webshop") == {}
    kl = dataclasses.replace(full, overrides=KL)
    assert run_overrides(kl, "gigpo", "webshop") == KL
    # the default's value and a key that keeps nothing apart (storage) are no override
    same = dataclasses.replace(
        full, overrides={"algorithm.group.kl_coef": 0.0, "tracking.keep_downloads": 3}
    )
    assert run_overrides(same, "gigpo", "webshop") == {}
    # settings that are no config key, and ones that reach the config, both count
    other = dataclasses.replace(full, budget_s=300.0, devices=4, seeds=(1, 2))
    assert run_overrides(other, "distrl", "general") == {
        "bench.budget_s": 300.0,
        "orchestration.devices_per_worker": 4,
    }


def test_an_export_records_its_overrides_and_reads_them_back(tmp_path: Path) -> None:
    rec = record("gigpo", 0, 0.2, KL)
    path = ex.write_export(tmp_path, an_export("webshop-gigpo-s0-k1", rec, overrides=KL))
    assert json.loads(path.read_text())["overrides"] == KL
    back = ex.read_export(tmp_path, "webshop-gigpo-s0-k1")
    assert back.overrides == KL and back.run_record.overrides == KL
    assert back.run_record == rec


def test_an_export_without_overrides_still_reads(tmp_path: Path) -> None:
    rec = record("gigpo", 0, 0.2).to_dict()
    del rec["overrides"], rec["start_success"]  # a record from before both fields
    data = dataclasses.asdict(an_export("webshop-gigpo-s0-k2", None))
    del data["overrides"]
    data["record"] = rec
    (tmp_path / "webshop-gigpo-s0-k2.json").write_text(json.dumps(data))
    old = ex.read_export(tmp_path, "webshop-gigpo-s0-k2")
    assert old.overrides is None and old.known_overrides is None
    assert old.run_record.overrides is None and old.run_record.start_success is None
    assert old.run_record.final == {"train": 0.1, "test": 0.2}
    # one found beside the invocation's own runs is a row of its own, named by its cache key
    assert ex.variant_record(old).overrides == {"run": "k2"}


RATIO = "orchestration.continuous.replay_ratio"
WINDOW = "orchestration.continuous.replay_window_rounds"
PROCESS = "orchestration.continuous.learner_process"
BOOT = "sim.dynamics.bootstrap_profile"


def test_overrides_against_older_defaults_are_read_against_todays() -> None:
    from distrl_tasks.bench.setup import current_overrides

    def then(method: str, overrides: dict | None, generation: int = 0) -> dict | None:
        old = record(method, 0, 0.5, overrides, task_set="general")
        # 0: before DistRL's continuous learner; 1: before the pointer and the learner process
        old.overrides_generation = generation
        return current_overrides(old)

    pointer, off, thread = {"agent.pointer": True}, {"agent.pointer": False}, {PROCESS: False}
    still = {BOOT: "static"}  # every run before generation 3 cloned still-world demonstrations
    # the windowed continuous learner and the pointer, set by hand then, are today's defaults;
    # its learner was a thread then
    assert then("distrl", {**pointer, RATIO: 0.1, WINDOW: 4}) == {**thread, **still}
    assert then("distrl", {**pointer, RATIO: 0.1}) == {WINDOW: 0, **thread, **still}
    # the round learner and coordinates, the defaults then, are overrides now (no learner process
    # without the continuous learner)
    assert then("distrl", pointer) == {RATIO: 0.0, **still}
    assert then("distrl", {}) == {**off, RATIO: 0.0, **still}
    assert then("distrl", {"bench.budget_s": 300.0}) == {
        **off,
        "bench.budget_s": 300.0,
        RATIO: 0.0,
        **still,
    }
    # a synchronous method never read the ratio: only the pointer moved for it
    assert then("digirl", pointer) == still
    assert then("digirl", {}) == {**off, **still}
    # generation 1 (the continuous learner already the default, as a thread)
    assert then("distrl", {}, generation=1) == {**off, **thread, **still}
    assert then("distrl", {**pointer, PROCESS: True}, generation=1) == still
    assert then("distrl", {**pointer, RATIO: 0.0}, generation=1) == {RATIO: 0.0, **still}
    # generation 2 (the pointer and the learner process the defaults): live demonstrations, set
    # by hand then, are today's default
    assert then("distrl", {}, generation=2) == still
    assert then("distrl", {BOOT: "live"}, generation=2) == {}
    # today's generation, and unknown overrides, are left as they are
    assert current_overrides(record("distrl", 0, 0.5, off)) == off
    assert then("distrl", None) is None


def test_an_export_knows_the_defaults_its_overrides_are_against(tmp_path: Path) -> None:
    rec = record("distrl", 0, 0.2, {RATIO: 0.0}, task_set="general")
    ex.write_export(tmp_path, an_export("general-distrl-s0-k3", rec, overrides={RATIO: 0.0}))
    back = ex.read_export(tmp_path, "general-distrl-s0-k3").run_record
    assert back.overrides_generation == recs.DEFAULTS_GENERATION
    # one written before the field: the first defaults
    path = tmp_path / "general-distrl-s0-k3.json"
    data = json.loads(path.read_text())
    del data["overrides_generation"], data["record"]["overrides_generation"]
    path.write_text(json.dumps(data))
    assert ex.read_export(tmp_path, "general-distrl-s0-k3").run_record.overrides_generation == 0


def test_a_run_found_under_its_own_name_carries_todays_overrides() -> None:
    from distrl_tasks.bench.learning import own_overrides

    full = LearningBenchSettings.full()
    # recorded against older defaults: the name says they are the invocation's own
    stale = record("distrl", 0, 0.5, {RATIO: 0.1, WINDOW: 4}, task_set="general")
    stale.overrides_generation = 0
    mine = own_overrides(stale, full)
    assert mine.overrides == {} and mine.overrides_generation == recs.DEFAULTS_GENERATION


def test_a_synchronous_run_is_named_without_the_replay_ratio() -> None:
    from distrl_tasks.bench.setup import SYNC_UNREAD_KEYS, _cache_view, run_config

    full = LearningBenchSettings.full()
    sft = SFTPolicy("general", Path("/r/sft-general-k"), Path("/r/p"), 10, {}, "t")

    def named(method: str, overrides: dict) -> str:
        settings = dataclasses.replace(full, overrides=overrides)
        return run_dir(settings, method, "general", 0, sft, Path("/r")).name

    # DigiRL keeps the name its runs had before DistRL's ratio moved; DistRL's follows it
    assert named("digirl", {RATIO: 0.0}) == named("digirl", {}) == named("digirl", {RATIO: 0.5})
    assert named("distrl", {RATIO: 0.0}) != named("distrl", {})
    view = _cache_view(run_config(full, "general", method="digirl"))
    assert view[RATIO] == SYNC_UNREAD_KEYS[RATIO] and WINDOW not in view


def test_the_committed_kl_ablation_exports_are_told_apart_from_the_defaults() -> None:
    exports = ROOT / "benchmarks" / "learning_runs"
    for name, test in (
        ("webshop-gigpo-s0-5775f32ad8", 0.19791666666666666),
        ("webshop-gigpo-s1-726edc626c", 0.20833333333333334),
        ("webshop-gigpo-s2-d563d627b0", 0.5),
    ):
        ablation = ex.read_export(exports, name)
        assert ablation.run_record.overrides == KL
        assert ablation.run_record.final["test"] == test
    default = ex.read_export(exports, "webshop-gigpo-s0-4bea72fc0a")
    assert default.overrides is None and default.run_record.overrides is None
    assert default.run_record.final["test"] == 0.3645833333333333


def test_variant_exports_are_the_same_start_s_other_runs(tmp_path: Path) -> None:
    rows = [
        ("webshop-gigpo-s0-own", record("gigpo", 0, 0.4, {}), "aa"),
        ("webshop-gigpo-s0-kl", record("gigpo", 0, 0.2, KL), "aa"),
        ("webshop-gigpo-s1-old", record("gigpo", 1, 0.3), "aa"),  # unrecorded overrides
        ("webshop-gigpo-s0-othersft", record("gigpo", 0, 0.9, {}), "bb"),
        ("webshop-gigpo-s5-kl", record("gigpo", 5, 0.9, KL), "aa"),  # a seed not chosen
        ("webshop-grpo-s0-kl", record("grpo", 0, 0.9, KL), "aa"),  # a method not chosen
    ]
    for name, rec, sft in rows:
        ex.write_export(tmp_path, an_export(name, rec, sft=sft))
    ex.write_export(tmp_path, an_export("sft-webshop-k", None, sft="aa"))
    found = ex.variant_exports(
        tmp_path,
        own=["webshop-gigpo-s0-own"],
        task_sets={"webshop": "aa"},
        methods=["gigpo", "distrl"],
        seeds=[0, 1],
    )
    assert [e.name for e in found] == ["webshop-gigpo-s0-kl", "webshop-gigpo-s1-old"]
    assert [ex.variant_record(e).overrides for e in found] == [KL, {"run": "old"}]
    assert ex.variant_exports(None, own=[], task_sets={}, methods=[], seeds=[]) == []


def test_tables_keep_runs_under_other_overrides_in_rows_of_their_own() -> None:
    runs = [
        record("gigpo", 0, 0.40, {}),
        record("gigpo", 1, 0.20, {}),
        record("gigpo", 0, 0.10, KL),
        record("gigpo", 1, 0.30, KL),
        record("digirl", 0, 0.25, {}),
    ]
    sft = {("webshop", "test"): [0.2]}
    lines = rep.results_table(runs, sft, ["digirl", "filtered_bc", "gigpo"]).splitlines()
    assert lines[3:] == [
        "| DigiRL | – | – | 12.5 ± 0.0 | 25.0 ± 0.0 |",
        "| Filtered BC | – | – | – | – |",
        "| GiGPO | – | – | 15.0 ± 7.1 | 30.0 ± 14.1 |",
        "| GiGPO (algorithm.group.kl_coef=0.04) | – | – | 10.0 ± 7.1 | 20.0 ± 14.1 |",
    ]
    details = rep.run_details_table(runs, ["gigpo"]).splitlines()
    assert [line.split(" | ")[0] for line in details[2:]] == [
        "| GiGPO",
        "| GiGPO (algorithm.group.kl_coef=0.04)",
    ]
    # the targets read the defaults' runs only: GiGPO closes (0.30 - 0.2) / 0.8 of the gap
    # (averaged with the ablation's, 6%)
    best = rep.evaluate_targets(runs, {("webshop", "test", 0): 0.2}, 100.0)[0]
    assert "GiGPO +13%" in best.detail and "DigiRL +6%" in best.detail
    assert rep.overrides_text({"b": True, "a": "x", "c": [1, 2]}) == "a=x, b=true, c=[1, 2]"
    # against an invocation's own overrides: what a run adds, and what it leaves at the default
    own = {"env.horizon_general": 3, "bench.budget_s": 20.0}
    assert rep.beyond({**own, **KL}, own) == KL
    assert rep.beyond({"env.horizon_general": 3}, own) == {"bench.budget_s": "(default)"}
    ablation = record("gigpo", 0, 0.1, {**own, **KL})
    assert rep.variant(ablation, own) == "algorithm.group.kl_coef=0.04"
    assert rep.variants([ablation, record("gigpo", 0, 0.2, own)], "gigpo", own) == [
        "",
        "algorithm.group.kl_coef=0.04",
    ]
    # a record from before overrides were recorded is the defaults' row
    assert rep.variants([record("gigpo", 2, 0.5, None), *runs], "gigpo") == [
        "",
        rep.variant(runs[2]),
    ]


def test_curves_are_one_line_per_override_set(tmp_path: Path) -> None:
    runs = [record("gigpo", s, 0.3, o) for s in (0, 1) for o in ({}, KL)]
    plots = rep.plot_curves(runs, {"webshop": 0.1}, ["gigpo"], tmp_path, 100.0)
    assert sorted(p.name for p in plots) == [
        "learning_success_webshop.png",
        "learning_trajectories_webshop.png",
    ]


# --- 2. --seeds: a count or the chosen seeds ---------------------------------------------------


def parsed(*argv: str) -> argparse.Namespace:
    from distrl_tasks.cli.main import build_parser

    return build_parser().parse_args(["bench", "learning", *argv])


@pytest.mark.parametrize(
    ("flag", "seeds"),
    [("3", (0, 1, 2)), ("1,2", (1, 2)), ("2,", (2,)), (" 4 , 0 ", (4, 0)), ("1", (0,))],
)
def test_seeds_flag_runs_the_chosen_seeds(flag: str, seeds: tuple[int, ...]) -> None:
    from distrl_tasks.cli.bench import settings_from_args

    assert settings_from_args(parsed("--seeds", flag)).seeds == seeds
    assert settings_from_args(parsed("--smoke", "--seeds", flag)).seeds == seeds


@pytest.mark.parametrize("flag", ["1,x", "0", "-1", "1,,2", ",", "1,1", "1.5", "a", "1,-2"])
def test_a_malformed_seed_list_is_a_clear_error(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        parsed(f"--seeds={flag}")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seeds:" in err
    assert "seed" in err.split("argument --seeds:", 1)[1]


def test_starts_only_and_finished_only_together_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert parsed("--starts-only").starts_only and not parsed().starts_only
    with pytest.raises(SystemExit) as info:
        parsed("--starts-only", "--finished-only")
    assert info.value.code == 2
    assert "not allowed with argument --starts-only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag", ["--finished-only", "--starts-only", "--with-reference", "--no-export"]
)
def test_the_ablation_refuses_the_learning_benchmarks_own_modes(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from distrl_tasks.cli.main import build_parser

    parser = build_parser()
    assert getattr(parser.parse_args(["bench", "learning", flag]), flag[2:].replace("-", "_"))
    with pytest.raises(SystemExit) as info:  # the ablation would ignore it, so it is refused
        parser.parse_args(["bench", "ablation", flag])
    assert info.value.code == 2
    assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
    assert parser.parse_args(["bench", "ablation", "--seeds", "2,", "--fresh"]).seeds == (2,)


def test_chosen_seeds_name_the_same_runs_as_a_count(tmp_path: Path) -> None:
    from distrl_tasks.cli.bench import settings_from_args

    sft = SFTPolicy("general", tmp_path / "sft-general-k", tmp_path / "p", 10, {}, "t")
    counted = settings_from_args(parsed("--smoke", "--seeds", "3"))
    chosen = settings_from_args(parsed("--smoke", "--seeds", "1,2"))
    # the cache key holds the seed, not the seed list: seed 2 of either is the same run
    assert run_dir(counted, "distrl", "general", 2, sft, tmp_path) == run_dir(
        chosen, "distrl", "general", 2, sft, tmp_path
    )


# --- 3. each seed's curve starts at its own SFT check ------------------------------------------


def test_each_seed_starts_at_its_own_sft_check() -> None:
    first = [RoundPoint(0, 30.0, 10.0, 0, 0.25, 5), RoundPoint(1, 60.0, 50.0, 4, 0.5, 9)]
    seed0 = record("distrl", 0, 0.5, {}, rounds=first)  # old record: the SFT check's own seed
    seed1 = record("distrl", 1, 0.5, {}, rounds=first, start=0.2)  # measured on seed 1
    seed2 = record("distrl", 2, 0.5, {}, rounds=list(reversed(first)))  # old record
    assert recs.start_success(seed0, 0.1) == 0.1
    assert recs.start_success(seed1, 0.1) == 0.2
    assert recs.start_success(seed2, 0.1) == 0.25  # its first check, not seed 0's SFT check
    assert recs.start_success(record("distrl", 2, 0.5, {}, rounds=[]), 0.1) == 0.1
    grid = [0.0, 30.0, 60.0]
    starts = [recs.start_success(r, 0.1) for r in (seed0, seed1, seed2)]
    mean, std = recs.curve([seed0, seed1, seed2], grid, "success", starts)
    np.testing.assert_allclose(mean, [(0.1 + 0.2 + 0.25) / 3, 0.25, 0.5])
    assert std[-1] == 0.0
    one, _ = recs.curve([seed0, seed1], grid, "success", 0.1)  # one start for all, as before
    np.testing.assert_allclose(one, [0.1, 0.25, 0.5])
    with pytest.raises(ValueError, match="2 initial values for 3 runs"):
        recs.curve([seed0, seed1, seed2], grid, "success", [0.1, 0.2])


def test_the_start_round_trips_and_old_records_read() -> None:
    rec = record("distrl", 1, 0.5, KL, start=0.2)
    assert RunRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    old = rec.to_dict()
    del old["start_success"], old["overrides"]
    back = RunRecord.from_dict(old)
    assert back.start_success is None and back.overrides is None


def test_the_sft_check_of_seed_0_is_the_bootstraps_and_others_are_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distrl_tasks.bench import learning
    from distrl_tasks.stages import evaluate

    calls: list[dict] = []

    def fake_run(cfg, **kw) -> dict:
        calls.append({"seed": cfg.sim.seed, **kw})
        return {"success_rate": 0.375}

    monkeypatch.setattr(evaluate, "run", fake_run)
    settings = LearningBenchSettings.smoke()
    sft = SFTPolicy("general", tmp_path / "sft", tmp_path / "policy", 10, {"round": 0.5}, "t")
    cfg = learning.run_config(settings, "general", seed=3, latency=False)
    assert learning.sft_check(settings, cfg, 0, sft) == 0.5
    assert calls == []
    assert learning.sft_check(settings, cfg, 3, sft) == 0.375
    assert calls == [
        {
            "seed": 3,
            "round": 0,
            "checkpoint_dir": tmp_path / "policy",
            "workdir": tmp_path / "sft",  # beside the SFT's own: the cache keys the world
            "split": "test",
            "n_tasks": settings.round_eval_tasks,
        }
    ]


def test_evaluations_cached_before_the_key_named_the_seed_are_adopted_by_their_world(
    tmp_path: Path,
) -> None:
    from distrl_tasks.bench.setup import adopt_unseeded_evaluations
    from distrl_tasks.config import Config
    from distrl_tasks.stages.evaluate import EVAL_DIR, manifest_path, world_key

    def cached(directory: Path, world: str, success: float) -> Path:
        path = manifest_path(directory, "general", "test", "k", "d", f"greedy-{world}")
        path.parent.mkdir(parents=True, exist_ok=True)
        episodes = path.with_name(path.stem + "-episodes.json")
        episodes.write_text("[]")
        manifest = {"success_rate": success, "dynamics": world, "episodes_file": episodes.name}
        path.write_text(json.dumps(manifest))
        return path

    sft, run = tmp_path / "sft-general-0a1b2c3d4e", tmp_path / "general-distrl-s1-5f6a7b8c9d"
    cached(sft, "live", 0.8)  # the bootstrap's, on seed 0's world
    elsewhere = cached(sft / "worlds" / "s2", "live", 0.7)  # another seed's start, kept apart
    cached(run, "hostile", 0.5)  # the run's reference evaluation, on its own seed's world
    static = cached(run, "static", 0.9)  # the static world draws nothing: its key stays
    assert adopt_unseeded_evaluations(tmp_path) == 3
    cfg = Config()

    def key(seed: int, profile: str) -> str:
        sim = dataclasses.replace(
            cfg.sim, seed=seed, dynamics=dataclasses.replace(cfg.sim.dynamics, profile=profile)
        )
        return f"greedy-{world_key(sim)}"

    for directory, seed, profile, success in (
        (sft, 0, "live", 0.8),
        (sft, 2, "live", 0.7),
        (run, 1, "hostile", 0.5),
    ):
        path = manifest_path(directory, "general", "test", "k", "d", key(seed, profile))
        manifest = common.located_paths(json.loads(path.read_text()), path.parent)
        assert manifest["success_rate"] == success and manifest["world"] == f"{profile}-s{seed}"
        assert Path(manifest["episodes_file"]).read_text() == "[]"  # where it was written
    assert not elsewhere.exists() and static.exists() and key(1, "static") == "greedy-static"
    manifests = {p.name for p in (run / EVAL_DIR).glob("*.json") if "episodes" not in p.name}
    assert manifests == {static.name, static.name.replace("-static", "-hostile-s1")}
    assert adopt_unseeded_evaluations(tmp_path) == 0  # idempotent


def test_the_report_from_exports_shows_an_ablation_beside_the_defaults(tmp_path: Path) -> None:
    from distrl_tasks.bench.learning import report_finished
    from distrl_tasks.bench.setup import run_config, sft_key

    settings = dataclasses.replace(
        LearningBenchSettings.smoke(), methods=("distrl", "digirl"), seeds=(0, 1)
    )
    exports, root = tmp_path / "exports", tmp_path / "elsewhere"
    sft_name = f"sft-general-{sft_key(run_config(settings, 'general', latency=False), settings)}"
    sft = an_export(sft_name, None, sft="aa")
    sft.task_set, sft.checkpoint = "general", "aa"
    sft.sft = {"steps": 10, "success": {"round": 0.5, "test": 0.25, "train": 0.5}}
    ex.write_export(exports, sft)
    policy = SFTPolicy("general", root / sft_name, root / sft_name / "absent-policy", 10, {}, "")
    kl = dataclasses.replace(settings, overrides={**settings.overrides, **KL})
    ablation = run_overrides(kl, "distrl", "general")
    assert ablation == {**run_overrides(settings, "distrl", "general"), **KL}
    for s, method, seed, test in (
        (settings, "distrl", 0, 0.5),
        (settings, "distrl", 1, 0.7),
        (settings, "digirl", 0, 0.25),
        (kl, "distrl", 0, 0.1),  # the ablation: same SFT policy, method and seed
        (kl, "distrl", 1, 0.3),
    ):
        name = run_dir(s, method, "general", seed, policy, root).name
        rec = record(method, seed, test, None, task_set="general")  # no overrides recorded
        run = an_export(name, rec, sft="aa", overrides=None if s is settings else ablation)
        run.task_set = "general"
        ex.write_export(exports, run)
    lines: list[str] = []
    table, records = report_finished(settings, root, export_dir=exports, log=lines.append)
    assert lines[0].splitlines()[0] == (
        f"3 of 4 runs finished in {root.resolve()} and {exports} "
        "(and 2 exported under other overrides)"
    )
    # the invocation's own runs, recorded before overrides were, carry its overrides
    # (a synchronous method's leave out the asynchronous learner's keys: it never reads them)
    own = [run_overrides(settings, r.method, "general") for r in records]
    assert [r.overrides for r in records] == own
    by_method = {r.method: r.overrides for r in records}
    assert "orchestration.continuous.finish_reserve_s" in by_method["distrl"]
    assert "orchestration.continuous.finish_reserve_s" not in by_method["digirl"]
    # labelled with what they add to the invocation's own: its rows keep the plain names
    assert table.splitlines()[3:] == [
        "| DistRL | 30.0 ± 7.1 | 60.0 ± 14.1 | – | – |",
        "| DistRL (algorithm.group.kl_coef=0.04) | 10.0 ± 7.1 | 20.0 ± 14.1 | – | – |",
        "| DigiRL | 12.5 ± 0.0 | 25.0 ± 0.0 | – | – |",
    ]
    details = lines[1].splitlines()
    assert [line.split(" | ")[0] for line in details[2:]] == [
        "| DistRL",
        "| DistRL (algorithm.group.kl_coef=0.04)",
        "| DigiRL",
    ]
    assert not root.exists() or not any(root.iterdir())  # nothing ran, nothing written


def test_old_exports_without_overrides_are_never_averaged_with_the_defaults(
    tmp_path: Path,
) -> None:
    from distrl_tasks.bench.learning import report_finished
    from distrl_tasks.bench.setup import run_config, sft_key

    # the committed exports' case: the defaults and an ablation, neither recording overrides
    settings = dataclasses.replace(
        LearningBenchSettings.full(), methods=("gigpo",), task_sets=("webshop",), seeds=(3, 4)
    )  # seeds 0-2 could be named as the committed KL ablation (LEGACY_OVERRIDES knows those)
    kl = dataclasses.replace(settings, overrides=KL)
    exports, root = tmp_path / "exports", tmp_path / "elsewhere"
    sft_name = f"sft-webshop-{sft_key(run_config(settings, 'webshop', latency=False), settings)}"
    sft = an_export(sft_name, None, sft="aa")
    sft.checkpoint = "aa"
    sft.sft = {"steps": 10, "success": {"round": 0.1, "test": 0.2, "train": 0.1}}
    ex.write_export(exports, sft)
    policy = SFTPolicy("webshop", root / sft_name, root / sft_name / "absent-policy", 10, {}, "")
    names = {}
    for s, seed, test in ((settings, 3, 0.4), (settings, 4, 0.2), (kl, 3, 0.1), (kl, 4, 0.3)):
        names[s is kl, seed] = run_dir(s, "gigpo", "webshop", seed, policy, root).name
        written = an_export(names[s is kl, seed], record("gigpo", seed, test))
        path = ex.write_export(exports, written)
        old = json.loads(path.read_text())  # as written then: no defaults generation either
        del old["overrides_generation"], old["record"]["overrides_generation"]
        path.write_text(json.dumps(old))

    table, _ = report_finished(settings, root, export_dir=exports, log=[].append)
    # the defaults' invocation cannot tell the old ablation runs' overrides: each is a row of
    # its own, named by its cache key, and the defaults' row holds the defaults' runs only
    key0, key1 = (ex.cache_key(names[True, seed]) for seed in (3, 4))
    assert table.splitlines()[3:] == sorted(
        [
            "| GiGPO | – | – | 15.0 ± 7.1 | 30.0 ± 14.1 |",
            f"| GiGPO (run={key0}) | – | – | 5.0 ± 0.0 | 10.0 ± 0.0 |",
            f"| GiGPO (run={key1}) | – | – | 15.0 ± 0.0 | 30.0 ± 0.0 |",
        ],
        key=lambda line: (line.count("run="), line),
    )
    # the ablation's invocation knows its own runs, and the defaults' by their names
    table, records = report_finished(kl, root, export_dir=exports, log=[].append)
    assert [r.overrides for r in records] == [KL, KL]
    assert table.splitlines()[3:] == [
        "| GiGPO | – | – | 10.0 ± 7.1 | 20.0 ± 14.1 |",
        "| GiGPO (algorithm.group.kl_coef=(default)) | – | – | 15.0 ± 7.1 | 30.0 ± 14.1 |",
    ]


def test_gemini_settings_name_no_oracle_run() -> None:
    from distrl_tasks.bench.setup import ORACLE_UNREAD_KEYS, _cache_view, run_config

    full = LearningBenchSettings.full()
    sft = SFTPolicy("webshop", Path("/r/sft-webshop-k"), Path("/r/p"), 10, {}, "t")

    def named(overrides: dict) -> str:
        settings = dataclasses.replace(full, overrides=overrides)
        return run_dir(settings, "gigpo", "webshop", 0, sft, Path("/r")).name

    # oracle verdicts read no Gemini key: a new Gemini default keeps the cached runs' names
    view = _cache_view(run_config(full, "webshop", method="gigpo"))
    assert {k: view[k] for k in ORACLE_UNREAD_KEYS} == ORACLE_UNREAD_KEYS
    assert named({"evaluator.model": "another-model"}) == named({})
    gemini = dataclasses.replace(full, overrides={"evaluator.model": "another-model"})
    assert run_overrides(gemini, "gigpo", "webshop") == {}
    # with Gemini verdicts they shape the labels: another model is another run
    judged = {"evaluator.kind": "gemini"}
    assert named({**judged, "evaluator.model": "another-model"}) != named(judged)
