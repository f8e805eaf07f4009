"""Learning-benchmark exports: a finished run's figures without its directory, on any machine."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from distrl_tasks.bench import export as ex
from distrl_tasks.bench.records import RoundPoint, RunRecord
from distrl_tasks.bench.setup import LearningBenchSettings, SFTPolicy, run_dir, run_overrides

INTEL = {"cpu": "Intel(R) Xeon(R) Processor", "nproc": 2, "python": "3.12", "torch": "2.13"}
AMD = {"cpu": "AMD EPYC 7B13", "nproc": 2, "python": "3.12", "torch": "2.13"}
PER_FAMILY = {"web_search": {"episodes": 2, "success_rate": 0.5}}


def a_record(method: str = "distrl", seed: int = 0, test: float = 0.5) -> RunRecord:
    return RunRecord(
        method=method,
        task_set="general",
        seed=seed,
        budget_s=20.0,
        final={"train": 0.25, "test": test},
        final_round=1,
        rounds=[RoundPoint(0, 5.0, 1.0, 0, 0.5, 3), RoundPoint(1, 12.0, 8.0, 2, 0.5, 7)],
        collections=[(8.0, 2)],
        machine=INTEL,
    )


def an_export(name: str, record: RunRecord | None, machine=INTEL, sft="aa") -> ex.PolicyExport:
    return ex.PolicyExport(
        name=name,
        task_set="general",
        checkpoint="cc",
        sft_checkpoint=sft,
        per_family=PER_FAMILY,
        profiles={"static": 0.5},
        machine=machine,
        commit="0123456789abcdef",
        record=None if record is None else record.to_dict(),
    )


def test_an_export_stands_in_only_for_a_policy_that_is_not_here(tmp_path: Path) -> None:
    run = an_export("general-distrl-s0-abc", a_record())
    sft = an_export("sft-general-k", None)
    exports = {run.name: run, sft.name: sft}
    run_dir_, sft_dir = tmp_path / run.name, tmp_path / sft.name
    # Nothing here: both are read from their exports.
    assert ex.exported_elsewhere(exports, run_dir_) is run
    assert ex.exported_elsewhere(exports, sft_dir, sft_dir / "policy") is sft
    # A run directory here wins over the export; so does an SFT checkpoint here.
    run_dir_.mkdir()
    assert ex.exported_elsewhere(exports, run_dir_) is None
    (sft_dir / "policy").mkdir(parents=True)
    assert ex.exported_elsewhere(exports, sft_dir, sft_dir / "policy") is None
    # An SFT directory without its checkpoint is not the policy: the export stands in.
    assert ex.exported_elsewhere(exports, sft_dir, sft_dir / "gone") is sft
    # A policy with no export is never stood in for.
    assert ex.exported_elsewhere(exports, tmp_path / "general-grpo-s0-abc") is None


def test_an_export_round_trips_and_its_record_parses(tmp_path: Path) -> None:
    exported = an_export("general-distrl-s0-abc", a_record())
    path = ex.write_export(tmp_path / "exports", exported)
    assert path == tmp_path / "exports" / "general-distrl-s0-abc.json"
    assert not list(path.parent.glob("*.tmp*"))  # written through a renamed temporary file
    back = ex.read_export(tmp_path / "exports", "general-distrl-s0-abc")
    assert back.run_record == a_record()  # JSON spells tuples as lists: the record parses back
    assert dataclasses.replace(back, record=None) == dataclasses.replace(exported, record=None)
    assert back.run_record.machine["cpu"] == INTEL["cpu"]
    assert ex.read_export(tmp_path / "exports", "general-digirl-s0-abc") is None
    assert ex.read_export(None, "general-distrl-s0-abc") is None
    with pytest.raises(ex.ExportError, match="no run record"):
        an_export("sft-general-k", None).run_record  # noqa: B018


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "unreadable"),
        (json.dumps({"format": 99}), "format 99"),
        (json.dumps({"format": ex.EXPORT_FORMAT, "name": "x"}), "unreadable"),  # fields missing
    ],
)
def test_a_bad_export_file_is_named_in_the_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(ex.ExportError, match=message) as info:
        ex.read_export(tmp_path, "run")
    assert str(tmp_path / "run.json") in str(info.value)


def test_a_record_that_does_not_parse_fails_when_read(tmp_path: Path) -> None:
    bad = an_export("general-distrl-s0-abc", a_record())
    bad.record = {**bad.record, "rounds": [{"round": 1}]}  # a round without its fields
    ex.write_export(tmp_path, bad)
    with pytest.raises(ex.ExportError, match=r"general-distrl-s0-abc\.json"):
        ex.read_export(tmp_path, "general-distrl-s0-abc")


def test_records_written_before_the_machine_field_still_read() -> None:
    old = a_record().to_dict()
    del old["machine"]
    assert RunRecord.from_dict(old).machine == {}


def test_machines_line_and_sft_mismatches() -> None:
    runs = [
        an_export("general-distrl-s0-a", a_record(), INTEL, sft="aa"),
        an_export("general-digirl-s0-a", a_record("digirl"), INTEL, sft="aa"),
        an_export("general-distrl-s1-a", a_record(seed=1), AMD, sft="bb"),
    ]
    line = ex.machines_line(runs, local=2)
    assert line == (
        "Runs per machine: AMD EPYC 7B13 x2: 1; Intel(R) Xeon(R) Processor x2: 2; "
        "this machine, not exported: 2"
    )
    assert ex.machines_line([]) == "Runs per machine: none"
    # the AMD run started from another SFT checkpoint than the one here
    assert ex.sft_mismatches(runs, {"general": "aa"}) == ["general-distrl-s1-a (SFT bb, here aa)"]
    assert ex.sft_mismatches(runs, {}) == []  # no SFT policy here: nothing to compare
    sft_only = [an_export("sft-general-k", None, sft="zz")]
    assert ex.sft_mismatches(sft_only, {"general": "aa"}) == []


def test_commits_line_counts_the_runs_of_each_commit_most_first() -> None:
    runs = [an_export(f"general-distrl-s{i}-a", a_record(seed=i)) for i in range(3)]
    runs[2].commit = "fedcba9876543210"
    runs.append(an_export("general-digirl-s0-a", a_record("digirl")))
    runs[3].commit = ""  # run outside a git checkout
    assert ex.commits_line(runs) == "Runs per commit: 0123456: 2; fedcba9: 1; no commit: 1"
    assert ex.commits_line([]) == "Runs per commit: none"


def test_a_run_is_named_alike_on_every_machine_and_old_names_are_renamed(tmp_path: Path) -> None:
    from distrl_tasks.bench import setup
    from distrl_tasks.bench.setup import _cache_view, _digest, run_config

    settings = LearningBenchSettings.smoke()

    def named(root: Path) -> Path:
        sft = SFTPolicy("general", root / "sft-general-k", root / "p", 10, {}, "t")
        return run_dir(settings, "distrl", "general", 0, sft, root)

    here, there = named(tmp_path / "a"), named(tmp_path / "elsewhere" / "b")
    assert here.name == there.name  # the SFT directory's name, not its path, is hashed
    # a run cached under the name that hashed the absolute path is moved to the new name
    root = tmp_path / "old"
    sft = SFTPolicy("general", root / "sft-general-k", root / "p", 10, {}, "t")
    cfg = run_config(settings, "general", method="distrl", seed=0)
    evals = (settings.budget_s, settings.eval_test, settings.eval_train)
    # moved config keys are hashed under their old names where setup renames them (issue 54)
    view = getattr(setup, "_hashed", dict)(_cache_view(cfg))
    legacy = root / f"general-distrl-s0-{_digest([view, *evals, str(sft.workdir)])}"
    (legacy / "runs").mkdir(parents=True)
    (legacy / "bench_record.json").write_text("{}")
    moved = run_dir(settings, "distrl", "general", 0, sft, root)
    assert moved.name == here.name and not legacy.exists()
    assert (moved / "bench_record.json").read_text() == "{}"


def test_a_run_exported_elsewhere_is_reused_not_run(tmp_path: Path) -> None:
    from distrl_tasks.bench.learning import run_one

    settings = LearningBenchSettings.smoke()
    root = tmp_path / "bench"
    sft = SFTPolicy("general", root / "sft-general-k", root / "absent", 10, {}, "t")
    name = run_dir(settings, "digirl", "general", 1, sft, root).name
    ex.write_export(tmp_path / "exports", an_export(name, a_record("digirl", 1), AMD))
    lines: list[str] = []
    record = run_one(
        settings,
        "digirl",
        "general",
        1,
        sft,
        root,
        export_dir=tmp_path / "exports",
        log=lines.append,
    )
    # an export from before overrides were recorded, read under the name these settings give:
    # its overrides are theirs (the smoke preset's, against the full preset)
    assert record == dataclasses.replace(
        a_record("digirl", 1), overrides=run_overrides(settings, "digirl", "general")
    )
    assert record.overrides["bench.budget_s"] == settings.budget_s
    assert not (root / name).exists()  # nothing ran: no project was made
    assert lines == [
        "[DigiRL / general / seed 1] finished on AMD EPYC 7B13 x2 at commit 0123456789: "
        "reusing its export"
    ]


def test_cli_export_dir_defaults() -> None:
    from distrl_tasks.cli.bench import export_dir_from_args
    from distrl_tasks.cli.main import build_parser

    def parsed(*argv: str) -> str | None:
        return export_dir_from_args(build_parser().parse_args(["bench", "learning", *argv]))

    assert parsed() == ex.DEFAULT_EXPORT_DIR
    assert parsed("--smoke") is None  # smoke numbers mean nothing: not exported unless named
    assert parsed("--smoke", "--export-dir", "x") == "x"
    assert parsed("--no-export") is None


def test_machine_info_names_the_cpu_family_and_torch_kernels(tmp_path: Path) -> None:
    from distrl_tasks.bench.describe import cpuinfo_fields, machine_info

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\n"
        "processor\t: 1\ncpu family\t: 6\nmodel\t\t: 143\n"
    )
    assert cpuinfo_fields(cpuinfo) == {
        "processor": "0",
        "cpu family": "25",
        "model": "17",
        "model name": "AMD EPYC",
    }
    assert cpuinfo_fields(tmp_path / "absent") == {}
    info = machine_info()
    kernels = {"DEFAULT", "VSX", "Z VECTOR", "NO AVX", "AVX2", "AVX512", "SVE256"}
    assert info["torch_cpu_capability"] in kernels
    assert info["cpu_family"] == "-" or info["cpu_family"].startswith("family ")
