"""The learning benchmark's pure parts against hand-computed values."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
from pathlib import Path

import pytest
from PIL import Image

from distrl_tasks.agents.shipped_base import CARD_FILE, SHIPPED_DIR
from distrl_tasks.bench import records as recs
from distrl_tasks.bench import report as rep
from distrl_tasks.bench.records import RoundPoint, RunRecord
from distrl_tasks.bench.setup import LearningBenchSettings, run_config, sft_key


def record(method: str, seed: int, test: float, train: float = 0.0, **kw) -> RunRecord:
    return RunRecord(
        method=method,
        task_set=kw.pop("task_set", "general"),
        seed=seed,
        budget_s=kw.pop("budget_s", 100.0),
        final={"train": train, "test": test},
        final_round=kw.pop("final_round", 1),
        **kw,
    )


def test_mean_std_is_the_sample_standard_deviation() -> None:
    mean, std = rep.mean_std([0.2, 0.4, 0.6])
    assert mean == pytest.approx(0.4) and std == pytest.approx(0.2)  # sqrt(0.08 / 2)
    assert rep.mean_std([0.7]) == (0.7, 0.0)
    with pytest.raises(ValueError):
        rep.mean_std([])


def test_format_cell_in_percent() -> None:
    assert rep.format_cell([0.25, 0.75]) == "50.0 ± 35.4"  # sd of 25, 75 = 25 * sqrt(2)
    assert rep.format_cell([0.125], std=False) == "12.5"
    assert rep.format_cell([]) == "–"


def test_results_table_has_the_papers_shape() -> None:
    records = [
        record("distrl", 0, test=0.50, train=0.60),
        record("distrl", 1, test=0.30, train=0.40),
        record("digirl", 0, test=0.25, train=0.25),
        record("digirl", 0, test=0.10, train=0.20, task_set="webshop"),
    ]
    sft = {("general", "train"): [0.1], ("general", "test"): [0.05], ("webshop", "test"): [0.0]}
    lines = rep.results_table(records, sft, ["distrl", "digirl", "filtered_bc"]).splitlines()
    assert lines[0] == ("| Method | General train | General test | WebShop train | WebShop test |")
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[2] == "| SFT | 10.0 | 5.0 | – | 0.0 |"
    # the start measured on two seeds' worlds: its spread is the worlds'
    sft[("general", "test")] = [0.05, 0.15]
    assert (
        rep.results_table(records, sft, []).splitlines()[2]
        == "| SFT | 10.0 | 10.0 ± 7.1 | – | 0.0 |"
    )
    assert lines[3] == "| DistRL | 50.0 ± 14.1 | 40.0 ± 14.1 | – | – |"
    assert lines[4] == "| DigiRL | 25.0 ± 0.0 | 25.0 ± 0.0 | 20.0 ± 0.0 | 10.0 ± 0.0 |"
    assert lines[5] == "| Filtered BC | – | – | – | – |"


def test_step_functions_and_cumulative_counts() -> None:
    points = [(10.0, 0.5), (0.0, 0.1), (20.0, 0.9)]
    assert recs.step_at(points, -1.0, initial=0.05) == 0.05
    assert recs.step_at(points, 0.0) == 0.1
    assert recs.step_at(points, 19.9) == 0.5
    assert recs.step_at(points, 20.0) == 0.9
    assert recs.cumulative([(5.0, 4), (1.0, 2), (9.0, 4)]) == [(1.0, 2.0), (5.0, 6.0), (9.0, 10.0)]
    r = record("distrl", 0, 0.0, collections=[(5.0, 4), (1.0, 2), (120.0, 4)])
    assert recs.trajectories_at(r, 0.5) == 0 and recs.trajectories_at(r, 100.0) == 6


def test_curves_average_over_seeds() -> None:
    a = record("distrl", 0, 0, rounds=[RoundPoint(1, 10.0, 5.0, 4, 0.5)])
    b = record("distrl", 1, 0, rounds=[RoundPoint(1, 20.0, 5.0, 4, 0.3)])
    mean, std = recs.curve([a, b], [0.0, 10.0, 20.0], "success", initial=0.1)
    assert mean.tolist() == pytest.approx([0.1, 0.3, 0.4])  # (0.5+0.1)/2, (0.5+0.3)/2
    assert std.tolist() == pytest.approx([0.0, math.sqrt(0.08), math.sqrt(0.02)])
    one, zero = recs.curve([a], [0.0, 10.0], "success")
    assert one.tolist() == [0.0, 0.5] and zero.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        recs.curve([a], [0.0], "loss")


def test_rounds_in_budget_and_json_round_trip() -> None:
    r = record(
        "digirl",
        2,
        0.25,
        rounds=[RoundPoint(1, 50.0, 20.0, 8, 0.0), RoundPoint(2, 120.0, 70.0, 8, 0.25)],
        collections=[(20.0, 8), (70.0, 8)],
    )
    assert r.rounds_in_budget == 1
    assert RunRecord.from_dict(r.to_dict()) == r


def test_online_updates_count_the_steps_after_round_0_up_to_the_evaluated_round() -> None:
    points = [RoundPoint(0, 30.0, 10.0, 0, 0.2, 74), RoundPoint(1, 60.0, 40.0, 8, 0.2, 99)]
    points.append(RoundPoint(2, 130.0, 90.0, 8, 0.3, 124))  # past the budget: not evaluated
    r = record("digirl", 0, 0.3, rounds=points, final_round=1)
    assert r.online_updates == 99 - 74
    assert record("digirl", 0, 0.3, rounds=points, final_round=0).online_updates == 0
    old = [RoundPoint(0, 30.0, 10.0, 0, 0.2), RoundPoint(1, 60.0, 40.0, 8, 0.2)]
    assert record("digirl", 0, 0.3, rounds=old, final_round=1).online_updates is None
    assert RunRecord.from_dict(r.to_dict()) == r


def test_cached_records_get_their_steps_from_the_train_manifests(tmp_path) -> None:
    from distrl_tasks.bench.learning import _with_steps
    from distrl_tasks.stages.common import write_manifest

    write_manifest(tmp_path, 0, "train", {"steps": 58})
    write_manifest(tmp_path, 1, "train", {"steps": 83})
    old = [RoundPoint(r, 10.0 * r, 5.0 * r, 8, 0.2) for r in (0, 1, 2)]  # round 2's is gone
    r = _with_steps(record("distrl", 0, 0.3, rounds=old, final_round=1), tmp_path)
    assert [p.steps for p in r.rounds] == [58, 83, None]
    assert r.online_updates == 25


def test_targets_by_hand() -> None:
    def run(method: str, seed: int, test: float, trajectories: int) -> RunRecord:
        return record(method, seed, test, collections=[(50.0, trajectories), (150.0, 99)])

    records = [
        run("distrl", 0, 0.40, 30),
        run("distrl", 1, 0.30, 20),  # mean 0.35, 25 trajectories by the budget
        run("digirl", 0, 0.20, 10),
        run("filtered_bc", 0, 0.52, 10),
    ]
    sft = {("general", "test", 0): 0.2}  # a gap of 80 points to the expert, on every seed
    best, every, equal_time, ratio = rep.evaluate_targets(records, sft, 100.0)
    # closed: DistRL (0.35 - 0.2) / 0.8 = 19%, DigiRL 0%, Filtered BC 40%
    assert "DistRL +19%" in best.detail and "DigiRL +0%" in best.detail
    assert "Filtered BC +40%" in best.detail and "SFT 20.0% on seeds 0)" in best.detail
    assert best.met is False and every.met is False
    assert equal_time.met is True and "35.0% vs 20.0%" in equal_time.detail
    assert ratio.met is True and "2.50x" in ratio.detail
    strong = [run("distrl", 0, 0.70, 30), run("digirl", 0, 0.45, 10)]  # closes 62.5% and 31%
    best, every, _, _ = rep.evaluate_targets(strong, sft, 100.0)
    assert (best.met, every.met) == (True, True)
    worse = [run("distrl", 0, 0.10, 20), run("digirl", 0, 0.20, 10)]
    best, every, equal_time, ratio = rep.evaluate_targets(worse, sft, 100.0)
    assert (best.met, every.met, equal_time.met, ratio.met) == (False, False, False, False)
    assert "2.00x" in ratio.detail and "DistRL -12%" in best.detail
    # each seed's gap from the start on its own world: seed 1's start solved 0.30, so DistRL
    # closes (0.35 - 0.25) / 0.75 = 13% (against seed 0's start alone it would be 19%)
    worlds = {("general", "test", 0): 0.2, ("general", "test", 1): 0.3}
    best = rep.evaluate_targets(records, worlds, 100.0)[0]
    assert "DistRL +13%" in best.detail and "SFT 20.0/30.0% on seeds 0,1" in best.detail
    assert "DigiRL +0%" in best.detail  # its one run is seed 0's
    only = rep.evaluate_targets([run("digirl", 0, 0.2, 10)], {}, 100.0)
    assert [t.met for t in only] == [None, None, None, None]
    assert only[0].verdict == "not measured"


def section(body: str) -> str:
    return f"{rep.START_MARK}\n{body}\n{rep.END_MARK}\n"


def test_results_section_is_appended_then_replaced_in_place() -> None:
    original = "# Benchmark results\n\n## Other\n\ntext\n"
    once = rep.replace_section(original, section("first"))
    assert once == original + "\n" + section("first")
    twice = rep.replace_section(once, section("second"))
    assert twice.count(rep.START_MARK) == 1 and twice.count(rep.END_MARK) == 1
    assert "first" not in twice and twice == original + "\n" + section("second")
    middle = "# R\n\n" + section("old") + "\n## After\n\nkept\n"
    assert rep.replace_section(middle, section("new")) == (
        "# R\n\n" + section("new") + "\n## After\n\nkept\n"
    )
    assert rep.replace_section("", section("x")) == section("x")
    with pytest.raises(ValueError):
        rep.replace_section(original, "no markers")


def test_results_section_and_plots(tmp_path) -> None:
    def points(method: str, seed: int) -> list[RoundPoint]:
        if method == "distrl":  # steps not recorded
            return [RoundPoint(1, 40.0, 10.0, 4, 0.25), RoundPoint(2, 90.0, 60.0, 4, 0.5)]
        end = 30 + 20 * seed  # online updates 20 and 40
        return [RoundPoint(0, 5.0, 1.0, 0, 0.1, 10), RoundPoint(1, 40.0, 10.0, 8, 0.25, end)]

    runs = [
        record(
            method,
            seed,
            0.1,
            rounds=points(method, seed),
            collections=[(10.0, 4), (60.0, 4)],
        )
        for method in ("distrl", "digirl")
        for seed in (0, 1)
    ]
    plots = rep.plot_curves(runs, {"general": 0.0}, ["distrl", "digirl"], tmp_path / "p", 100.0)
    assert sorted(p.name for p in plots) == [
        "learning_success_general.png",
        "learning_trajectories_general.png",
    ]
    for p in plots:
        with Image.open(p) as img:
            img.verify()
    text = rep.results_section(
        table="TABLE",
        details=rep.run_details_table(runs, ["distrl", "digirl"]),
        targets=rep.evaluate_targets(runs, {("general", "test", 0): 0.0}, 100.0),
        plots=plots,
        results_dir=tmp_path,
        settings_lines=["budget 100 s"],
        machine={"nproc": 2, "cpu": "cpu", "python": "3.11", "torch": "2"},
        date="2026-01-01",
        command="distrl bench learning --smoke",
        wall_s=90.0,
    )
    assert text.startswith(rep.START_MARK) and text.rstrip().endswith(rep.END_MARK)
    assert "](p/learning_success_general.png)" in text and "- budget 100 s" in text
    assert "| DistRL | General | 2 | 2.0 ± 0.0 | 8 ± 0 | n/a | 1, 1 | 0 ± 0 |" in text
    assert "| DigiRL | General | 2 | 2.0 ± 0.0 | 8 ± 0 | 30 ± 14 | 1, 1 | 0 ± 0 |" in text


def test_presets_and_run_config() -> None:
    full, smoke = LearningBenchSettings.full(), LearningBenchSettings.smoke()
    assert full.methods == ("distrl", "digirl", "filtered_bc", "grpo", "gigpo")
    assert smoke.methods == ("distrl", "digirl", "filtered_bc") and len(full.seeds) == 3
    assert full.task_sets == ("general", "webshop") and full.eval_test == 96
    assert smoke.budget_s < full.budget_s and smoke.preset == "smoke"
    cfg = run_config(smoke, "webshop", method="digirl", seed=2)
    assert cfg.algorithm.name == "digirl" and not cfg.orchestration.asynchronous
    assert cfg.env.task_set == "webshop" and cfg.sim.seed == 2 and cfg.sim.latency.enabled
    assert cfg.orchestration.devices_per_worker == smoke.devices
    assert cfg.algorithm.actor_epochs == smoke.overrides["algorithm.actor_epochs"]
    distrl = run_config(full, "general", method="distrl", latency=False)
    assert distrl.orchestration.asynchronous and not distrl.sim.latency.enabled
    with pytest.raises(ValueError, match="methods"):
        LearningBenchSettings(methods=("ppo",))
    with pytest.raises(ValueError, match="seeds"):
        LearningBenchSettings(seeds=(1, 1))


def test_sft_cache_key_ignores_rl_settings_only() -> None:
    smoke = LearningBenchSettings.smoke()
    base = run_config(smoke, "general", latency=False)
    key = sft_key(base, smoke)
    signed = dataclasses.replace(base.algorithm.distrl, advantage="signed")
    rl = dataclasses.replace(base.algorithm, lm_lr=3e-5, distrl=signed)
    assert sft_key(dataclasses.replace(base, algorithm=rl), smoke) == key
    # the continuous learner acts after the bootstrap: its settings keep the SFT start too
    cont = dataclasses.replace(base.orchestration.continuous, replay_ratio=0.05)
    orch = dataclasses.replace(base.orchestration, continuous=cont)
    assert sft_key(dataclasses.replace(base, orchestration=orch), smoke) == key
    fewer = dataclasses.replace(base.orchestration, devices_per_worker=3)  # it collects on these
    assert sft_key(dataclasses.replace(base, orchestration=fewer), smoke) != key
    faster = dataclasses.replace(base.agent.sft, lr=base.agent.sft.lr * 2)
    sft = dataclasses.replace(base.agent, sft=faster)
    assert sft_key(dataclasses.replace(base, agent=sft), smoke) != key
    assert sft_key(base, dataclasses.replace(smoke, sft_steps=7)) != key
    assert sft_key(run_config(smoke, "webshop", latency=False), smoke) != key


def test_sft_cache_key_names_the_base_by_its_card(tmp_path: Path) -> None:
    """A rebuilt base under the same setting is another start: its card differs, so does the key."""
    smoke = LearningBenchSettings.smoke()
    base = run_config(smoke, "general", latency=False)
    shutil.copytree(SHIPPED_DIR, tmp_path / "base")

    def key_for(directory: Path) -> str:
        agent = dataclasses.replace(base.agent, base_checkpoint=str(directory))
        return sft_key(dataclasses.replace(base, agent=agent), smoke)

    before = key_for(tmp_path / "base")
    assert key_for(tmp_path / "base") == before
    card = json.loads((tmp_path / "base" / CARD_FILE).read_text())
    card["training"]["steps"] += 1
    (tmp_path / "base" / CARD_FILE).write_text(json.dumps(card))
    assert key_for(tmp_path / "base") != before


def test_a_new_key_at_its_neutral_value_keeps_cached_runs() -> None:
    from distrl_tasks.bench.setup import (
        NEUTRAL_NEW_KEYS,
        ORACLE_UNREAD_KEYS,
        RETIRED_HASHED,
        STORAGE_KEYS,
        _cache_view,
        _digest,
    )

    smoke = LearningBenchSettings.smoke()
    default = run_config(smoke, "general", latency=False)
    # agent.goal_typing's default (on) is a new behaviour: it names new runs, while a config
    # from before the key (the rule off) keeps the cached runs' key
    assert _cache_view(default)["agent.goal_typing"] is True
    # ... and so does the round learner, DistRL's default before its continuous learner
    rounds = dataclasses.replace(default.orchestration.continuous, replay_ratio=0.0)
    # ... and the bootstrap's cloning of unfinished expert runs, off before its key
    assert _cache_view(default)["agent.sft.unfinished_demos"] is True
    sft = dataclasses.replace(default.agent.sft, unfinished_demos=False)
    base = dataclasses.replace(
        default,
        agent=dataclasses.replace(default.agent, goal_typing=False, sft=sft),
        orchestration=dataclasses.replace(default.orchestration, continuous=rounds),
    )
    assert base.env.prompt_history == NEUTRAL_NEW_KEYS["env.prompt_history"]
    # with free decoding the rule acts on nothing, so the default keeps free-decoding runs' key
    free = dataclasses.replace(default.agent, constrained_decoding=False)
    assert "agent.goal_typing" not in _cache_view(dataclasses.replace(default, agent=free))
    # The key of a config that predates the new key is the key of the same config today.
    skip = set(NEUTRAL_NEW_KEYS) | STORAGE_KEYS
    before = {k: v for k, v in base.to_flat_dict().items() if k not in skip}
    before |= ORACLE_UNREAD_KEYS  # oracle verdicts: the Gemini keys at the cached runs' values
    before |= RETIRED_HASHED  # retired keys: still hashed, at the values the cached runs had
    assert _cache_view(base) == before
    assert _digest(_cache_view(base)) == _digest(before)
    # a mode's key stays out while the mode is off, and counts once it is on
    assert "orchestration.continuous.finish_reserve_s" not in _cache_view(base)
    # (the smoke preset runs its learner as a thread; the process is the default's)
    cont = dataclasses.replace(
        base.orchestration.continuous, replay_ratio=0.02, learner_process=True
    )
    on = dataclasses.replace(
        base, orchestration=dataclasses.replace(base.orchestration, continuous=cont)
    )
    reserve = on.orchestration.continuous.finish_reserve_s
    assert _cache_view(on)["orchestration.continuous.finish_reserve_s"] == reserve != 0.0
    # in its process (the default) the learner counts; as a thread it keeps the older runs' key
    assert _cache_view(on)["orchestration.continuous.learner_process"] is True
    thread = dataclasses.replace(cont, learner_process=False)
    as_thread = dataclasses.replace(
        base, orchestration=dataclasses.replace(base.orchestration, continuous=thread)
    )
    assert "orchestration.continuous.learner_process" not in _cache_view(as_thread)
    two = dataclasses.replace(base, env=dataclasses.replace(base.env, prompt_history=2))
    assert _cache_view(two)["env.prompt_history"] == 2
    assert sft_key(two, smoke) != sft_key(base, smoke)
    # how many learner states stay on disk never names a result
    keep_all = dataclasses.replace(
        base, algorithm=dataclasses.replace(base.algorithm, keep_states=0)
    )
    assert _cache_view(keep_all) == _cache_view(base)
    keep_downloads = dataclasses.replace(
        base, tracking=dataclasses.replace(base.tracking, keep_downloads=0)
    )
    assert _cache_view(keep_downloads) == _cache_view(base)
    assert sft_key(keep_downloads, smoke) == sft_key(base, smoke)
    keep_rounds = dataclasses.replace(
        base, tracking=dataclasses.replace(base.tracking, keep_checkpoints=0)
    )
    assert _cache_view(keep_rounds) == _cache_view(base)


def test_cli_flags_become_settings() -> None:
    from distrl_tasks.cli.bench import plots_dir_from_args, settings_from_args
    from distrl_tasks.cli.main import build_parser

    argv = "bench learning --smoke --seeds 2 --methods distrl,digirl --budget-s 45"
    args = build_parser().parse_args(
        [*argv.split(), "--set", "algorithm.actor_epochs=3", "--no-results"]
    )
    s = settings_from_args(args)
    assert s.seeds == (0, 1) and s.methods == ("distrl", "digirl") and s.budget_s == 45.0
    assert s.overrides["algorithm.actor_epochs"] == 3 and s.preset == "smoke+flags"
    assert s.overrides["algorithm.batch_size"] == 2  # the preset's other overrides stay
    assert args.no_results
    # a partial run's curves stay in its workdir; the tree's plots match the committed record
    assert plots_dir_from_args(args) == str(Path("runs/learning-bench") / "plots")
    assert plots_dir_from_args(build_parser().parse_args(argv.split())) == "benchmarks/plots"
    chosen = build_parser().parse_args([*argv.split(), "--no-results", "--plots-dir", "p"])
    assert plots_dir_from_args(chosen) == "p"
    full = settings_from_args(argparse.Namespace(**{**vars(args), "smoke": False}))
    assert full.task_sets == ("general", "webshop")


def test_ablation_arms_force_collection_and_pick_the_lr_by_train_success() -> None:
    from distrl_tasks.bench.ablation import ArmResult, ablation_table, arm_settings, arms
    from distrl_tasks.bench.records import RunRecord

    all_arms = arms()
    assert len([a for a in all_arms if a.part == "factorial"]) == 6
    names = {a.name for a in all_arms if a.part == "variants"}
    assert {"distrl-signed", "distrl-unfiltered", "distrl-no_prefit", "distrl-windows_32"} <= names
    smoke = LearningBenchSettings.smoke()
    sync_distrl = next(a for a in all_arms if a.name == "distrl-sync")
    settings = arm_settings(smoke, sync_distrl, 3e-5)
    cfg = run_config(settings, "general", method="distrl")
    assert not cfg.orchestration.asynchronous and cfg.algorithm.lm_lr == 3e-5
    async_fbc = next(a for a in all_arms if a.name == "filtered_bc-async")
    cfg = run_config(arm_settings(smoke, async_fbc, 1e-5), "general", method="filtered_bc")
    assert cfg.orchestration.asynchronous and cfg.algorithm.name == "filtered_bc"
    signed = next(a for a in all_arms if a.name == "distrl-signed")
    cfg = run_config(arm_settings(smoke, signed, 1e-5), "general", method="distrl")
    assert cfg.algorithm.distrl.advantage == "signed"

    def rec(train: float, test: float, steps: int | None = None) -> RunRecord:
        points = [RoundPoint(0, 5.0, 1.0, 0, 0.0, 10), RoundPoint(1, 9.0, 4.0, 8, 0.0, steps)]
        rounds = points if steps is not None else []
        return RunRecord("distrl", "general", 0, 20.0, {"train": train, "test": test}, 1, rounds)

    # the test split is better at 1e-5, but train success picks 3e-5
    res = ArmResult(signed, {1e-5: [rec(0.2, 0.9)], 3e-5: [rec(0.4, 0.1, 40), rec(0.4, 0.1, 50)]})
    assert res.best_lr == 3e-5 and res.summary()["test_mean"] == 0.1
    assert res.summary()["updates"] == 35.0  # (30 + 40) / 2 online updates
    table = ablation_table([res], {"general": 0.25})
    assert "distrl-signed" in table and "| 3e-05 |" in table and "10.0%" in table
    assert "| 2.0 | 35 | 1e-05: 20.0% / 90.0%, 3e-05: 40.0% / 10.0% |" in table  # every rate
    unknown = ArmResult(signed, {1e-5: [rec(0.2, 0.9)]})  # no steps recorded
    assert "| 0.0 | n/a | 1e-05" in ablation_table([unknown], {"general": 0.25})
    with pytest.raises(ValueError, match="parts"):
        arms(["bogus"])


def test_factorial_ratios_by_hand() -> None:
    from distrl_tasks.bench.ablation import ArmResult, ablation_table, arms, factorial_ratios

    by_name = {a.name: a for a in arms()}

    def run(trajs: int, steps: int) -> RunRecord:
        points = [RoundPoint(0, 5.0, 1.0, 0, 0.0, 20), RoundPoint(1, 9.0, 4.0, trajs, 0.0, steps)]
        return record("digirl", 0, 0.3, 0.5, rounds=points, collections=[(4.0, trajs)])

    results = [
        ArmResult(by_name["digirl-async"], {1e-5: [run(240, 170)]}),  # 240 trajs, 150 updates
        ArmResult(by_name["digirl-sync"], {1e-5: [run(100, 95)]}),  # 100 trajs, 75 updates
        ArmResult(by_name["distrl-async"], {1e-5: [run(50, 30)]}),  # no sync arm: no line
    ]
    assert factorial_ratios(results) == [
        "- digirl, asynchronous / synchronous: trajectories 240 / 100 (2.40x; target >= 2.4x); "
        "online updates 150 / 75 (2.00x; target >= 2x)"
    ]
    assert ablation_table(results, {"general": 0.2}).endswith(factorial_ratios(results)[0])


def test_ablation_runs_in_parts_by_arm_name() -> None:
    from distrl_tasks.bench.ablation import _section, arms
    from distrl_tasks.cli.bench import run_ablation_command
    from distrl_tasks.cli.main import build_parser
    from distrl_tasks.config import ConfigError

    picked = arms(["variants"], ["distrl-windows_32", "distrl-configured"])
    assert [a.name for a in picked] == ["distrl-configured", "distrl-windows_32"]  # fixed order
    assert picked[1].overrides == {"algorithm.distrl.windows": 32}
    assert len(arms(["factorial", "variants"], None)) == 15
    section = _section("TABLE", LearningBenchSettings.smoke(), (1e-5,), picked, "cmd", 60.0)
    assert "2 of the 15 arms (distrl-configured, distrl-windows_32)" in section
    assert "lm_lr 1e-05 only (no learning-rate search)" in section and "TABLE" in section
    with pytest.raises(ValueError, match="distrl-windows_32"):  # a variant is not a factorial arm
        arms(["factorial"], ["distrl-windows_32"])
    with pytest.raises(ValueError, match="arms must be"):
        arms(["variants"], [])
    args = build_parser().parse_args(
        ["bench", "ablation", "--smoke", "--parts", "variants", "--arms", "distrl-windws_32"]
    )
    assert args.arms == ("distrl-windws_32",)
    with pytest.raises(ConfigError, match="distrl-windws_32"):  # stops before any run starts
        run_ablation_command(args)


def test_settings_lines_describe_round_0_and_the_aride_form() -> None:
    from distrl_tasks.bench.describe import describe_settings

    smoke = LearningBenchSettings.smoke()
    cfg = run_config(smoke, "general", method="distrl")
    text = "\n".join(describe_settings(smoke, {"general": 7}, cfg.algorithm, 4))
    p = cfg.algorithm.critic_prefit
    a = cfg.algorithm
    assert (
        f"a critic pre-fit (output bias at the mean target, then critic-only steps until the "
        f"loss plateaus, {p.min_steps}-{p.max_steps} steps), then {a.offline_critic_steps} "
        f"critic-only and {a.offline_actor_steps} actor steps" in text
    )
    assert f"{a.distrl.windows} windows per optimizer step" in text
    assert f"advantage `{a.distrl.advantage}`" in text
    assert "expert demonstrations recorded in the `live` world" in text
    off = dataclasses.replace(a, critic_prefit=dataclasses.replace(p, enabled=False))
    text = "\n".join(describe_settings(smoke, {"general": 7}, off, 4))
    assert "pre-fit" not in text and f"then {a.offline_critic_steps} critic-only" in text


def _per_family(**families: tuple[int, int]) -> dict:
    """An evaluate manifest's ``per_family``: family=(successes, episodes)."""
    return {
        f: {"episodes": n, "success_rate": s / n, "mean_steps": 3.0}
        for f, (s, n) in families.items()
    }


def test_family_tally_sums_seeds_and_refuses_other_goals() -> None:
    from distrl_tasks.bench.families import FamilyTally

    tally = FamilyTally()
    tally.add(_per_family(web_search=(5, 6), set_alarm=(0, 3)))
    tally.add(_per_family(web_search=(6, 6), set_alarm=(1, 3)))
    assert tally.evaluations == 2
    assert tally.families == {"web_search": [11, 12], "set_alarm": [1, 6]}
    assert tally.goals("web_search") == 6 and tally.goals("set_alarm") == 3
    assert tally.per_evaluation("web_search") == 5.5
    assert tally.per_evaluation() == 6.0  # (11 + 1) / 2
    with pytest.raises(ValueError, match="other goals"):
        tally.add(_per_family(web_search=(1, 5), set_alarm=(0, 3)))
    assert tally.evaluations == 2  # the refused evaluation added nothing


def test_family_table_by_hand() -> None:
    from distrl_tasks.bench.families import SFT, FamilyTally, family_table, family_tables

    counts = {}
    for key, evaluations in {
        (SFT, "general"): [dict(web_search=(5, 6), set_alarm=(0, 3), open_app=(1, 3))],
        ("distrl", "general"): [
            dict(web_search=(6, 6), set_alarm=(1, 3), open_app=(0, 3)),
            dict(web_search=(5, 6), set_alarm=(2, 3), open_app=(0, 3)),
        ],
    }.items():
        counts[key] = FamilyTally()
        for e in evaluations:
            counts[key].add(_per_family(**e))
    table = family_table(counts, ["distrl", "digirl"], "general")
    assert table.splitlines() == [
        "| General family (goals) | SFT | DistRL |",  # DigiRL has no finished run: no column
        "|---|---|---|",
        "| web_search (6) | 5 | 5.5 |",
        "| open_app (3) | 1 | 0 |",  # ties on goals go by name
        "| set_alarm (3) | 0 | 1.5 |",
        "| all (12) | 6 | 7 |",
    ]
    both = family_tables(counts, ["distrl"], ["general", "webshop"])
    assert both.startswith("Goals solved per family") and table in both
    assert "WebShop" not in both  # no counts for it: left out
    with pytest.raises(ValueError, match="no per-family counts"):
        family_table(counts, ["distrl"], "webshop")
    counts[("digirl", "general")] = FamilyTally()
    counts[("digirl", "general")].add(_per_family(web_search=(1, 5)))
    with pytest.raises(ValueError, match="digirl on general scored other goals"):
        family_table(counts, ["distrl", "digirl"], "general")


def test_moved_keys_are_hashed_under_their_old_names() -> None:
    # keys moved into sections (issue 54) keep the digests of the runs cached before the move
    from distrl_tasks.bench.setup import _cache_view, _hashed
    from distrl_tasks.config import MOVED_KEYS

    view = _cache_view(run_config(LearningBenchSettings.smoke(), "general", latency=False))
    hashed = _hashed(view)
    assert hashed["agent.sft_lr"] == view["agent.sft.lr"]
    assert hashed["algorithm.priority_alpha"] == view["algorithm.distrl.priority_alpha"]
    assert not set(MOVED_KEYS.values()) & set(hashed)
    assert len(hashed) == len(view)


def test_retired_keys_are_hashed_at_the_values_cached_runs_had() -> None:
    # the elements observation's keys are gone from the config, but runs cached while they
    # existed hashed them (the mode off): the view still holds them, so those runs stay found
    from distrl_tasks.bench.setup import _cache_view
    from distrl_tasks.config import RETIRED_KEYS

    cfg = run_config(LearningBenchSettings.smoke(), "general", latency=False)
    assert not set(RETIRED_KEYS) & set(cfg.to_flat_dict())
    view = _cache_view(cfg)
    assert view["agent.observation"] == "screenshot" and view["agent.observation_elements"] == 6
    assert view["agent.pretrain.copy_word_ends"] is False  # the option's default while it lived
    assert set(RETIRED_KEYS) <= set(view)


def test_a_new_measurement_goes_to_a_dated_record_not_the_current_table(tmp_path) -> None:
    from distrl_tasks.bench import report as rep

    path = rep.dated_record("learning-benchmark", "2026-11-28", root=tmp_path)
    assert path == tmp_path / "2026-11-28-learning-benchmark.md"
    first = f"{rep.START_MARK}\nfirst\n{rep.END_MARK}"
    rep.write_record(path, first)
    assert path.read_text() == f"# 2026-11-28-learning-benchmark\n\n{first}\n"
    rep.write_record(path, f"{rep.START_MARK}\nsecond\n{rep.END_MARK}")  # the same day, again
    text = path.read_text()
    assert "second" in text and "first" not in text and text.count(rep.START_MARK) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left
