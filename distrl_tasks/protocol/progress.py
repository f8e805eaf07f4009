"""Progress bars that reach a task log too: a bar on a terminal, a log line every 30 s elsewhere.

Every long loop of the stages builds its bar with :func:`progress_bar`. On the CLI that is a tqdm
bar on stderr (or nothing, when progress is off). Inside :func:`progress_to_log` (what the Airflow
tasks run their stage under) the same bar writes its state to a logger instead, at least every
``every_s`` seconds: a heartbeat thread refreshes it even while one step takes minutes, so a task
log never sits silent.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from tqdm import tqdm

LOG_EVERY_S = 30.0
log = logging.getLogger("distrl_tasks.progress")
_sink: tuple[logging.Logger, float] | None = None  # one task per process: a plain global


@contextlib.contextmanager
def progress_to_log(logger: logging.Logger = log, every_s: float = LOG_EVERY_S) -> Iterator[None]:
    """Within this block, every :func:`progress_bar` logs to ``logger`` every ``every_s`` s."""
    global _sink
    if every_s <= 0:
        raise ValueError(f"every_s must be > 0, got {every_s}")
    previous, _sink = _sink, (logger, every_s)
    try:
        yield
    finally:
        _sink = previous


class _LogLines(io.TextIOBase):
    """A text stream that logs each non-empty line tqdm writes (it separates them with \\r)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def write(self, text: str) -> int:
        for line in text.replace("\r", "\n").split("\n"):
            if line.strip():
                self.logger.info("%s", line.strip())
        return len(text)


class _LoggedBar(tqdm):
    """A tqdm bar drawn into a logger, refreshed by a heartbeat thread every ``every_s``."""

    def __init__(self, *args: Any, logger: logging.Logger, every_s: float, **kwargs: Any) -> None:
        kwargs.update(
            file=_LogLines(logger),
            mininterval=every_s,
            maxinterval=every_s,
            ascii=True,
            ncols=100,
            dynamic_ncols=False,
            disable=False,
        )
        super().__init__(*args, **kwargs)
        self._stopped = threading.Event()
        self._beat = threading.Thread(
            target=self._heartbeat, args=(every_s,), name="progress-log", daemon=True
        )
        self._beat.start()

    def _heartbeat(self, every_s: float) -> None:
        while not self._stopped.wait(every_s):
            self.refresh()

    def close(self) -> None:
        stopped = getattr(self, "_stopped", None)
        if stopped is not None:
            stopped.set()
        super().close()


def progress_bar(iterable: Iterable[Any] | None = None, *, enabled: bool, **kwargs: Any) -> tqdm:
    """A tqdm bar: on stderr when ``enabled``; logged when a :func:`progress_to_log` block is
    active, whatever ``enabled`` says (a task log has no terminal to draw on); else silent.

    Args:
        iterable: what the bar wraps (as tqdm's first argument).
        enabled: whether the caller asked for a bar (the CLI's ``--no-progress`` turns it off).
        **kwargs: tqdm's own arguments (``total``, ``desc``, ``unit``, ...).
    """
    sink = _sink
    if sink is not None:
        return _LoggedBar(iterable, logger=sink[0], every_s=sink[1], **kwargs)
    return tqdm(iterable, disable=not enabled, **kwargs)
