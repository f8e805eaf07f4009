"""The ground floor: the vocabulary every layer shares, torch-free and importing nothing of ours.

* :mod:`~distrl_tasks.protocol.actions`: the AutoUI action string, its parser and formatter.
* :mod:`~distrl_tasks.protocol.observation`: what a policy sees (prompt + screenshot features).
* :mod:`~distrl_tasks.protocol.ratelimit`: request pacing and retry backoff for remote APIs.
* :mod:`~distrl_tasks.protocol.files`: atomic writes and strict JSON reads.

The simulator, the environments, the agents and the evaluators all speak this vocabulary, so it
sits below them; the import contract in ``pyproject.toml`` keeps it free of upward imports.
"""
