"""Element exploration: the screen's targets, the mixture's behaviour log-prob, its metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distrl_tasks.agents.autoui import build_tiny_model
from distrl_tasks.agents.grammar import ActionGrammar
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.envs.android_env import EnvObservation
from distrl_tasks.protocol.actions import format_action, parse_action, tap
from distrl_tasks.protocol.observation import format_prompt
from distrl_tasks.protocol.ui_dump import actionable_elements, goal_elements
from distrl_tasks.runners.exploration import (
    ElementExploration,
    exploration_metrics,
    mixture_log_prob,
)
from distrl_tasks.runners.policies import ModelPolicy, RandomPolicy

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# a 1000x2000 screen: a full-screen root, two buttons, an edit field, a hidden and an
# off-screen node, and a second node on the first button's centre
XML = """<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0">
<node text="" class="android.widget.FrameLayout" package="com.android.chrome"
 bounds="[0,0][1000,2000]" clickable="false">
 <node text="Search   or type web address" class="android.widget.EditText"
  bounds="[100,100][900,200]" clickable="false" />
 <node text="News" content-desc="" class="android.widget.Button" bounds="[0,400][200,600]"
  clickable="true" />
 <node text="" content-desc="News icon" class="android.widget.ImageView"
  bounds="[50,450][150,550]" clickable="true" />
 <node text="Hidden" class="android.widget.Button" bounds="[10,10][10,10]" clickable="true" />
 <node text="Below" class="android.widget.Button" bounds="[0,2100][100,2200]" clickable="true" />
 <node text="" content-desc="Settings" class="android.widget.ImageButton"
  bounds="[800,1800][1000,2000]" clickable="true" />
</node></hierarchy>"""


def test_actionable_elements_are_the_screens_targets_in_the_action_spelling() -> None:
    elements = actionable_elements(XML)
    assert [e.label for e in elements] == ["Search or type web addre", "News", "Settings"]  # cut
    assert [e.point for e in elements] == [(0.075, 0.5), (0.25, 0.1), (0.95, 0.9)]
    assert elements[0].editable and not elements[1].editable
    assert parse_action(elements[1].tap_action()).touch_point == (0.25, 0.1)
    assert elements[1].tap_action() == format_action(tap(0.25, 0.1), plan="")
    assert actionable_elements(XML, limit=2) == elements[:2]
    assert actionable_elements("not xml") == []


def test_mixture_log_prob_by_hand() -> None:
    # (1 - 0.2) * 0.5 + 0.2 * (1 / 4) = 0.45
    assert mixture_log_prob(math.log(0.5), 0.2, 0.25) == pytest.approx(math.log(0.45))
    # an action no element spells: only the policy's share
    assert mixture_log_prob(math.log(0.5), 0.2, 0.0) == pytest.approx(math.log(0.4))
    assert mixture_log_prob(-3.0, 0.0, 0.5) == -3.0
    # a policy log-prob far below the exploration's share stays finite and exact
    assert mixture_log_prob(-1e4, 0.1, 0.5) == pytest.approx(math.log(0.05))
    with pytest.raises(ValueError, match="epsilon"):
        mixture_log_prob(0.0, 1.0, 0.5)


def observation(i: int, xml: str = XML) -> EnvObservation:
    feats = np.random.default_rng(i).standard_normal(1408).astype(np.float16)
    return EnvObservation("Open the news", format_prompt("Open the news"), b"", feats, 0,
                          f"ep{i}", ui_xml=xml)  # fmt: skip


def model_policy() -> ModelPolicy:
    tok = ByteTokenizer()
    policy = AutoUIPolicy(build_tiny_model(seed=0).eval(), tok, max_new_tokens=256,
                          grammar=ActionGrammar(tok, tok.VOCAB_SIZE))  # fmt: skip
    return ModelPolicy(policy, seed=1)


def test_the_stored_log_prob_is_the_mixtures_probability_of_what_acted() -> None:
    eps = 0.5
    inner = model_policy()
    exploration = ElementExploration(eps, seed=3)
    acting = exploration.wrap(inner)
    obs = [observation(i) for i in range(6)] + [observation(9, xml="")]
    texts, log_probs = acting.act(obs)
    taps = [e.tap_action() for e in actionable_elements(XML)]
    log_pi = inner.log_prob(obs, texts)  # the policy's own probability of each action
    explored = [i for i, t in enumerate(texts[:6]) if t in taps]
    assert explored and exploration.explored_steps == len(explored)
    assert exploration.steps == 6  # the screen without a dump explores nothing
    for i, (text, lp) in enumerate(zip(texts, log_probs, strict=True)):
        if i == 6:  # no elements: mu = pi
            assert lp == pytest.approx(log_pi[i], abs=1e-4)
            continue
        q = 1 / len(taps) if text in taps else 0.0
        expected = math.log((1 - eps) * math.exp(log_pi[i]) + eps * q)
        assert lp == pytest.approx(expected, abs=1e-4)
    assert exploration.explored_episodes == {f"ep{i}" for i in explored}
    # the untrained policy almost never writes an element's exact tap: an explored step's
    # probability is the exploration's share, eps / |E|
    for i in explored:
        assert log_probs[i] == pytest.approx(math.log(eps / len(taps)), abs=1e-3)


def test_goal_aware_draws_favour_what_the_goal_names_and_score_the_mixture() -> None:
    # goal "Open the news" names the News button (one word); the search field is a text field
    # (+0.5): with beta = 2 the weights are search 1 + 1 = 2, News 1 + 2 = 3, Settings 1
    exploration = ElementExploration(0.5, seed=4, goal_weight=2.0)
    search, news, settings = (e.tap_action() for e in actionable_elements(XML))
    q = exploration.tap_weights(XML, "Open the news")
    assert list(q) == [search, news, settings]
    assert list(q.values()) == pytest.approx([2 / 6, 3 / 6, 1 / 6])
    assert ElementExploration(0.5).tap_weights(XML, "Open the news") == pytest.approx(
        {search: 1 / 3, news: 1 / 3, settings: 1 / 3}  # beta = 0: uniform
    )
    assert exploration.tap_weights("", "Open the news") == {}
    inner = model_policy()
    acting = exploration.wrap(inner)
    obs = [observation(i) for i in range(40)]
    texts, log_probs = acting.act(obs)
    drawn = [t for t in texts if t in q]
    assert len(drawn) == exploration.explored_steps > 10
    assert drawn.count(news) > drawn.count(settings)
    log_pi = inner.log_prob(obs, texts)
    for text, lp, lpi in zip(texts, log_probs, log_pi, strict=True):
        expected = math.log(0.5 * math.exp(lpi) + 0.5 * q.get(text, 0.0))
        assert lp == pytest.approx(expected, abs=1e-4)
    with pytest.raises(ValueError, match="goal_weight"):
        ElementExploration(0.1, goal_weight=-1.0)


def test_exploration_share_follows_epsilon_and_wraps_only_scoring_policies() -> None:
    exploration = ElementExploration(0.3, seed=0)
    acting = exploration.wrap(model_policy())
    for k in range(10):
        acting.act([observation(10 * k + i) for i in range(8)])
    assert exploration.steps == 80
    assert 0.15 < exploration.explored_steps / 80 < 0.45
    assert ElementExploration(0.0).wrap(RandomPolicy()) is not None  # off: nothing to check
    with pytest.raises(TypeError, match="log_prob"):
        ElementExploration(0.1).wrap(RandomPolicy())


def test_exploration_metrics_per_family() -> None:
    outcomes = [
        ("a", "set_alarm", True),
        ("b", "set_alarm", False),
        ("c", "open_app", True),
        ("d", "web_search", True),
        ("e", "web_search", None),  # not labeled: left out
    ]
    metrics = exploration_metrics(outcomes, {"a", "b", "c", "e"})
    assert metrics == {
        "rollout/explore_episode_share": 0.75,
        "rollout/explore_success/open_app": 1.0,
        "rollout/explore_success/set_alarm": 0.5,
        "rollout/explore_success": 2 / 3,
    }
    assert exploration_metrics([], set()) == {}


def test_goal_elements_list_what_the_goal_names_first_in_screen_order() -> None:
    # "settings" is named by the goal, the text field gets half a point, "News" nothing
    two = goal_elements(XML, "Open the settings", 2)
    assert [e.label for e in two] == ["Search or type web addre", "Settings"]
    assert [e.label for e in goal_elements(XML, "Read the news", 1)] == ["News"]
    assert goal_elements(XML, "anything", 0) == []
    assert len(goal_elements(XML, "anything", 10)) == 3
    assert [e.point for e in two] == [(0.075, 0.5), (0.95, 0.9)]
