"""Match features of the copy head: the lengths, and cached decoding equal to teacher forcing."""

from __future__ import annotations

from pathlib import Path

import torch

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model, tiny_t5_config
from distrl_tasks.agents.checkpoint import load_checkpoint, save_checkpoint
from distrl_tasks.agents.copy_match import (
    INSIDE_WORD,
    SYMBOL,
    WORD_START,
    MatchCache,
    covered,
    match_lengths,
    piece_kinds,
    start_kinds,
)
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.shipped_base import SHIPPED, load_base
from distrl_tasks.agents.tokenizer import ByteTokenizer


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


def test_piece_kinds_from_texts() -> None:
    texts = ["", " Lowe", "'s", ' "', "razer", "?", " ", "12"]
    assert piece_kinds(texts).tolist() == [
        SYMBOL, WORD_START, INSIDE_WORD, SYMBOL, INSIDE_WORD, SYMBOL, SYMBOL, INSIDE_WORD
    ]  # fmt: skip


def test_start_kinds_begin_words_after_symbols() -> None:
    # ids: 3 " near" (start), 4 "est" (inside), 5 ' "' (symbol), 6 "raz" (inside), 7 "er" (inside)
    kinds = torch.tensor([SYMBOL, SYMBOL, SYMBOL, WORD_START, INSIDE_WORD, SYMBOL, INSIDE_WORD,
                          INSIDE_WORD])  # fmt: skip
    src = torch.tensor([[3, 4, 5, 6, 7, 1], [6, 7, 3, 1, 0, 0]])
    assert start_kinds(src, kinds).tolist() == [
        [WORD_START, INSIDE_WORD, SYMBOL, WORD_START, INSIDE_WORD, SYMBOL],
        [WORD_START, INSIDE_WORD, WORD_START, SYMBOL, SYMBOL, SYMBOL],  # prompt start begins one
    ]


def test_start_kinds_of_a_whitespace_as_suffix_vocabulary_and_apostrophes() -> None:
    # the shipped vocabulary's pieces for "the nearest Lowe's? 'razer'": a word's last piece
    # carries its space, which does not end the word for the copy; an apostrophe is a symbol
    texts = ["", "the ", "nearest ", "L", "o", "we", "'", "s", "? ", "razer", " x "]
    kinds = piece_kinds(texts)
    assert kinds.tolist() == [
        SYMBOL, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, SYMBOL,
        INSIDE_WORD, SYMBOL, INSIDE_WORD, WORD_START,
    ]  # fmt: skip
    lowes = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 6, 9, 6]])  # ... Lowe's? 'razer'
    assert start_kinds(lowes, kinds).tolist() == [[
        WORD_START,  # the prompt's start
        INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD,  # no start after "the " or "nearest "
        SYMBOL,
        WORD_START,  # the "s" of Lowe's, after the apostrophe
        SYMBOL, SYMBOL,
        WORD_START,  # "razer" after an opening quote
        SYMBOL,
    ]]  # fmt: skip
    after_space = torch.tensor([[10, 6, 9]])  # a " x " piece begins a word with its own space
    assert start_kinds(after_space, kinds).tolist() == [[WORD_START, SYMBOL, WORD_START]]
    assert start_kinds(torch.tensor([[3]]), kinds).tolist() == [[WORD_START]]  # one piece


def test_a_quoted_query_starts_after_its_quote_an_hour_after_a_space_does_not() -> None:
    # "for 6pm 'razer x' y"
    texts = ["", "for ", "6", "pm ", "'", "razer ", "x", "'", " y"]
    src = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    assert start_kinds(src, piece_kinds(texts)).tolist() == [[
        WORD_START, INSIDE_WORD, INSIDE_WORD, SYMBOL, WORD_START, INSIDE_WORD, SYMBOL, WORD_START
    ]]  # fmt: skip


def test_a_model_records_the_piece_kinds_and_its_config_has_no_word_ends_key() -> None:
    config = tiny_t5_config(16, d_model=64, layers=1)
    assert not hasattr(config, "copy_word_ends")  # new checkpoints do not write the retired key
    model = AutoUIModel(config, image_dim=8)
    assert model.copy_start_bias.shape == (3,)  # one score per start kind
    model.set_piece_kinds(piece_kinds(["", "", "", "nearest ", "L", "'", "s"]))
    assert model.copy_piece_kinds.tolist()[3:7] == [INSIDE_WORD, INSIDE_WORD, SYMBOL, INSIDE_WORD]


def test_coverage_by_hand() -> None:
    src = torch.tensor([[5, 6, 7, 5, 1]])
    d = torch.tensor([[0, 6, 9, 5]])  # start (covers nothing), then 6, 9, 5
    got = covered(d, src).long()[0].tolist()
    assert got == [
        [0, 0, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [1, 1, 0, 1, 0],  # both 5s of the prompt are written now
    ]


def test_span_scores_by_hand() -> None:
    model = AutoUIModel(tiny_t5_config(16, d_model=64, layers=1, copy_span=True), image_dim=8)
    model.set_piece_kinds(piece_kinds(["", "", "", " Katy", " Perry", "?", "er"]))
    assert model.copy_piece_kinds.tolist()[:7] == [2, 2, 2, 1, 1, 2, 0]
    assert model.copy_piece_kinds.tolist()[7:] == [SYMBOL] * 9  # ids the tokenizer lacks
    with torch.no_grad():
        model.copy_start_bias.copy_(torch.tensor([-2.0, 0.5, -1.0]))
        model.copy_cover_bias.fill_(-3.0)
    src = torch.tensor([[3, 4, 6, 5, 1]])  # " Katy", " Perry", "er", "?", eos
    match = torch.tensor([[[0, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]])
    cover = torch.tensor([[[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]]).bool()
    got = model.span_scores(match, cover, src)[0].tolist()
    assert got == [
        [0.5, 0.5, -2.0, -1.0, -1.0],
        [-2.5, 0.0, -2.0, -1.0, -1.0],  # " Katy" written: restarting there costs -3 more
        [-2.5, -2.5, 0.0, -1.0, -1.0],  # " Perry" written too; "er" continues a run: no score
    ]


def test_span_model_cached_decoding_equals_teacher_forcing() -> None:
    torch.manual_seed(1)
    model = AutoUIModel(tiny_t5_config(64, d_model=64, layers=1, copy_span=True), image_dim=8)
    model.set_piece_kinds(torch.randint(0, 3, (64,)))
    src = torch.tensor([[10, 11, 12, 10, 14, 1], [20, 21, 22, 1, 0, 0]])
    mask = (src != 0).long()
    labels = torch.tensor([[10, 11, 10, 14, 40], [21, 21, 22, 30, 31]])
    with torch.no_grad():
        states = model.encode(src, mask, torch.randn(2, 8))
        full, _ = model.decode(model.shift_right(labels), states, mask, source_ids=src)
        inputs, steps, cache = model.shift_right(labels), [], None
        for t in range(labels.shape[1]):
            out, cache = model.decode(
                inputs[:, t : t + 1], states, mask, cache, use_cache=True, source_ids=src
            )
            steps.append(out)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_copy_span_only_with_the_match_bias() -> None:
    assert tiny_t5_config(64).copy_span is True  # the embedded default
    assert tiny_t5_config(64, copy_match=0).copy_span is False
    assert tiny_t5_config(64, copy=False).copy_span is False
    model = AutoUIModel(tiny_t5_config(64, d_model=64, layers=1, copy_match=0), image_dim=8)
    assert not model.copy_span and not hasattr(model, "copy_start_bias")


def test_policy_sets_start_kinds_and_the_checkpoint_keeps_them(tmp_path: Path) -> None:
    model = build_tiny_model(image_dim=8, copy_span=True)
    AutoUIPolicy(model, ByteTokenizer())  # byte ids: b + 3
    kinds = model.copy_piece_kinds
    assert [int(kinds[ord(c) + 3]) for c in " a?Z7"] == [
        SYMBOL, INSIDE_WORD, SYMBOL, INSIDE_WORD, INSIDE_WORD
    ]  # fmt: skip
    assert int(kinds[1]) == SYMBOL  # eos writes nothing
    with torch.no_grad():
        model.copy_cover_bias.fill_(-5.0)
    directory = save_checkpoint(model, ByteTokenizer(), tmp_path / "ck")
    loaded, _ = load_checkpoint(directory)
    assert loaded.copy_span and bool(loaded.config.copy_span)
    assert torch.equal(loaded.copy_piece_kinds, kinds)
    assert float(loaded.copy_cover_bias.detach()) == -5.0


def test_the_shipped_base_reads_its_word_starts_as_it_was_trained() -> None:
    model, tokenizer, _card = load_base(SHIPPED)
    AutoUIPolicy(model, tokenizer)  # sets the piece kinds from its tokenizer
    lowes = torch.tensor([tokenizer.encode("the nearest Lowe's")])
    kinds = start_kinds(lowes, model.copy_piece_kinds)[0].tolist()
    assert kinds[-1] == WORD_START and kinds.count(WORD_START) == 2  # the prompt's start, and "s"
