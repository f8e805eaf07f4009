"""Typed queries: tells text-generation failures from navigation failures.

Goals of the search-like families (web, Maps, YouTube, shopping, directions) name a query that
solving them means typing. Whether the agent typed it, and whether the episodes that did
succeeded, says which half of the task a policy gets wrong. On the tiny from-scratch policy the
answer is copying: episodes that type the query exactly succeed, nearly all others fail
(benchmarks/results/2026-11-22-demo-test-success-does-not-rise.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from distrl_tasks.analysis.episodes import _require, episodes
from distrl_tasks.tasks.expert_skills import same_text
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GoalParseError


def typed_queries(steps: pd.DataFrame) -> pd.DataFrame:
    """Per round: did the agent type the query its goal names, and did that decide success?

    Goals of the search-like families name a query (``parse_goal(goal).params["query"]``) that
    solving them means typing. A trajectory's typed text counts as ``exact`` when its first TYPE
    equals the query up to case, spaces and punctuation (the simulator's own comparison). The
    success rates with and without an exact query tell text-generation failures from navigation
    failures. Only labeled trajectories of goals with a query count.

    Returns:
        One row per round: ``trajectories``, ``typed`` (typed at least once), ``exact``,
        ``exact_rate`` (of trajectories), ``success_if_exact`` and ``success_otherwise``
        (NaN where no trajectory falls in the group).
    """
    need = ("trajectory_id", "step", "round", "task", "label_status", "action_type", "typed_text")
    _require(steps, need, "typed_queries")
    eps = episodes(steps).set_index("trajectory_id")
    eps["query"] = eps["task"].map(_goal_query)
    eps = eps[eps["query"].notna() & eps["success"].notna()]
    typed = steps[steps["action_type"] == "TYPE"].sort_values(["trajectory_id", "step"])
    eps["first_typed"] = typed.groupby("trajectory_id")["typed_text"].first()
    pairs = zip(eps["first_typed"], eps["query"], strict=True)
    eps["exact"] = [isinstance(t, str) and same_text(t, q) for t, q in pairs]
    rows = {}
    for rnd, g in eps.groupby("round", sort=True):
        success = g["success"].astype(bool)
        rows[rnd] = {
            "trajectories": len(g),
            "typed": int(g["first_typed"].notna().sum()),
            "exact": int(g["exact"].sum()),
            "exact_rate": float(g["exact"].mean()),
            "success_if_exact": float(success[g["exact"]].mean()) if g["exact"].any() else np.nan,
            "success_otherwise": float(success[~g["exact"]].mean())
            if (~g["exact"]).any()
            else np.nan,
        }
    cols = ["trajectories", "typed", "exact", "exact_rate", "success_if_exact", "success_otherwise"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("round")


def _goal_query(goal: str) -> str | None:
    try:
        return parse_goal(goal).params.get("query")
    except GoalParseError:
        return None
