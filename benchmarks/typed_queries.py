"""Typed-query match of saved evaluation episodes (``runs/eval/*-episodes.json``).

Recomputes, from the episodes an evaluation stored, the share of searching TYPE steps that typed
exactly the goal's query (:func:`distrl_tasks.runners.evaluation.query_steps`; a step typing the
goal's site to open it, as WebShop's "Go to ebay.com, ..." needs, is not a search), overall and
per family. Episodes stored before the ``site`` field existed get it from the parsed goal.

Each searching TYPE step is also sorted by where its text sits against the goal (words compared
as :func:`~distrl_tasks.tasks.families.text.words` spells them): the query exactly, cut short
(a strict prefix of the query), run on (the query, then more), another span of the goal that
starts at a word, a span that starts inside a word, or other text (not in the goal: a loop such
as "revieieie", a site name from memory). The copy's two failure ends, start and stop, are
these columns.

    PYTHONPATH=. python benchmarks/typed_queries.py runs/eval/eval-v3-...-episodes.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from distrl_tasks.runners.evaluation import EpisodeResult, query_steps, searching_texts
from distrl_tasks.tasks.families.text import words
from distrl_tasks.tasks.parse import parse_goal

KINDS = ("exact", "cut short", "runs on", "other span", "inside a word", "other text")


def copy_kind(typed: str, query: str, goal: str) -> str:
    """Where ``typed`` sits against the goal's ``query`` (module docstring's columns)."""
    t, q, g = (" ".join(words(x)) for x in (typed, query, goal))
    if not t:
        return "other text"
    if t == q:
        return "exact"
    if q.startswith(t):
        return "cut short"
    if t.startswith(q):
        return "runs on"
    if f" {g}".find(f" {t}") >= 0:
        return "other span"
    return "inside a word" if t in g else "other text"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("episodes", nargs="+", help="episodes JSON files")
    args = ap.parse_args()
    for path in args.episodes:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
        hits: dict[str, list[bool]] = defaultdict(list)
        kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
        for row in rows:
            task = parse_goal(row["goal"])
            row = {**row, "typed": tuple(row.get("typed", ())), "query": row.get("query", "")}
            row.setdefault("site", task.params.get("site", ""))
            result = EpisodeResult(**row)
            steps = query_steps(result)
            for text in searching_texts(result):  # the steps query_steps scored, by kind
                kinds[copy_kind(text, result.query, result.goal)] += 1
            hits[row["family"]] += steps
            hits["all"] += steps
        print(path)
        for family, h in sorted(hits.items()):
            if h:
                share = 100 * sum(h) / len(h)
                print(f"  {family:<16} {len(h):>4} searching TYPE steps, {share:.1f}% = query")
        total = sum(kinds.values()) or 1
        print("  where the typed text sits: " + ", ".join(
            f"{k} {n} ({100 * n / total:.0f}%)" for k, n in kinds.items()
        ))  # fmt: skip


if __name__ == "__main__":
    main()
