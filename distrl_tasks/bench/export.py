"""A learning-benchmark result that outlives its machine: one small JSON file per policy.

A run's directory (checkpoints, shards, registry, evaluation caches) is hundreds of MB and stays
on the machine that ran it, while the full benchmark takes more hours than one machine is kept:
its parts were lost between machines. So :func:`~distrl_tasks.bench.learning.run_benchmark` also
writes, for each task set's SFT policy and each finished run, what the tables need into a file
meant to be committed (``benchmarks/learning_runs/`` by default): the run's record, the machine
and commit that ran it, the digests of the evaluated and the SFT checkpoints, the per-family
summary of the final test evaluation and the reference-profile evaluations. A file is named by
the run's cache key, which holds no absolute path, so another machine computes the same name.

An export also records its overrides: what its settings changed from the benchmark's defaults
(:func:`~distrl_tasks.bench.setup.run_overrides`), by which the tables keep an ablation's runs
in rows of their own. Exports written before that have none (``overrides`` None): read under
the name the invocation's own settings give, they are that invocation's runs, so theirs are the
invocation's overrides; the few known by name (:data:`LEGACY_OVERRIDES`) carry theirs; any other
is told apart by its cache key (:func:`variant_record`).

The tables join the exports with the local cache (a local run wins). A run found only as an
export is not run again; where the SFT policy re-trained on this machine is not the one an
exported run started from (CPU kernels differ between machines), the report says so.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from distrl_tasks.bench.describe import machine_info
from distrl_tasks.bench.records import DEFAULTS_GENERATION, RunRecord
from distrl_tasks.protocol.files import atomic_write_json

EXPORT_FORMAT = 1
DEFAULT_EXPORT_DIR = "benchmarks/learning_runs"
# Exports committed before overrides were recorded whose runs were an ablation: their names
# are the cache keys of the full preset with these overrides (commit fa8b456, the KL ablation)
LEGACY_OVERRIDES: dict[str, dict[str, Any]] = {
    name: {"algorithm.group.kl_coef": 0.04}
    for name in (
        "webshop-gigpo-s0-5775f32ad8",
        "webshop-gigpo-s1-726edc626c",
        "webshop-gigpo-s2-d563d627b0",
    )
}


class ExportError(ValueError):
    """An export file that cannot be read (the message names it)."""


@dataclass
class PolicyExport:
    """What the benchmark's tables read from one policy: an SFT policy or a run's final one."""

    name: (
        str  # the cache directory's name: sft-<task set>-<key> or <task set>-<method>-s<seed>-<key>
    )
    task_set: str
    checkpoint: str  # digest of the evaluated checkpoint (evaluate.checkpoint_digest)
    sft_checkpoint: str  # digest of the SFT checkpoint the run started from (its own for SFT)
    per_family: dict[str, Any]  # the final test evaluation's per-family summary
    profiles: dict[str, float]  # reference world profile -> test success
    machine: dict[str, Any]  # bench.describe.machine_info() of the machine that ran it
    commit: str  # git commit of the code that ran it ("" outside a git checkout)
    record: dict[str, Any] | None = None  # the run's RunRecord (None for an SFT policy)
    sft: dict[str, Any] = field(default_factory=dict)  # SFT only: steps, success, tasks_key
    format: int = EXPORT_FORMAT
    # what its settings changed from the benchmark's defaults (bench.setup.run_overrides);
    # None: written before they were recorded
    overrides: dict[str, Any] | None = None
    # the defaults generation they are relative to (bench.records.DEFAULTS_BEFORE)
    overrides_generation: int = DEFAULTS_GENERATION

    @property
    def known_overrides(self) -> dict[str, Any] | None:
        """Its overrides: recorded, or known by its name (:data:`LEGACY_OVERRIDES`); None when
        it was written before they were recorded and is not known."""
        if self.overrides is not None:
            return dict(self.overrides)
        if self.record is not None and self.record.get("overrides") is not None:
            return dict(self.record["overrides"])
        known = LEGACY_OVERRIDES.get(self.name)
        return None if known is None else dict(known)

    @property
    def run_record(self) -> RunRecord:
        """The run's record, its overrides filled in from :attr:`known_overrides` (None where
        they are not known: the reader knows more, :func:`variant_record`).

        Raises:
            ExportError: an SFT policy's export (it has no run record).
        """
        if self.record is None:
            raise ExportError(f"{self.name}: an SFT export has no run record")
        record = RunRecord.from_dict(self.record)
        known = self.known_overrides
        if known is not None:
            record.overrides = known
        if self.overrides is not None:  # the export's own overrides, of its own generation
            record.overrides_generation = self.overrides_generation
        return record


def export_path(export_dir: Path, name: str) -> Path:
    return Path(export_dir) / f"{name}.json"


def read_export(export_dir: Path | None, name: str) -> PolicyExport | None:
    """The export named ``name`` in ``export_dir`` (None if there is none).

    Raises:
        ExportError: the file exists but is not a readable export of this format.
    """
    if export_dir is None:
        return None
    path = export_path(export_dir, name)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("format") != EXPORT_FORMAT:
            raise ExportError(f"format {data.get('format')!r}, expected {EXPORT_FORMAT}")
        data.setdefault("overrides_generation", 0)  # written before the defaults first moved
        export = PolicyExport(**data)
        if export.record is not None:
            export.run_record  # noqa: B018 - a record that does not parse fails here, named
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, ExportError) as exc:
        raise ExportError(f"benchmark export {path} is unreadable: {exc}") from exc
    return export


def cache_key(name: str) -> str:
    """The cache key at the end of an export's name (``general-distrl-s0-<key>``)."""
    return name.rsplit("-", 1)[-1]


def variant_record(exported: PolicyExport) -> RunRecord:
    """The record of an exported run found beside the invocation's own (another name): its
    overrides where known, else ``{"run": <cache key>}``, a row of its own (its settings are not
    the invocation's, or its name would be the invocation's)."""
    record = exported.run_record
    if record.overrides is None:
        record.overrides = {"run": cache_key(exported.name)}
    return record


def variant_exports(
    export_dir: Path | None,
    *,
    own: Sequence[str],
    task_sets: Mapping[str, str],
    methods: Sequence[str],
    seeds: Sequence[int],
) -> list[PolicyExport]:
    """The exported runs in ``export_dir`` that ran beside the invocation's own under other
    settings (an ablation): those of its task sets, methods and seeds that started from the same
    SFT checkpoint, named otherwise than its own runs, in name order.

    Args:
        export_dir: the exports (None: none).
        own: the names of the invocation's own runs.
        task_sets: task set -> the digest of the SFT checkpoint its runs start from.
        methods: the invocation's methods.
        seeds: the invocation's seeds.

    Raises:
        ExportError: an export that cannot be read.
    """
    if export_dir is None or not Path(export_dir).is_dir():
        return []
    out = []
    for path in sorted(Path(export_dir).glob("*.json")):
        if path.stem in own or path.stem.startswith("sft-"):
            continue
        exported = read_export(export_dir, path.stem)
        if exported is None or exported.record is None:
            continue
        record = exported.record
        if (
            task_sets.get(exported.task_set) == exported.sft_checkpoint
            and record.get("method") in methods
            and record.get("seed") in seeds
        ):
            out.append(exported)
    return out


def exported_elsewhere(
    exports: Mapping[str, PolicyExport], workdir: Path, checkpoint: Path | None = None
) -> PolicyExport | None:
    """The export of the policy in ``workdir`` when that policy is not on this machine.

    A policy here wins over its export: it is measured, not read. "Here" means ``checkpoint``
    exists, or, without one, ``workdir`` does (a run's directory holds its checkpoints).

    Returns:
        The export named ``workdir.name``, or None when there is none or the policy is here.
    """
    exported = exports.get(workdir.name)
    if exported is None:
        return None
    here = checkpoint.exists() if checkpoint is not None else workdir.exists()
    return None if here else exported


def write_export(export_dir: Path, export: PolicyExport) -> Path:
    """Write ``export`` atomically (a half-written file never replaces a good one)."""
    path = export_path(export_dir, export.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, asdict(export), sort_keys=True)
    return path


def current_commit() -> str:
    """The git commit of the working directory's checkout ("" where there is none)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def machine_label(machine: Mapping[str, Any]) -> str:
    """``"<cpu> x<cores>"``: the machine a figure came from, short enough for a table note."""
    return f"{machine.get('cpu', 'unknown CPU')} x{machine.get('nproc', '?')}"


def machines_line(exports: Sequence[PolicyExport], local: int = 0) -> str:
    """One line: how many runs each machine ran (``local`` runs without an export: this one's)."""
    counts = Counter(machine_label(e.machine) for e in exports)
    parts = [f"{label}: {n}" for label, n in sorted(counts.items())]
    if local:
        parts.append(f"this machine, not exported: {local}")
    return "Runs per machine: " + ("; ".join(parts) if parts else "none")


def commits_line(exports: Sequence[PolicyExport]) -> str:
    """One line: how many runs each code commit ran, first the commit with the most.

    Why: a run is cached and reused by its settings, not its code, so a table that joins parts
    made at several commits says which (a joined run is only as current as its commit).
    """
    counts = Counter(e.commit[:7] or "no commit" for e in exports)
    parts = [f"{c}: {n}" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "Runs per commit: " + ("; ".join(parts) if parts else "none")


def sft_mismatches(exports: Sequence[PolicyExport], sft_digests: Mapping[str, str]) -> list[str]:
    """The exported runs that started from another SFT checkpoint than this machine's, as
    ``name (from <digest>)`` lines (empty: every run started from the same policy)."""
    return [
        f"{e.name} (SFT {e.sft_checkpoint}, here {sft_digests[e.task_set]})"
        for e in exports
        if e.record is not None
        and e.task_set in sft_digests
        and e.sft_checkpoint != sft_digests[e.task_set]
    ]


def collect_export(
    *,
    name: str,
    task_set: str,
    checkpoint: Path,
    sft_checkpoint: Path,
    test_evaluation: Callable[[str | None], Mapping[str, Any]],
    profiles: Sequence[str],
    record: RunRecord | None = None,
    sft: Mapping[str, Any] | None = None,
    machine: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> PolicyExport:
    """Gather a policy's export from its evaluations.

    Args:
        name: the cache directory's name.
        task_set: the task set.
        checkpoint: the evaluated checkpoint.
        sft_checkpoint: the SFT checkpoint the run started from (``checkpoint`` for SFT).
        test_evaluation: the evaluate stage's manifest of the final test evaluation under a
            world profile (None: the benchmark's own); cached evaluations answer at once.
        profiles: the reference profiles.
        record: the run's record (None for an SFT policy).
        sft: for an SFT policy, its steps, success and tasks key.
        machine: the machine that ran it (None: this one).
        overrides: what its settings change from the benchmark's defaults (None: the record's,
            none for an SFT policy).
    """
    from distrl_tasks.stages.evaluate import checkpoint_digest  # lazy: torch + pyarrow

    main = test_evaluation(None)
    return PolicyExport(
        name=name,
        task_set=task_set,
        checkpoint=checkpoint_digest(checkpoint),
        sft_checkpoint=checkpoint_digest(sft_checkpoint),
        per_family=dict(main["per_family"]),
        profiles={p: float(test_evaluation(p)["success_rate"]) for p in profiles},
        machine=dict(machine) if machine else machine_info(),
        commit=current_commit(),
        record=record.to_dict() if record is not None else None,
        sft=dict(sft or {}),
        overrides=dict(
            overrides
            if overrides is not None
            else (record.overrides if record is not None and record.overrides else {})
        ),
    )
