"""Clock, Calendar, Contacts, Calculator and the small apps, driven through a real Phone.

Every interaction goes the way an agent's would: find a node in the composed view tree by its
text, content-desc or resource-id, tap its center, type with ``input_text``, press ENTER/BACK.
"""

from __future__ import annotations

import io
from datetime import date

import pytest
from PIL import Image

from distrl_tasks.sim.apps import (
    CALCULATOR,
    CALENDAR,
    CAMERA,
    CLOCK,
    CONTACTS,
    FILES,
    LAUNCHER,
    MESSAGES,
    MUSIC,
    PHOTOS,
)
from distrl_tasks.sim.apps.calculator import evaluate, format_number
from distrl_tasks.sim.apps.calendar import TODAY, events_on, week_of
from distrl_tasks.sim.apps.clock import HOUR_ID, MINUTE_ID, format_12h, to_24h
from distrl_tasks.sim.phone import KEYCODE_BACK, KEYCODE_ENTER, Phone
from distrl_tasks.sim.ui import Node

MY_APPS = (CLOCK, CALENDAR, CONTACTS, CALCULATOR, MESSAGES, CAMERA, PHOTOS, FILES, MUSIC)


def find(phone: Phone, **attrs: str) -> Node:
    """The first node of the composed screen whose attributes equal ``attrs``."""
    for node in phone.compose().walk():
        if all(getattr(node, k) == v for k, v in attrs.items()):
            return node
    raise AssertionError(f"no node with {attrs} on {phone.state().page}")


def texts(phone: Phone) -> list[str]:
    return [n.text for n in phone.compose().walk() if n.text]


def tap(phone: Phone, **attrs: str) -> None:
    x1, y1, x2, y2 = find(phone, **attrs).bounds
    phone.tap((x1 + x2) / 2, (y1 + y2) / 2)


def type_into(phone: Phone, rid: str, text: str) -> None:
    tap(phone, resource_id=rid)
    assert phone.focus == rid
    phone.input_text(text)


@pytest.fixture
def phone() -> Phone:
    return Phone()


# ----- Clock ---------------------------------------------------------------------------------
def set_alarm(phone: Phone, hour: str, minute: str, ampm: str) -> None:
    phone.launch(CLOCK)
    tap(phone, content_desc="Add alarm")
    assert phone.state().page == "new_alarm"
    type_into(phone, HOUR_ID, hour)
    type_into(phone, MINUTE_ID, minute)
    tap(phone, text=ampm)
    tap(phone, text="OK")


@pytest.mark.parametrize(
    ("hour", "minute", "ampm", "expected", "shown"),
    [
        ("6", "00", "PM", "18:00", "6:00 PM"),
        ("7", "00", "AM", "07:00", "7:00 AM"),
        ("12", "00", "PM", "12:00", "12:00 PM"),
        ("12", "00", "AM", "00:00", "12:00 AM"),
        ("11", "45", "PM", "23:45", "11:45 PM"),
        ("05", "", "PM", "17:00", "5:00 PM"),  # an empty minute field takes its hint, 00
    ],
)
def test_set_alarm(phone: Phone, hour: str, minute: str, ampm: str, expected: str, shown: str):
    set_alarm(phone, hour, minute, ampm)
    state = phone.state()
    assert state.page == "alarms"
    assert expected in state.alarms
    assert phone.alarms[expected] is True
    switch = find(phone, content_desc=f"{shown} alarm")
    assert switch.checkable and switch.checked
    assert shown in texts(phone)


@pytest.mark.parametrize(("hour", "minute"), [("13", "00"), ("0", "30"), ("7", "60"), ("", "15")])
def test_invalid_alarm_time_shows_error_and_stays(phone: Phone, hour: str, minute: str):
    set_alarm(phone, hour, minute, "AM")
    state = phone.state()
    assert state.page == "new_alarm"
    assert state.params["error"] == "Enter a valid time"
    assert "Enter a valid time" in texts(phone)
    assert state.alarms == ()  # the two boot alarms are off and nothing was added
    # Cancel and a fresh picker recover; typing clears the error
    tap(phone, text="Cancel")
    tap(phone, content_desc="Add alarm")
    type_into(phone, HOUR_ID, "9")
    assert phone.state().params["error"] == ""
    tap(phone, text="OK")
    assert phone.state().page == "alarms"
    assert phone.state().alarms == ("21:00",)


def test_picker_fields_take_at_most_two_digits(phone: Phone):
    phone.launch(CLOCK)
    tap(phone, content_desc="Add alarm")
    type_into(phone, HOUR_ID, "6pm")
    assert phone.state().params["hour"] == "6"
    phone.input_text("123")
    assert phone.state().params["hour"] == "61"
    assert phone.state().params["ampm"] == "PM"  # starts at the current time's half (12:30)


def test_enter_in_hour_moves_to_minute(phone: Phone):
    phone.launch(CLOCK)
    tap(phone, content_desc="Add alarm")
    type_into(phone, HOUR_ID, "8")
    phone.keyevent(KEYCODE_ENTER)
    assert phone.focus == MINUTE_ID
    phone.input_text("15")
    tap(phone, text="AM")
    tap(phone, text="OK")
    assert phone.state().alarms == ("08:15",)


def test_alarm_toggle_flips(phone: Phone):
    phone.launch(CLOCK)
    assert phone.state().alarms == ()
    tap(phone, content_desc="7:00 AM alarm")
    assert phone.state().alarms == ("07:00",)
    assert find(phone, content_desc="7:00 AM alarm").checked
    assert 'content-desc="7:00 AM alarm" checkable="true" checked="true"' in phone.ui_xml()
    tap(phone, content_desc="7:00 AM alarm")
    assert phone.state().alarms == ()
    assert phone.alarms == {"07:00": False, "08:30": False}


def test_cancel_and_back_leave_alarms_unchanged(phone: Phone):
    phone.launch(CLOCK)
    tap(phone, content_desc="Add alarm")
    type_into(phone, HOUR_ID, "6")
    tap(phone, text="Cancel")
    assert phone.state().page == "alarms"
    tap(phone, content_desc="Add alarm")
    assert phone.state().params["hour"] == ""  # a fresh picker each time
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "alarms"
    assert phone.state().alarms == ()
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().app == LAUNCHER


def test_clock_tabs_replace_and_back_exits(phone: Phone):
    phone.launch(CLOCK)
    for label, page in (("Clock", "clock"), ("Timer", "timer"), ("Stopwatch", "stopwatch")):
        tap(phone, content_desc=label)
        assert phone.state().page == page
    tap(phone, content_desc="Clock")
    assert "12:30 PM" in texts(phone)
    assert "Sat, Nov 21" in texts(phone)
    assert "8:30 PM" in texts(phone)  # London, +8 hours
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().app == LAUNCHER


def test_timer_and_stopwatch(phone: Phone):
    phone.launch(CLOCK)
    tap(phone, content_desc="Timer")
    for key in ("5", "0", "0"):
        tap(phone, content_desc=key)
    assert "00h 05m 00s" in texts(phone)
    tap(phone, text="Start")
    assert phone.state().params == {"timer": "00:05:00", "running": "1"}
    tap(phone, content_desc="Stopwatch")
    tap(phone, text="Start")
    assert phone.state().params["running"] == "1"
    tap(phone, text="Pause")
    assert phone.state().params["running"] == "0"


def test_clock_helpers():
    assert format_12h("00:05") == "12:05 AM"
    assert format_12h("12:00") == "12:00 PM"
    assert format_12h("23:59") == "11:59 PM"
    assert to_24h("12", "00", pm=False) == "00:00"
    assert to_24h("1", "5", pm=True) == "13:05"
    assert to_24h("1a", "00", pm=True) is None


# ----- Calendar ------------------------------------------------------------------------------
def test_calendar_views(phone: Phone):
    phone.launch(CALENDAR)
    state = phone.state()
    assert (state.page, state.params["month"]) == ("month", "2020-11")
    assert "November 2020" in texts(phone)
    tap(phone, content_desc="Week view")
    state = phone.state()
    assert state.page == "week"
    assert (state.params["start"], state.params["end"]) == ("2020-11-15", "2020-11-21")
    shown = texts(phone)
    assert "Team sync" in shown
    assert "2:00 PM - 3:00 PM · Room 4" in shown
    assert "Saturday, November 21  (Today)" in shown
    tap(phone, content_desc="Day view")
    assert (phone.state().page, phone.state().params["date"]) == ("day", "2020-11-21")
    assert "Team sync, 2:00 PM - 3:00 PM" in texts(phone)
    # views replace each other: one BACK leaves the app
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().app == LAUNCHER


def test_calendar_month_cell_opens_day_and_back_returns(phone: Phone):
    phone.launch(CALENDAR)
    n = len(events_on(date(2020, 11, 16)))
    tap(phone, content_desc=f"Monday, November 16, {n} events")
    assert (phone.state().page, phone.state().params["date"]) == ("day", "2020-11-16")
    assert "Monday, November 16" in texts(phone)
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "month"


def test_calendar_events_are_deterministic():
    assert week_of(TODAY)[0] == date(2020, 11, 15)
    assert [d.day for d in week_of(date(2020, 11, 15))] == list(range(15, 22))
    today = events_on(TODAY)
    assert ("Team sync", 14 * 60, "Room 4") in [(e.title, e.start, e.place) for e in today]
    for day in (date(2020, 11, d) for d in range(1, 31)):
        events = events_on(day)
        assert events == events_on(day)
        assert [e.start for e in events] == sorted({e.start for e in events})
        assert all(8 * 60 <= e.start <= 18 * 60 + 30 for e in events if e.title != "Team sync")


# ----- Calculator ----------------------------------------------------------------------------
KEY_DESC = {"+": "plus", "-": "minus", "*": "multiply", "/": "divide", "=": "equals"}
KEY_DESC |= {".": "point", "(": "left parenthesis", ")": "right parenthesis", "C": "clear"}
KEY_DESC |= {"<": "backspace"}


def press(phone: Phone, keys: str) -> None:
    for key in keys:
        tap(phone, content_desc=KEY_DESC.get(key, key))


@pytest.mark.parametrize(
    ("keys", "expression", "result"),
    [
        ("12*3=", "12x3", "36"),
        ("7/2=", "7/2", "3.5"),
        ("1/3=", "1/3", "0.3333333333"),
        ("2+3*4=", "2+3x4", "14"),
        ("(2+3)*4=", "(2+3)x4", "20"),
        ("2*(3+4=", "2x(3+4)", "14"),  # "=" closes the open parenthesis
        (".1+.2=", "0.1+0.2", "0.3"),
        ("9-12=", "9-12", "-3"),
        ("5+*2=", "5x2", "10"),  # a second operator replaces the first
        ("6*-2=", "6x-2", "-12"),  # except a minus after x or /, which negates
        ("2+3=*4=", "5x4", "20"),  # an operator continues from the result
        ("2+3=7", "7", ""),  # a digit starts over
        ("12<3+1", "13+1", "14"),  # backspace, and a live preview before "="
        ("5/0=", "5/0", "Can't divide by 0"),
        ("8*2C", "", ""),
        ("007+1=", "7+1", "8"),  # leading zeros collapse
    ],
)
def test_calculator_keys(phone: Phone, keys: str, expression: str, result: str):
    phone.launch(CALCULATOR)
    press(phone, keys)
    params = phone.state().params
    assert (params["expression"], params["result"]) == (expression, result)
    assert find(phone, resource_id=f"{CALCULATOR}:id/result").text == result


def test_calculator_evaluate_and_format():
    assert format_number(evaluate("2*(3+4)-5/2")) == "11.5"
    assert format_number(evaluate("-(-3)")) == "3"
    assert format_number(evaluate("100000*100000")) == "10000000000"
    assert format_number(evaluate("2/3")) == "0.6666666667"
    for bad in ("", "5+", "1..2", "()", "2)", "3a"):
        with pytest.raises(ValueError, match="Format error"):
            evaluate(bad)
    with pytest.raises(ValueError, match="Can't divide by 0"):
        evaluate("1/(2-2)")


def test_calculator_resets_when_backed_out(phone: Phone):
    phone.launch(CALCULATOR)
    press(phone, "9*9=")
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().app == LAUNCHER
    phone.launch(CALCULATOR)
    assert phone.state().params["expression"] == ""


# ----- Contacts ------------------------------------------------------------------------------
def test_contacts_search_open_and_back(phone: Phone):
    phone.launch(CONTACTS)
    assert phone.state().page == "list"
    assert "Aaron Brooks" in texts(phone)
    type_into(phone, f"{CONTACTS}:id/search_view", "pat")
    rows = [n.text for n in phone.compose().walk() if n.resource_id.endswith("cliv_name_textview")]
    assert rows == ["Priya Patel"]
    tap(phone, text="Priya Patel")
    state = phone.state()
    assert (state.page, state.params["name"]) == ("contact", "Priya Patel")
    assert state.params["email"] == "priya.patel@gmail.com"
    assert state.params["phone"] in texts(phone)
    phone.keyevent(KEYCODE_BACK)
    assert phone.state().page == "list"
    assert phone.state().params["query"] == "pat"


def test_contact_text_opens_conversation(phone: Phone):
    phone.launch(CONTACTS)
    tap(phone, text="Alex Kim")
    tap(phone, content_desc="Text Alex Kim")
    state = phone.state()
    assert (state.app, state.page, state.params["name"]) == (MESSAGES, "conversation", "Alex Kim")


# ----- Small apps ----------------------------------------------------------------------------
def test_files_downloads_and_categories(phone: Phone):
    phone.launch(FILES)
    assert phone.state().page == "home"
    tap(phone, content_desc="Downloads")
    assert phone.state().page == "downloads"
    shown = texts(phone)
    assert "boarding_pass.pdf" in shown
    assert "meeting_notes.txt" not in shown  # not downloaded
    tap(phone, content_desc="boarding_pass.pdf")
    assert (phone.state().page, phone.state().params["name"]) == ("file", "boarding_pass.pdf")
    phone.keyevent(KEYCODE_BACK)
    phone.keyevent(KEYCODE_BACK)
    tap(phone, content_desc="Images")
    assert (phone.state().page, phone.state().params["kind"]) == ("category", "image")
    assert "Screenshot_20201117.png" in texts(phone)


def test_camera_shutter_adds_photo_that_survives_back(phone: Phone):
    phone.launch(PHOTOS)
    before = int(phone.state().params["count"])
    phone.keyevent(KEYCODE_BACK)
    phone.launch(CAMERA)
    tap(phone, content_desc="Take photo")
    tap(phone, content_desc="Video mode")
    tap(phone, content_desc="Start video recording")
    assert phone.state().params == {"mode": "Video", "recording": "1"}
    tap(phone, content_desc="Stop video recording")
    tap(phone, content_desc="Open gallery")
    state = phone.state()
    assert (state.app, state.page, state.params["count"]) == (PHOTOS, "photo", str(before + 2))
    assert "Video recording" in texts(phone)
    phone.keyevent(KEYCODE_BACK)
    assert find(phone, content_desc="Photo: Photo shot 1, Today")


def test_music_play_pause_and_search(phone: Phone):
    phone.launch(MUSIC)
    tap(phone, content_desc="Levitating")
    state = phone.state()
    assert (state.page, state.params["title"], state.playing) == (
        "playing",
        "Levitating",
        "Levitating",
    )
    tap(phone, content_desc="Pause")
    assert phone.state().playing == ""
    phone.keyevent(KEYCODE_BACK)
    type_into(phone, f"{MUSIC}:id/search_edit_text", "jazz")
    phone.keyevent(KEYCODE_ENTER)
    assert (phone.state().page, phone.state().params["query"]) == ("search", "jazz")
    tap(phone, content_desc="Best of Jazz")
    assert phone.state().playing == "Best of Jazz"


def test_messages_send(phone: Phone):
    phone.launch(MESSAGES)
    tap(phone, content_desc="Mom")
    assert "call me when you land" in texts(phone)
    type_into(phone, f"{MESSAGES}:id/compose_message_text", "Landed!")
    tap(phone, content_desc="Send SMS")
    assert phone.state().params["last_sent"] == "Landed!"
    assert "Landed!" in texts(phone)
    phone.keyevent(KEYCODE_BACK)
    assert "You: Landed!" in texts(phone)


# ----- Every screen --------------------------------------------------------------------------
@pytest.mark.parametrize("package", MY_APPS)
def test_home_screens_render_and_are_labelled(phone: Phone, package: str):
    assert phone.launch(package)
    app = phone.front
    assert phone.state().page == app.home_page
    png = phone.screenshot_png()
    img = Image.open(io.BytesIO(png))
    assert img.size == (270, 600)
    assert len(img.convert("RGB").getcolors(maxcolors=1 << 20)) > 20  # drawn, not a blank frame
    for node in phone.compose().walk():
        if node.clickable:
            assert node.text or node.content_desc, f"unlabelled clickable node in {package}"
        if node.editable:
            assert node.resource_id.startswith(f"{package}:id/")
    assert f'package="{package}"' in phone.ui_xml()
