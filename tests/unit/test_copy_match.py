"""Match features of the copy head: the lengths, and cached decoding equal to teacher forcing."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model, tiny_t5_config
from distrl_tasks.agents.checkpoint import load_checkpoint, save_checkpoint
from distrl_tasks.agents.copy_match import (
    APOSTROPHE,
    INSIDE_ENDS,
    INSIDE_WORD,
    SPACED_START,
    START_ENDS,
    SYMBOL,
    WORD_START,
    MatchCache,
    covered,
    legacy_kinds,
    match_lengths,
    piece_kinds,
    start_kinds,
    upgrade_start_bias,
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
    # carries its space, and an apostrophe is inside a word or a quote depending on what it follows
    texts = ["", "the ", "nearest ", "L", "o", "we", "'", "s", "? ", "razer", " x "]
    kinds = piece_kinds(texts)
    assert kinds.tolist() == [
        SYMBOL, INSIDE_ENDS, INSIDE_ENDS, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, APOSTROPHE,
        INSIDE_WORD, SYMBOL, INSIDE_WORD, START_ENDS,
    ]  # fmt: skip
    lowes = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 6, 9, 6]])  # ... Lowe's? 'razer'
    assert start_kinds(lowes, kinds).tolist() == [[
        WORD_START, WORD_START, WORD_START, INSIDE_WORD, INSIDE_WORD, SYMBOL,
        INSIDE_WORD,  # the "s" of Lowe's continues its word
        SYMBOL, SYMBOL,
        WORD_START,  # "razer" after an opening quote begins one
        SYMBOL,
    ]]  # fmt: skip
    after_space = torch.tensor([[10, 6, 9]])  # " x " then a quote: the quote follows no letter
    assert start_kinds(after_space, kinds).tolist() == [[WORD_START, SYMBOL, WORD_START]]
    assert start_kinds(torch.tensor([[3]]), kinds).tolist() == [[WORD_START]]  # one piece
    # as models trained before word ends were read: only the piece after a symbol starts a word
    assert start_kinds(lowes, legacy_kinds(kinds)).tolist() == [[
        WORD_START, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, INSIDE_WORD, SYMBOL,
        WORD_START, SYMBOL, SYMBOL, WORD_START, SYMBOL,
    ]]  # fmt: skip


def test_spaced_starts_apart_from_starts_after_a_symbol_or_quote() -> None:
    # "for 6pm 'razer x'": the hour begins after a space, the quoted query after its quote
    texts = ["", "for ", "6", "pm ", "'", "razer ", "x", "'", " y"]
    kinds = piece_kinds(texts)
    src = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    assert start_kinds(src, kinds, spaced=True).tolist() == [[
        WORD_START,  # the prompt's start
        SPACED_START,  # "6" after "for "
        INSIDE_WORD,  # "pm" continues "6pm"
        SYMBOL,
        WORD_START,  # "razer" after the opening quote
        SPACED_START,  # "x" after "razer "
        SYMBOL,
        SPACED_START,  # a " y" piece begins with its own space
    ]]  # fmt: skip
    plain = start_kinds(src, kinds).tolist()[0]
    assert plain == [WORD_START, WORD_START, INSIDE_WORD, SYMBOL, WORD_START, WORD_START,
                     SYMBOL, WORD_START]  # fmt: skip


def test_a_word_ends_model_scores_spaced_starts_on_their_own() -> None:
    config = tiny_t5_config(16, d_model=64, layers=1, copy_word_ends=True)
    model = AutoUIModel(config, image_dim=8)
    assert model.copy_start_bias.shape == (4,)
    model.set_piece_kinds(piece_kinds(["", "", "", "for ", "6", "pm ", "'", "razer "]))
    with torch.no_grad():
        model.copy_start_bias.copy_(torch.tensor([-2.0, 0.5, -1.0, 0.25]))
    src = torch.tensor([[3, 4, 5, 6, 7, 1]])  # "for 6pm 'razer", eos
    none = torch.zeros(1, 1, 6, dtype=torch.long)
    got = model.span_scores(none, none.bool(), src)[0, 0].tolist()
    assert got == [0.5, 0.25, -2.0, -1.0, 0.5, -1.0]
    plain = AutoUIModel(tiny_t5_config(16, d_model=64, layers=1), image_dim=8)
    assert plain.copy_start_bias.shape == (3,)


def test_a_word_ends_checkpoint_from_before_spaced_starts_loads_as_it_decoded(
    tmp_path: Path,
) -> None:
    model = build_tiny_model(image_dim=8, copy_word_ends=True)
    with torch.no_grad():
        model.copy_start_bias.copy_(torch.tensor([-2.0, 0.75, -1.0, 9.0]))
    directory = save_checkpoint(model, ByteTokenizer(), tmp_path / "ck")
    # the file as saved before the fourth kind: three scores
    state = load_file(directory / "model.safetensors")
    state["copy_start_bias"] = state["copy_start_bias"][:3].clone()
    save_file(state, directory / "model.safetensors", metadata={"format": "pt"})
    loaded, _ = load_checkpoint(directory)
    assert loaded.copy_start_bias.tolist() == [-2.0, 0.75, -1.0, 0.75]  # spaced = word start
    scores = {"copy_start_bias": torch.tensor([1.0, 2.0, 3.0, 4.0])}
    upgrade_start_bias(scores, 4)  # already four: untouched
    assert scores["copy_start_bias"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_model_reads_word_ends_only_when_its_config_says_so() -> None:
    texts = ["", "", "", "nearest ", "L", "'", "s"]
    cases = {
        True: [INSIDE_ENDS, INSIDE_WORD, APOSTROPHE, INSIDE_WORD],
        False: [INSIDE_WORD, INSIDE_WORD, SYMBOL, INSIDE_WORD],
    }
    for word_ends, expected in cases.items():
        config = tiny_t5_config(16, d_model=64, layers=1, copy_word_ends=word_ends)
        model = AutoUIModel(config, image_dim=8)
        assert model.copy_word_ends is word_ends
        model.set_piece_kinds(piece_kinds(texts))
        assert model.copy_piece_kinds.tolist()[3:7] == expected
    assert tiny_t5_config(16, copy_match=0, copy_word_ends=True).copy_word_ends is False


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
    model, tokenizer, card = load_base(SHIPPED)
    assert not card["model_config"].get("copy_word_ends") and not model.copy_word_ends
    AutoUIPolicy(model, tokenizer)  # sets the piece kinds from its tokenizer
    lowes = torch.tensor([tokenizer.encode("the nearest Lowe's")])
    kinds = start_kinds(lowes, model.copy_piece_kinds)[0].tolist()
    assert kinds[-1] == WORD_START and kinds.count(WORD_START) == 2  # the prompt's start, and "s"
