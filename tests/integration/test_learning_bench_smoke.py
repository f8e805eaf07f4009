"""The learning benchmark's machinery end to end on the smoke preset (not its numbers).

A real SFT bootstrap, three methods' runs through the pipeline on a simulator farm, the final
evaluations, the table, the PNGs, MLflow's store and the RESULTS.md section (in a temporary copy
of the real file, never the file itself).
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest
from PIL import Image

from distrl_tasks.bench import report as rep
from distrl_tasks.bench.export import current_commit, read_export, write_export
from distrl_tasks.bench.families import final_family_counts
from distrl_tasks.bench.learning import (
    EXPERIMENT,
    LearningBenchSettings,
    build_starts,
    report_finished,
    run_benchmark,
    sft_on_worlds,
)
from distrl_tasks.bench.profiles import SFT
from distrl_tasks.bench.setup import run_dir, run_overrides

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_smoke_benchmark_produces_table_plots_mlflow_and_results_section(tmp_path) -> None:
    from mlflow import MlflowClient

    # the real file minus any recorded section: the smoke run must append one, touching nothing
    real = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    if rep.START_MARK in real:
        head, rest = real.split(rep.START_MARK, 1)
        real = head + rest.split(rep.END_MARK, 1)[1]
    results = tmp_path / "RESULTS.md"
    results.write_text(real)
    before = results.read_text()
    settings = LearningBenchSettings.smoke()
    lines: list[str] = []
    kwargs = dict(
        workdir=tmp_path / "bench",
        results_file=results,
        plots_dir=tmp_path / "plots",
        command="distrl bench learning --smoke",
        export_dir=tmp_path / "exports",
        log=lines.append,
    )
    started = time.perf_counter()
    out = run_benchmark(settings, **kwargs)
    first_s = time.perf_counter() - started

    # the table: papers' Table 1 shape, SFT row + 3 methods, 4 columns, percentages
    rows = [line for line in out.table.splitlines() if line.startswith("| ")]
    assert rows[0] == "| Method | General train | General test | WebShop train | WebShop test |"
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["SFT", "DistRL", "DigiRL", "Filtered BC"]
    for row in rows[1:]:
        cells = [c.strip() for c in row.split("|")[2:-1]]
        assert len(cells) == 4
        for cell in cells[:2]:  # General was run
            values = [float(v) for v in re.findall(r"\d+\.\d", cell)]
            assert values and all(0.0 <= v <= 100.0 for v in values), row
        assert cells[2:] == ["–", "–"]  # WebShop was not run by the smoke preset
    assert len(out.records) == 3 and {r.method for r in out.records} == set(settings.methods)
    for r in out.records:
        assert r.rounds and r.collections and set(r.final) == {"train", "test"}
        assert all(0.0 <= v <= 1.0 for v in r.final.values())
    assert [t.verdict for t in out.targets][2] != "not measured"  # DistRL and DigiRL both ran
    # a finished run keeps the local policy of its evaluated round (and at most the newest):
    # the registry holds the others
    for r in out.records:
        run = run_dir(
            settings, r.method, r.task_set, r.seed, out.sft[r.task_set], kwargs["workdir"]
        )
        kept = sorted(p.name for p in (run / "runs" / "checkpoints").iterdir())
        assert f"r{r.final_round:06d}" in kept and len(kept) <= 2, (r.method, kept)

    # PNGs
    names = sorted(p.name for p in out.plots)
    assert names == ["learning_success_general.png", "learning_trajectories_general.png"]
    for p in out.plots:
        with Image.open(p) as img:
            img.verify()
            assert img.format == "PNG"

    # MLflow: one parent run, one nested run per (method, task set, seed) with metrics
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'bench' / 'runs' / 'mlflow.db'}")
    exp = client.get_experiment_by_name(EXPERIMENT)
    parent = client.get_run(out.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.params["budget_s"] == str(settings.budget_s)
    children = client.search_runs(
        [exp.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{out.parent_run_id}'"
    )
    assert sorted(c.data.tags["method"] for c in children) == sorted(settings.methods)
    for child in children:
        assert child.info.status == "FINISHED"
        assert {"eval/final_test_success", "eval/success_rate", "perf/wall_s"} <= set(
            child.data.metrics
        )
        history = client.get_metric_history(child.info.run_id, "rollout/trajectories_cum")
        # round numbers: the offline phase (the default off2on mode) is round 0, then the
        # online rounds (async rounds may skip merged ones)
        steps = [m.step for m in history]
        assert steps[:2] == [0, 1] and steps == sorted(set(steps))
    artifacts = {a.path for a in client.list_artifacts(out.parent_run_id, "learning_benchmark")}
    assert "learning_benchmark/records.json" in artifacts
    assert "learning_benchmark/learning_success_general.png" in artifacts

    # RESULTS.md: the section added to the copy, the rest untouched
    text = results.read_text()
    assert text.startswith(before.rstrip("\n"))
    assert text.count(rep.START_MARK) == 1 and out.table in text
    assert "`nproc` =" in text and "Targets:" in text

    # a second invocation reuses the finished runs and replaces the section, not duplicates it
    again = run_benchmark(settings, **kwargs)
    assert [r.to_dict() for r in again.records] == [r.to_dict() for r in out.records]
    text = results.read_text()
    assert text.count(rep.START_MARK) == 1 and text.count(rep.END_MARK) == 1
    assert any("finished before: reusing" in line for line in lines)

    # the finished-runs report: the same table from the cache, nothing run or written
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "bench").rglob("*") if p.is_file()}
    table, records = report_finished(settings, tmp_path / "bench", log=lines.append)
    assert table == out.table and len(records) == 3
    assert any(line.startswith("3 of 3 runs finished") for line in lines)
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    # the starts alone (``--starts-only``): read from the cache, logged, nothing rebuilt
    starts = build_starts(
        settings, tmp_path / "bench", export_dir=kwargs["export_dir"], log=lines.append
    )
    assert {ts: p.success for ts, p in starts.items()} == {
        ts: p.success for ts, p in out.sft.items()
    }
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
    assert any(line.startswith("[start] general: sft-general-") for line in lines)
    # the goals solved per family come from the cached final evaluations and add up to them
    printed = "\n".join(lines).splitlines()
    assert not any(line.startswith("[families]") for line in printed)  # nothing re-evaluated
    start = printed.index("| General family (goals) | SFT | DistRL | DigiRL | Filtered BC |")
    total = next(line for line in printed[start:] if line.startswith("| all ("))
    goals, *solved = (float(v) for v in re.findall(r"\d+(?:\.\d)?", total))
    assert goals == settings.eval_test
    finals = [out.sft["general"].success["test"]] + [r.final["test"] for r in out.records]
    assert solved == pytest.approx([goals * f for f in finals]), total
    assert out.section.count("| General family (goals) |") == 1  # in the RESULTS section too
    assert report_finished(settings, tmp_path / "nothing-here", log=lines.append)[1] == []
    # a second seed's start: the SFT policy evaluated on that seed's world, once, cached beside
    # seed 0's under a key that names the world
    two = dataclasses.replace(settings, seeds=(0, 1))
    starts = sft_on_worlds(two, out.sft)
    sft_dir = out.sft["general"].workdir
    assert starts[("general", "test", 0)] == out.sft["general"].success["test"]
    assert set(starts) == {("general", sp, s) for sp in ("train", "test") for s in (0, 1)}
    assert all(0.0 <= v <= 1.0 for v in starts.values())
    seed_one = list((sft_dir / "runs" / "eval").glob("*-test-*-live-s1.json"))
    assert seed_one and '"success_rate"' in seed_one[0].read_text()
    stamp = seed_one[0].stat().st_mtime_ns
    assert sft_on_worlds(two, out.sft) == starts and seed_one[0].stat().st_mtime_ns == stamp
    # the family table's SFT column is the start on the same worlds (those evaluations, cached)
    tally = final_family_counts(two, out.records, out.sft, tmp_path / "bench")[(SFT, "general")]
    worlds = [starts[("general", "test", s)] for s in (0, 1)]
    assert tally.evaluations == 2
    assert tally.per_evaluation() == pytest.approx(settings.eval_test * sum(worlds) / 2)
    assert seed_one[0].stat().st_mtime_ns == stamp

    # the exports: one per SFT policy and run; on a machine without the run directories they
    # give the same tables, with nothing evaluated or run
    exported = sorted(p.stem for p in (tmp_path / "exports").glob("*.json"))
    runs = [
        run_dir(settings, r.method, "general", 0, out.sft["general"], tmp_path / "bench").name
        for r in out.records
    ]
    assert exported == sorted([out.sft["general"].workdir.name, *runs])
    lines.clear()
    elsewhere = tmp_path / "another-machine"
    table, records = report_finished(
        settings, elsewhere, export_dir=tmp_path / "exports", log=lines.append
    )
    assert table == out.table and [r.to_dict() for r in records] == [
        r.to_dict() for r in out.records
    ]
    assert not elsewhere.exists() or not any(elsewhere.iterdir())
    printed = "\n".join(lines).splitlines()
    assert not any(line.startswith("[families]") for line in printed)
    assert total in printed  # the per-family totals, from the exports
    assert any(line.startswith("Runs per machine: ") and ": 3" in line for line in printed)
    here = current_commit()[:7] or "no commit"  # every run here: this checkout's commit
    assert f"Runs per commit: {here}: 3" in printed
    # every export records its overrides (the smoke preset's, against the full preset), and
    # every run's curve starts at its own seed's SFT check (seed 0: the bootstrap's)
    for r in out.records:
        assert r.overrides == run_overrides(settings, r.method, "general")
        assert r.overrides["bench.budget_s"] == settings.budget_s
        assert r.start_success == out.sft["general"].success["round"]
    for name in runs:
        exported = read_export(tmp_path / "exports", name)
        method = exported.run_record.method
        assert exported.overrides == run_overrides(settings, method, "general")
    sft_overrides = read_export(tmp_path / "exports", out.sft["general"].workdir.name).overrides
    assert sft_overrides and not any(k.startswith("algorithm.") for k in sft_overrides)
    # an ablation's export beside them (same SFT policy, other overrides) is a row of its own
    kl = {**out.records[0].overrides, "algorithm.group.kl_coef": 0.04}
    ablation = read_export(tmp_path / "exports", runs[0])
    ablation.record = {**ablation.record, "final": {"train": 1.0, "test": 1.0}, "overrides": kl}
    ablation.name, ablation.overrides = f"{runs[0]}x", kl
    write_export(tmp_path / "exports", ablation)
    lines.clear()
    table, records = report_finished(
        settings, elsewhere, export_dir=tmp_path / "exports", log=lines.append
    )
    rows = table.splitlines()
    assert len(records) == 3 and [r for r in rows if "kl_coef" not in r] == out.table.splitlines()
    # labelled with what it adds to the invocation's own overrides
    assert rows[3].startswith("| DistRL | ")
    assert (
        rows[4] == "| DistRL (algorithm.group.kl_coef=0.04) | 100.0 ± 0.0 | 100.0 ± 0.0 | – | – |"
    )
    assert lines[0].splitlines()[0].endswith("(and 1 exported under other overrides)")
    (tmp_path / "exports" / f"{ablation.name}.json").unlink()

    # the reference evaluations: the same final policies under another world profile
    ref = dataclasses.replace(settings, reference_profiles=("static",))
    lines.clear()
    report_finished(ref, tmp_path / "bench", reference=True, log=lines.append)
    evaluated = [line for line in lines if line.startswith("[static]")]
    assert len(evaluated) == 1 + 3, evaluated  # the SFT policy and each run's final policy
    printed = "\n".join(lines).splitlines()
    # the DistRL row of the reference table (the results table above it has one too)
    start = next(i for i, line in enumerate(printed) if "under other world profiles" in line)
    row = next(line for line in printed[start:] if line.startswith("| DistRL |")).split("|")
    live = f"{100 * out.records[0].final['test']:.1f}"
    assert row[2].strip().startswith(live), row  # the live column is the run's own score
    assert re.fullmatch(r"\d+\.\d ± \d+\.\d", row[3].strip()), row  # measured under static
    sft_row = next(line for line in printed[start:] if line.startswith("| SFT |")).split("|")
    assert sft_row[2].strip() == f"{100 * out.sft['general'].success['test']:.1f} ± 0.0", sft_row
    # with a second seed, the SFT row is the start on both worlds: static draws nothing, so its
    # evaluation answers for both from the cache; live is the two seeds' starts, cached above
    lines.clear()
    report_finished(
        dataclasses.replace(ref, seeds=(0, 1)), tmp_path / "bench", reference=True, log=lines.append
    )
    sft_static = [line for line in lines if line.startswith("[static] sft / general")]
    assert len(sft_static) == 2 and all(line.endswith(", cached") for line in sft_static)
    printed = "\n".join(lines).splitlines()
    start = next(i for i, line in enumerate(printed) if "under other world profiles" in line)
    sft_row = next(line for line in printed[start:] if line.startswith("| SFT |")).split("|")
    both = [100 * starts[("general", "test", s)] for s in (0, 1)]
    assert sft_row[2].strip().startswith(f"{sum(both) / 2:.1f} ± "), sft_row
    print(f"smoke benchmark: {first_s:.0f} s, second invocation {again.wall_s:.0f} s")
