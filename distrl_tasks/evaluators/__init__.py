"""Trajectory judges: the :class:`Evaluator` interface, Gemini, and agreement reports.

The Gemini evaluator is imported lazily (it needs google-genai), so the interface and the
agreement report work with the base install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from distrl_tasks.evaluators.evaluator import Evaluator, Verdict

if TYPE_CHECKING:
    from distrl_tasks.evaluators.gemini import GeminiEvaluator

__all__ = ["Evaluator", "GeminiEvaluator", "Verdict"]


def __getattr__(name: str) -> Any:
    if name == "GeminiEvaluator":
        from distrl_tasks.evaluators.gemini import GeminiEvaluator  # lazy: google-genai

        return GeminiEvaluator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
