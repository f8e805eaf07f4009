"""Collection: batched inference server, scripted/random policies, async and sync collectors."""

from distrl_tasks.runners.collector import CollectResult, collect_async, collect_sync
from distrl_tasks.runners.inference import Decision, InferenceServer
from distrl_tasks.runners.policies import ModelPolicy, RandomPolicy, ScriptedPolicy

__all__ = [
    "CollectResult",
    "Decision",
    "InferenceServer",
    "ModelPolicy",
    "RandomPolicy",
    "ScriptedPolicy",
    "collect_async",
    "collect_sync",
]
