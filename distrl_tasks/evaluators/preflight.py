"""What a labeled run checks before any work: the evaluator can be reached and will answer.

A Gemini round that would fail at its first label call (no key, a retired model) fails at start
instead, before a device is started or a trajectory collected.
"""

from __future__ import annotations

from typing import Any

from distrl_tasks.evaluators.evaluator import require_labeling_key


def check_labeling(cfg: Any, api_key: str | None = None) -> None:
    """The key, and that the endpoint serves ``evaluator.model`` (one ``models.get``); nothing
    for the oracle.

    Args:
        cfg: the project config.
        api_key: a key found elsewhere (an Airflow connection); else ``GEMINI_API_KEY``.

    Raises:
        MissingApiKeyError: no key (see
            :func:`~distrl_tasks.evaluators.evaluator.require_labeling_key`).
        UnknownModelError: the endpoint does not serve the model; the message lists what it does.
        EndpointUnavailableError: the endpoint refused the key or could not be reached.
    """
    require_labeling_key(cfg, api_key)
    if cfg.evaluator.kind != "gemini":
        return
    from distrl_tasks.evaluators.gemini import GeminiEvaluator  # lazy: google-genai (DAG parsing)

    GeminiEvaluator.from_config(cfg, api_key=api_key).check_model()
