"""Match features of the copy head: the lengths, and cached decoding equal to teacher forcing."""

from __future__ import annotations

import torch

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.copy_match import MatchCache, match_lengths


def _brute(d: list[int], x: list[int], mask: list[int], k_max: int) -> list[list[int]]:
    out = []
    for t in range(len(d)):
        row = []
        for i in range(len(x)):
            k = 0
            while (
                k < k_max
                and t - k >= 0
                and i - 1 - k >= 0
                and d[t - k] != 0
                and mask[i - 1 - k]
                and d[t - k] == x[i - 1 - k]
            ):
                k += 1
            row.append(k)
        out.append(row)
    return out


def test_match_lengths_equal_brute_force() -> None:
    gen = torch.Generator().manual_seed(0)
    d = torch.randint(0, 4, (3, 9), generator=gen)
    x = torch.randint(1, 4, (3, 11), generator=gen)
    mask = torch.ones_like(x)
    mask[1, 7:] = 0
    got = match_lengths(d, x, mask, max_len=3)
    for b in range(3):
        assert got[b].tolist() == _brute(d[b].tolist(), x[b].tolist(), mask[b].tolist(), 3)


def test_copied_run_points_at_the_next_source_token() -> None:
    x = torch.tensor([[5, 6, 7, 8, 9, 1]])
    d = torch.tensor([[0, 6, 7]])  # start, then "6 7" copied from the source
    k = match_lengths(d, x, torch.ones_like(x), max_len=8)
    assert k[0, 2].tolist() == [0, 0, 0, 2, 0, 0]  # x[3] = 8 continues the run of 2
    assert k[0, 0].sum() == 0  # the start token matches nothing


def test_cached_decoding_equals_teacher_forcing() -> None:
    torch.manual_seed(0)
    model = AutoUIModel(tiny_t5_config(64, d_model=64, layers=1), image_dim=8).eval()
    assert model.copy_match == 8
    src = torch.tensor([[10, 11, 12, 13, 14, 1], [20, 21, 22, 1, 0, 0]])
    mask = (src != 0).long()
    with torch.no_grad():
        states = model.encode(src, mask, torch.randn(2, 8))
        labels = torch.tensor([[11, 12, 13, 40], [21, 22, 30, 31]])
        full, _ = model.decode(model.shift_right(labels), states, mask, source_ids=src)
        steps, cache = [], None
        inputs = model.shift_right(labels)
        for t in range(labels.shape[1]):
            out, cache = model.decode(
                inputs[:, t : t + 1], states, mask, cache, use_cache=True, source_ids=src
            )
            steps.append(out)
        assert isinstance(cache, MatchCache) and cache.get_seq_length() == 4
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    # the match bias makes the copied run's continuation the likeliest copy target
    assert full[0, 2].argmax().item() == 13 or full[0, 2, 13] > full[0, 2, 14]


def test_models_without_match_keep_the_plain_cache() -> None:
    model = AutoUIModel(tiny_t5_config(64, d_model=64, layers=1, copy_match=0), image_dim=8)
    src = torch.tensor([[10, 11, 1]])
    states = model.encode(src, torch.ones_like(src), torch.randn(1, 8))
    _, cache = model.decode(
        torch.zeros(1, 1, dtype=torch.long), states, torch.ones_like(src), None, True, src
    )
    assert not isinstance(cache, MatchCache) and not hasattr(model, "copy_match_bias")
