"""AutoUI action strings: parsing, formatting, fallbacks and the round trip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from distrl_tasks.protocol.actions import (
    FALLBACK,
    Action,
    ActionType,
    format_action,
    key,
    parse_action,
    swipe,
    tap,
    type_text,
)

PAPER_EXAMPLE = (
    "Action Plan: [DUAL_POINT,TYPE,PRESS_ENTER] ; Action Decision: "
    '"action_type": "DUAL_POINT", "touch_point": "[0.1046, 0.5177]", '
    '"lift_point": "[0.1046, 0.5177]", "typed_text": ""'
)


def test_parses_the_autoui_format() -> None:
    a = parse_action(PAPER_EXAMPLE)
    assert a.action_type is ActionType.DUAL_POINT
    assert a.touch_point == (0.1046, 0.5177) == a.lift_point
    assert a.is_tap and not a.invalid
    assert a.plan == "[DUAL_POINT,TYPE,PRESS_ENTER]"


def test_type_and_keys() -> None:
    a = parse_action('"action_type": "TYPE", "typed_text": "say \\"hi\\" to O\'Brien"')
    assert a.action_type is ActionType.TYPE and a.typed_text == 'say "hi" to O\'Brien'
    assert parse_action('"action_type": "PRESS_HOME"').action_type is ActionType.PRESS_HOME
    done = parse_action('"action_type": "STATUS_TASK_COMPLETE"')
    assert done.ends_episode and not done.invalid


def test_swipe_is_not_a_tap() -> None:
    a = swipe(0.8, 0.5, 0.2, 0.5)
    assert a.action_type is ActionType.DUAL_POINT and not a.is_tap
    assert tap(0.5, 0.5).is_tap


def test_malformed_outputs_fall_back_and_flag_invalid() -> None:
    bad = [
        "",
        "tap the button",
        '"action_type": "CLICK"',  # unknown type
        '"action_type": "DUAL_POINT", "touch_point": "[0.5]", "lift_point": "[0.5, 0.5]"',
        '"action_type": "DUAL_POINT", "touch_point": "[1.5, 0.2]", "lift_point": "[0.5, 0.5]"',
        '"action_type": "DUAL_POINT"',
        '"action_type": "TYPE"',  # no typed_text field at all
        "Action Plan: [TYPE ; Action Decision: garbage",
        # numbers a sampling policy may write that are not numbers at all
        '"action_type": "DUAL_POINT", "touch_point": "[0.0.042, 0.5]", "lift_point": "[0.5, 0.5]"',
        '"action_type": "DUAL_POINT", "touch_point": "[., 0.5]", "lift_point": "[0.5, 0.5]"',
        '"action_type": "DUAL_POINT", "touch_point": "[1e999, 0.5]", "lift_point": "[0.5, 0.5]"',
    ]
    for text in bad:
        a = parse_action(text)
        assert a.invalid, text
        assert a.action_type is ActionType.TASK_IMPOSSIBLE
    assert parse_action(None) == FALLBACK  # type: ignore[arg-type]


def test_an_output_cut_off_inside_a_field_is_invalid_a_repeated_field_is_not() -> None:
    head = '"action_type": "DUAL_POINT", "touch_point": "[0.8975, 0.5000]", '
    lift = '"lift_point": "[0.8975, 0.5000]", '
    # a looping decoder stopped by the token budget: mid-field, or just after opening one
    for tail in ('"lift_point": "[0.8975, 0.5', '"', '"lift_po'):
        a = parse_action(head + lift * 5 + tail)
        assert a.invalid and a.action_type is ActionType.TASK_IMPOSSIBLE, tail
    # the same fields, closed: a repeated field counts once and the action stands
    closed = parse_action(head + lift * 2 + '"typed_text": ""')
    assert not closed.invalid and closed.is_tap and closed.touch_point == (0.8975, 0.5)
    assert not parse_action(PAPER_EXAMPLE + " ").invalid  # trailing separators are fine
    assert not parse_action(PAPER_EXAMPLE + ', "extra": "x"').invalid  # complete, unknown: ignored
    # an unescaped quote inside typed text leaves a dangling fragment: malformed
    assert parse_action('"action_type": "TYPE", "typed_text": "say "hi""').invalid


def test_key_helper_rejects_argument_actions() -> None:
    assert key(ActionType.PRESS_BACK) == Action(ActionType.PRESS_BACK)
    try:
        key(ActionType.TYPE)
    except ValueError as exc:
        assert "type_text" in str(exc)
    else:
        raise AssertionError("key(TYPE) must raise")


coords = st.floats(min_value=0.0, max_value=1.0, allow_nan=False).map(lambda v: round(v, 4))
actions = st.one_of(
    st.builds(tap, coords, coords),
    st.builds(swipe, coords, coords, coords, coords),
    st.builds(type_text, st.text(max_size=40)),
    st.sampled_from(
        [
            ActionType.PRESS_BACK,
            ActionType.PRESS_HOME,
            ActionType.PRESS_ENTER,
            ActionType.STATUS_TASK_COMPLETE,
            ActionType.TASK_IMPOSSIBLE,
        ]
    ).map(key),
)


@given(actions)
def test_format_parse_round_trip(action: Action) -> None:
    text = format_action(action)
    parsed = parse_action(text)
    assert parsed.action_type is action.action_type
    assert parsed.touch_point == action.touch_point
    assert parsed.lift_point == action.lift_point
    assert parsed.typed_text == action.typed_text
    assert not parsed.invalid
    assert format_action(parsed) == text


@given(st.text(max_size=200))
def test_parse_never_raises(text: str) -> None:
    assert isinstance(parse_action(text), Action)


@given(
    st.text(alphabet="0123456789.-e+", max_size=12), st.text(alphabet="0123456789.-e", max_size=8)
)
def test_parse_never_raises_on_number_like_points(y: str, x: str) -> None:
    text = f'"action_type": "DUAL_POINT", "touch_point": "[{y}, {x}]", "lift_point": "[{y}, {x}]"'
    assert isinstance(parse_action(text), Action)
