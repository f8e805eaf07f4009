"""Typed-query match of saved evaluation episodes (``runs/eval/*-episodes.json``).

Recomputes, from the episodes an evaluation stored, the share of searching TYPE steps that typed
exactly the goal's query (:func:`distrl_tasks.runners.evaluation.query_steps`; a step typing the
goal's site to open it, as WebShop's "Go to ebay.com, ..." needs, is not a search), overall and
per family. Episodes stored before the ``site`` field existed get it from the parsed goal.

    PYTHONPATH=. python benchmarks/typed_queries.py runs/eval/eval-v3-...-episodes.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from distrl_tasks.runners.evaluation import EpisodeResult, query_steps
from distrl_tasks.tasks.parse import parse_goal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("episodes", nargs="+", help="episodes JSON files")
    args = ap.parse_args()
    for path in args.episodes:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
        hits: dict[str, list[bool]] = defaultdict(list)
        for row in rows:
            task = parse_goal(row["goal"])
            row = {**row, "typed": tuple(row.get("typed", ())), "query": row.get("query", "")}
            row.setdefault("site", task.params.get("site", ""))
            steps = query_steps(EpisodeResult(**row))
            hits[row["family"]] += steps
            hits["all"] += steps
        print(path)
        for family, h in sorted(hits.items()):
            if h:
                share = 100 * sum(h) / len(h)
                print(f"  {family:<16} {len(h):>4} searching TYPE steps, {share:.1f}% = query")


if __name__ == "__main__":
    main()
