"""Data-path throughput: replay sampling, Parquet bytes per step, Gemini labeling rate.

Usage::

    .venv/bin/python benchmarks/data_throughput.py           # about two minutes
    .venv/bin/python benchmarks/data_throughput.py --quick   # smaller settings

Data: real trajectories, collected by the collect stage on the simulator (scripted expert with
a mistake rate, latency off) and written as Parquet shards: PNG screenshots as the devices
render them (``sim.render_scale`` 0.25) and float16 image features (1408-d, the size of
BLIP-2's and of the small encoder's). The replay buffer is filled to its capacity with copies of
those trajectories (new ids) and read as the learner reads it.

Figures:

* replay sampling, transitions/s: uniform and prioritized, single transitions (batch 256) and
  windows of 3 steps (64 windows, every step of a window counted), all columns and the learner's
  columns (no PNG bytes);
* storage: bytes per step of the shards, per column group (Parquet compressed sizes);
* labeling: labels/s of the Gemini evaluator (real google-genai client) against the fake Gemini
  server answering after ``--latency-ms`` (300 ms), at concurrency 16; then again with a
  fraction of requests answered by HTTP 429, counting labels lost (items that end unlabeled
  after the evaluator's retries and the label pass's re-queue of unlabeled items).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch

from distrl_tasks.bench.describe import machine_info
from distrl_tasks.config import Config
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.shards import read_shards
from distrl_tasks.evaluators.evaluator import Verdict
from distrl_tasks.evaluators.gemini import GeminiEvaluator
from distrl_tasks.protocol.ratelimit import RetryPolicy
from distrl_tasks.stages import collect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakes.gemini_server import FakeGemini, RecordedRequest, Reply, failure, rate_limited, success

LEARNER_COLUMNS = [
    "trajectory_id",
    "step",
    "prompt",
    "action",
    "image_features",
    "behavior_log_prob",
    "reward",
    "penalty",
    "done",
    "mc_return",
]
KEY = "bench-key"


# ----- data ---------------------------------------------------------------------------------
def collect_shards(out: Path, devices: int, episodes: int, mistake_rate: float) -> pa.Table:
    """Run the collect stage (scripted expert, sim farm, latency off); return the shards."""
    cfg = Config()
    cfg = dataclasses.replace(
        cfg,
        sim=dataclasses.replace(cfg.sim, expert_mistake_rate=mistake_rate),
        orchestration=dataclasses.replace(cfg.orchestration, devices_per_worker=devices),
    )
    collect.run(
        cfg,
        collect.CollectRequest(
            round=0,
            policy="scripted",
            out_dir=out,
            mode="async",
            episodes_per_device=episodes,
            progress=False,
        ),
    )
    return read_shards(out)


def storage(shard_dir: Path, steps: int) -> dict[str, float]:
    """Bytes per step of the Parquet files: total and per column group (compressed sizes)."""
    groups: Counter[str] = Counter()
    total = 0
    for path in sorted(shard_dir.glob("*.parquet")):
        total += path.stat().st_size
        meta = pq.ParquetFile(path).metadata
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                col = meta.row_group(rg).column(c)
                name = col.path_in_schema.split(".")[0]
                if name.endswith("screenshot_png"):
                    group = "screenshots (PNG)"
                elif name.endswith("image_features"):
                    group = "image features (float16)"
                else:
                    group = "everything else"
                groups[group] += col.total_compressed_size
    out = {"total": total / steps}
    out.update({g: b / steps for g, b in sorted(groups.items())})
    return out


def replicate(table: pa.Table, transitions: int) -> pa.Table:
    """Copies of the collected trajectories under new ids, at least ``transitions`` rows."""
    copies = []
    rows = 0
    k = 0
    while rows < transitions:
        ids = pc.binary_join_element_wise(table.column("trajectory_id"), f"c{k}", "-")
        copies.append(
            table.set_column(table.schema.get_field_index("trajectory_id"), "trajectory_id", ids)
        )
        rows += table.num_rows
        k += 1
    return pa.concat_tables(copies)


# ----- replay -------------------------------------------------------------------------------
def rate(fn, per_call: int, seconds: float) -> float:
    """Items per second of ``fn`` (called until ``seconds`` have passed, after one warm-up)."""
    fn()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        calls += 1
    return calls * per_call / (time.perf_counter() - t0)


def bench_replay(table: pa.Table, capacity: int, seconds: float) -> dict[str, float]:
    """Transitions/s of every sampling mode, with all columns and with the learner's."""
    results = {}
    for label, cols in (("all columns", None), ("learner columns", LEARNER_COLUMNS)):
        data = table if cols is None else table.select(cols)
        buf = ReplayBuffer(capacity, alpha=0.5, beta=0.4, seed=0)
        buf.extend(replicate(data, capacity))
        slots = np.array(buf.slots)
        prio = np.random.default_rng(0).gamma(2.0, 1.0, size=len(slots))
        buf.update_priorities(slots, prio)  # skewed priorities, as DPER produces
        for prioritized in (False, True):
            kind = "prioritized" if prioritized else "uniform"
            results[f"transitions, {kind}, {label}"] = rate(
                lambda p=prioritized, b=buf: b.sample_transitions(256, prioritized=p), 256, seconds
            )
            results[f"sequences of 3, {kind}, {label}"] = rate(
                lambda p=prioritized, b=buf: b.sample_sequences(64, 3, prioritized=p),
                64 * 3,
                seconds,
            )
    results["_buffer_transitions"] = len(buf)
    results["_buffer_trajectories"] = buf.num_trajectories
    return results


# ----- labeling -----------------------------------------------------------------------------
class LatencyResponder:
    """Answers each request after ``latency_s``; a seeded fraction gets an immediate 429."""

    def __init__(self, latency_s: float, p429: float, retry_after: float, seed: int) -> None:
        self.latency_s = latency_s
        self.p429 = p429
        self.retry_after = retry_after
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def __call__(self, req: RecordedRequest) -> Reply:
        with self.lock:
            limited = self.rng.random() < self.p429
            ok = self.rng.random() < 0.5
            self.counts["429" if limited else "answered"] += 1
        if limited:
            return rate_limited(self.retry_after)
        base = success() if ok else failure()
        return Reply(base.status, base.body, dict(base.headers), delay_s=self.latency_s)


def label_pass(ev: GeminiEvaluator, items: list[tuple[str, list[bytes]]]) -> list[Verdict]:
    return ev.label_many(items, progress=False)


def bench_labels(
    items: list[tuple[str, list[bytes]]],
    *,
    latency_s: float,
    concurrency: int,
    p429: float,
    max_passes: int = 3,
) -> dict[str, float]:
    """Label every item; unlabeled ones are re-queued (as a label stage must) up to
    ``max_passes`` times. Returns rates and loss counts."""
    responder = LatencyResponder(latency_s, p429, retry_after=0.2, seed=1)
    with FakeGemini(api_key=KEY, responder=responder) as fake:
        ev = GeminiEvaluator(
            api_key=KEY,
            base_url=fake.base_url,
            concurrency=concurrency,
            requests_per_minute=60_000,  # the benchmark measures latency-bound throughput
            retry=RetryPolicy(max_retries=5, base_delay=0.2, seed=0),
            timeout_s=10.0,
            cache_dir=None,
        )
        ev.label_many(items[:1], progress=False)  # warm-up: renders the few-shot screens
        t0 = time.perf_counter()
        verdicts = label_pass(ev, items)
        first_wall = time.perf_counter() - t0
        first_unlabeled = sum(not v.labeled for v in verdicts)
        passes = 1
        todo = [i for i, v in enumerate(verdicts) if not v.labeled]
        while todo and passes < max_passes:
            again = label_pass(ev, [items[i] for i in todo])
            for i, v in zip(todo, again, strict=True):
                verdicts[i] = v
            todo = [i for i in todo if not verdicts[i].labeled]
            passes += 1
        wall = time.perf_counter() - t0
        attempts = sum(v.attempts for v in verdicts)
    return {
        "items": len(items),
        "labels_per_s": sum(v.labeled for v in verdicts) / wall,
        "first_pass_labels_per_s": (len(items) - first_unlabeled) / first_wall,
        "first_pass_unlabeled": first_unlabeled,
        "lost": len(todo),
        "passes": passes,
        "requests_429": responder.counts["429"],
        "requests": responder.counts["429"] + responder.counts["answered"],
        "attempts_per_label": attempts / max(1, len(items)),
        "max_in_flight": fake.max_in_flight,
    }


def label_items(table: pa.Table, n: int) -> list[tuple[str, list[bytes]]]:
    """``n`` (goal, final screenshot) pairs from the collected trajectories (cycled)."""
    last = table.filter(pc.equal(table.column("done"), True))
    goals = last.column("task").to_pylist()
    shots = last.column("final_screenshot_png").to_pylist()
    return [(goals[i % len(goals)], [shots[i % len(shots)]]) for i in range(n)]


# ----- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller settings (~1 minute)")
    parser.add_argument("--mistake-rate", type=float, default=0.3)
    parser.add_argument("--capacity", type=int, default=10_000, help="replay transitions")
    parser.add_argument("--seconds", type=float, default=None, help="per replay rate test")
    parser.add_argument("--labels", type=int, default=None, help="items per labeling run")
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--p429", type=float, default=0.2, help="share of requests given 429")
    args = parser.parse_args()
    seconds = args.seconds or (0.5 if args.quick else 2.0)
    n_labels = args.labels or (64 if args.quick else 320)
    devices, episodes = (2, 3) if args.quick else (4, 6)
    if args.capacity < 1 or n_labels < 1 or args.concurrency < 1:
        parser.error("--capacity, --labels and --concurrency must be >= 1")
    if not 0.0 <= args.p429 < 1.0:
        parser.error(f"--p429 must be in [0, 1), got {args.p429}")
    torch.set_num_threads(1)
    machine = machine_info()
    print(
        f"machine: nproc={machine['nproc']}, {machine['cpu']} ({machine['cpu_family']}), "
        f"Python {machine['python']}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        shard_dir = Path(tmp) / "shards"
        table = collect_shards(shard_dir, devices, episodes, args.mistake_rate)
        trajs = pc.count_distinct(table.column("trajectory_id")).as_py()
        print(
            f"collected {trajs} trajectories, {table.num_rows} steps "
            f"(scripted expert, mistake rate {args.mistake_rate})"
        )
        print("storage, bytes per step:")
        for group, b in storage(shard_dir, table.num_rows).items():
            print(f"  {group}: {b:,.0f}")

    replay = bench_replay(table, args.capacity, seconds)
    print(
        f"replay sampling ({replay.pop('_buffer_transitions'):.0f} transitions in "
        f"{replay.pop('_buffer_trajectories'):.0f} trajectories), transitions/s:"
    )
    for name, value in replay.items():
        print(f"  {name}: {value:,.0f}")

    items = label_items(table, n_labels)
    for p in (0.0, args.p429):
        r = bench_labels(
            items, latency_s=args.latency_ms / 1000, concurrency=args.concurrency, p429=p
        )
        print(
            f"labeling, {args.latency_ms:.0f} ms latency, concurrency {args.concurrency}, "
            f"429 share {p:.0%}: {r['labels_per_s']:.1f} labels/s over {r['items']} items; "
            f"first pass {r['first_pass_labels_per_s']:.1f}/s with {r['first_pass_unlabeled']} "
            f"unlabeled; lost after {r['passes']} pass(es): {r['lost']}; "
            f"requests {r['requests']} ({r['requests_429']} got 429), "
            f"attempts/label {r['attempts_per_label']:.2f}, max in flight {r['max_in_flight']}"
        )


if __name__ == "__main__":
    main()
