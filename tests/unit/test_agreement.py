"""Agreement report between two evaluators: confusion table, accuracy, Cohen's kappa."""

from __future__ import annotations

import pytest

from distrl_tasks.evaluators.agreement import agreement, to_status
from distrl_tasks.evaluators.evaluator import Verdict

S, F, U = "success", "failure", "unlabeled"


def test_hand_computed_table_accuracy_and_kappa() -> None:
    a = [S, S, S, F, F, F, F, U]
    b = [S, S, F, F, F, F, S, F]
    r = agreement(a, b, name_a="gemini", name_b="oracle")
    assert r.counts[(S, S)] == 2 and r.counts[(S, F)] == 1
    assert r.counts[(F, S)] == 1 and r.counts[(F, F)] == 3
    assert r.counts[(U, F)] == 1
    assert (r.total, r.compared, r.unlabeled_a, r.unlabeled_b) == (8, 7, 1, 0)
    assert r.accuracy == pytest.approx(5 / 7)
    # p_o = 5/7, p_e = (3*3 + 4*4)/49 = 25/49  ->  kappa = (10/49)/(24/49) = 10/24
    assert r.kappa == pytest.approx(10 / 24)
    assert r.success_rate("a") == pytest.approx(3 / 7)
    assert r.success_rate("b") == pytest.approx(3 / 8)


def test_perfect_and_chance_level_agreement() -> None:
    perfect = agreement([S, F, S, F], [S, F, S, F])
    assert perfect.accuracy == 1.0 and perfect.kappa == pytest.approx(1.0)
    # b says the opposite of a on a balanced set: kappa = (0 - 0.5) / 0.5 = -1
    opposite = agreement([S, F, S, F], [F, S, F, S])
    assert opposite.accuracy == 0.0 and opposite.kappa == pytest.approx(-1.0)
    # independent-looking raters: table [[1,1],[1,1]] -> p_o = p_e = 0.5 -> kappa 0
    chance = agreement([S, S, F, F], [S, F, S, F])
    assert chance.kappa == pytest.approx(0.0)


def test_undefined_kappa_and_empty_comparison() -> None:
    constant = agreement([S, S, S], [S, S, S])
    assert constant.accuracy == 1.0 and constant.kappa is None  # chance agreement is 1
    none_labeled = agreement([U, U], [S, F])
    assert none_labeled.compared == 0
    assert none_labeled.accuracy is None and none_labeled.kappa is None
    assert none_labeled.unlabeled_a == 2


def test_accepts_verdicts_bools_and_none() -> None:
    a = [Verdict("success"), Verdict("failure"), Verdict("unlabeled", reason="429")]
    b = [True, False, None]
    r = agreement(a, b)
    assert r.counts[(S, S)] == 1 and r.counts[(F, F)] == 1 and r.counts[(U, U)] == 1
    assert to_status(True) == S and to_status(None) == U


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="differ in length: a 2 vs b 1"):
        agreement([S, F], [S])
    with pytest.raises(ValueError, match="trajectory 1: not a verdict label: 'maybe'"):
        agreement([S, "maybe"], [S, F])
    with pytest.raises(ValueError, match="side must be"):
        agreement([S], [S]).success_rate("c")


def test_markdown_report() -> None:
    md = agreement([S, F, U], [S, S, F], name_a="gemini", name_b="oracle").to_markdown()
    lines = md.splitlines()
    assert lines[0] == "### Agreement: gemini vs oracle"
    assert "| gemini \\ oracle | success | failure | unlabeled |" in lines
    assert "| success | 1 | 0 | 0 |" in lines
    assert "| failure | 1 | 0 | 0 |" in lines
    assert "| unlabeled | 0 | 1 | 0 |" in lines
    assert "- accuracy: 0.500; Cohen's kappa: 0.000" in lines
    assert "- unlabeled: gemini 1, oracle 0" in lines
