"""SIGTERM unwinds the `distrl` command, so `finally` blocks (stopping a farm) still run."""

from __future__ import annotations

import os
import signal

import pytest

from distrl_tasks.cli import main as cli


def test_sigterm_raises_system_exit_and_runs_finally_blocks() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    cleaned = []
    try:
        cli._exit_on_sigterm()
        with pytest.raises(SystemExit) as info:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.sigtimedwait([], 0.1)  # let the handler run here, not later
            finally:
                cleaned.append("farm stopped")
        assert info.value.code == 128 + signal.SIGTERM
        assert cleaned == ["farm stopped"]
    finally:
        signal.signal(signal.SIGTERM, previous)
