"""The ``distrl`` command: :func:`distrl_tasks.cli.main.main`, one module per command group."""
