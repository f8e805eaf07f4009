"""Progress bars: a bar on the CLI, silence when off, and log lines under a task log."""

from __future__ import annotations

import logging
import time

import pytest

from distrl_tasks.protocol.progress import progress_bar, progress_to_log


def test_off_outside_a_task_log(capsys) -> None:
    with progress_bar(total=3, desc="quiet", enabled=False) as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""
    with progress_bar(total=3, desc="loud", enabled=True) as bar:
        bar.update(3)
    assert "loud: 100%" in capsys.readouterr().err


def test_a_task_log_gets_lines_even_while_one_step_takes_long(caplog) -> None:
    caplog.set_level(logging.INFO, logger="distrl_tasks.progress")
    with progress_to_log(every_s=0.2), progress_bar(total=4, desc="train r1", enabled=False) as bar:
        bar.update(1)
        time.sleep(0.75)  # one slow step: the heartbeat still writes
        bar.update(3)
    lines = [r.getMessage() for r in caplog.records if r.name == "distrl_tasks.progress"]
    assert lines[0].startswith("train r1:   0%")  # the bar opens with a line
    beats = [line for line in lines if "1/4" in line]
    assert len(beats) >= 2  # refreshed while nothing moved
    assert "4/4" in lines[-1] and "\r" not in "".join(lines)


def test_the_task_log_mode_ends_with_its_block(caplog) -> None:
    caplog.set_level(logging.INFO, logger="distrl_tasks.progress")
    with progress_to_log(every_s=5):
        pass
    with progress_bar(total=1, desc="after", enabled=False) as bar:
        bar.update(1)
    assert not caplog.records
    with pytest.raises(ValueError, match="every_s must be > 0"), progress_to_log(every_s=0):
        pass
