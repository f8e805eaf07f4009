"""The torch-threads context a training stage runs under: set for the block, restored after."""

from __future__ import annotations

import os

import pytest
import torch

from distrl_tasks.stages.common import torch_threads


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(before)


def test_sets_the_count_for_the_block_and_restores_the_previous_one(restore_threads) -> None:
    with torch_threads(1) as used:
        assert used == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 3


@pytest.mark.parametrize("threads", [0, None])
def test_zero_or_none_means_every_core_this_process_may_use(restore_threads, threads) -> None:
    with torch_threads(threads) as used:
        assert used == len(os.sched_getaffinity(0))
        assert torch.get_num_threads() == used
    assert torch.get_num_threads() == 3


def test_restores_when_the_block_raises(restore_threads) -> None:
    with pytest.raises(RuntimeError, match="boom"), torch_threads(2):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 3
