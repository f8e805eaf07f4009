"""The learner process's wire: weights, trajectories, the learner-side board, and failures.

The whole round with the learner in its own process runs in
tests/integration/test_continuous_round.py; here each piece runs alone, over a real pipe.
"""

from __future__ import annotations

import multiprocessing
import threading

import pytest
import torch

from distrl_tasks.agents.checkpoint import CheckpointError, load_weights_bytes, weights_to_bytes
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import AgentConfig, config_from_dict
from distrl_tasks.orchestration.actor_learner.process import (
    LearnerProcess,
    LearnerProcessError,
    _Channel,
    _PipeBoard,
    table_from_bytes,
    table_to_bytes,
)
from tests.unit.test_continuous import trajectory


def test_weights_travel_as_safetensors_bytes_with_tied_tensors_once():
    source, target = build_policy(AgentConfig(), seed=0), build_policy(AgentConfig(), seed=1)
    assert source.model.tied  # the embedding and the head share one tensor
    data = weights_to_bytes(source.model)
    load_weights_bytes(target.model, data)
    for (name, a), b in zip(
        source.model.state_dict().items(), target.model.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    # still tied after the load: the head follows the embedding it shares
    assert target.model.lm_head.weight.data_ptr() == target.model.shared.weight.data_ptr()


def test_weights_that_are_not_the_models_are_refused():
    model = build_policy(AgentConfig(), seed=0).model
    with pytest.raises(CheckpointError, match="not safetensors"):
        load_weights_bytes(model, b"not weights")
    other = torch.nn.Linear(3, 2)
    with pytest.raises(CheckpointError, match="do not fit the model"):
        load_weights_bytes(model, weights_to_bytes(other))


def test_trajectories_travel_as_arrow_ipc():
    table = trajectory("t1", 3, True, seed=0)
    again = table_from_bytes(table_to_bytes(table))
    assert again.equals(table)


def test_the_learner_side_board_counts_updates_and_forwards_updates_and_versions():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    board, peer = _PipeBoard(_Channel(theirs), replay_ratio=0.5), _Channel(ours)
    assert board.updates_owed() == 0
    board.set_transitions(5)
    board.set_transitions(3)  # counts only grow (a late message cannot lower them)
    assert board.transitions == 5 and board.updates_owed() == pytest.approx(2.5)
    assert board.wait_for_data(0.0)
    board.record_updates(2)
    assert board.updates_owed() == pytest.approx(0.5)
    assert peer.recv() == ({"kind": "updates", "n": 2}, None)
    policy = build_policy(AgentConfig(), seed=3)
    # 22 MB of weights: more than a pipe buffers, so the other end reads while it is sent
    sender = threading.Thread(target=board.publish, args=(policy, 7))
    sender.start()
    header, payload = peer.recv()
    sender.join(30.0)
    assert header == {"kind": "version", "version": 7}
    copy = build_policy(AgentConfig(), seed=4)
    load_weights_bytes(copy.model, payload)
    assert torch.equal(copy.model.shared.weight, policy.model.shared.weight)
    assert board.staleness_summary() == {}  # measured on the actors' side
    # closing wakes a learner waiting for data, and tells it to stop
    waiter: dict[str, bool] = {}
    t = threading.Thread(target=lambda: waiter.update(ok=board.wait_for_data(30.0)))
    t.start()
    board.close()
    t.join(5.0)
    assert waiter == {"ok": False} and board.closed


def test_a_learner_that_cannot_start_is_reported_with_its_traceback(tmp_path):
    # no registered starting policy in this workdir: opening the learner fails in the process
    cfg = config_from_dict({"orchestration": {"continuous": {"replay_ratio": 0.5}}})
    with pytest.raises(LearnerProcessError, match="the learner process failed") as err:
        LearnerProcess(cfg, tmp_path, 1)
    assert "Traceback" in str(err.value)


def test_a_closed_pipe_sends_nothing_and_says_so():
    ours, theirs = multiprocessing.Pipe(duplex=True)
    theirs.close()
    ours.close()
    assert _Channel(ours).try_send({"kind": "stop"}) is False
