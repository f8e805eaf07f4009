"""The simulated device shell: parsing, builtins, Android tools and simctl, on a real Phone."""

from __future__ import annotations

import io
import json
import re
import shlex
import struct
from collections.abc import Mapping

import pytest
from PIL import Image

from distrl_tasks.sim.adb_shell_service import CommandLines, is_open
from distrl_tasks.sim.apps.launcher import SEARCH_ID
from distrl_tasks.sim.device_farm import SHELL_COMMANDS
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.shell import DeviceShell, ShellSyntaxError, parse, tokenize
from distrl_tasks.sim.state import SimState
from distrl_tasks.sim.ui import SCREEN_H, SCREEN_W
from distrl_tasks.tasks.task import Family, Task


@pytest.fixture
def sh() -> DeviceShell:
    return DeviceShell(Phone("emulator-5554", seed=0), SHELL_COMMANDS)


def run(sh: DeviceShell, line: str) -> tuple[str, str, int]:
    out, err, code = sh.run(line)
    assert isinstance(out, bytes) and isinstance(err, bytes)
    return out.decode(), err.decode(), int(code)


def center_of(phone: Phone, **query: str) -> tuple[int, int]:
    """Centre of a node in display pixels (what `input tap` takes)."""
    for node in phone.compose().walk():
        if all(getattr(node, k) == v for k, v in query.items()):
            x1, y1, x2, y2 = (round(v * phone.render_scale) for v in node.bounds)
            return (x1 + x2) // 2, (y1 + y2) // 2
    raise AssertionError(f"no node with {query} on screen")


def focus_search(sh: DeviceShell) -> None:
    x, y = center_of(sh.phone, resource_id=SEARCH_ID)
    assert run(sh, f"input tap {x} {y}")[2] == 0
    assert sh.phone.focus == SEARCH_ID


# ----- parsing -------------------------------------------------------------------------------
def test_tokenize_quotes_and_operators():
    words = [t for t in tokenize("""echo 'a b' "c;d" e\\ f ; ls""")]
    assert [getattr(w, "op", None) for w in words] == [None, None, None, None, ";", None]
    script = parse("a && b || c; d | e")
    assert [c for c, _ in script] == ["", "&&", "||", ";"]
    assert len(script[3][1]) == 2  # d | e is one pipeline of two commands


@pytest.mark.parametrize("line", ["echo 'open", 'echo "open', "&& echo", "echo a ||", "a | | b"])
def test_parse_rejects_bad_syntax(line):
    with pytest.raises(ShellSyntaxError):
        parse(line)


def test_syntax_error_goes_to_stderr_with_status_2(sh):
    out, err, code = run(sh, "echo 'unterminated")
    assert (out, code) == ("", 2)
    assert err.startswith("/system/bin/sh:") and "quote" in err


# ----- builtins ------------------------------------------------------------------------------
def test_sequences_and_exit_status(sh):
    assert run(sh, "echo hi; false; echo $?") == ("hi\n1\n", "", 0)
    assert run(sh, "false && echo no || echo yes") == ("yes\n", "", 0)
    assert run(sh, "true; false")[2] == 1
    assert run(sh, "exit 3; echo never") == ("", "", 3)
    assert run(sh, "echo $?")[0] == "0\n"  # every request starts a fresh shell


def test_session_lines_keep_the_status_and_report_exit(sh):
    assert not sh.run("false").exited
    assert sh.run("echo $?", session=True).stdout == b"1\n"  # the previous line's status
    assert sh.run("echo $?").stdout == b"0\n"  # a new request: a fresh shell
    done = sh.run("echo bye; exit 4", session=True)
    assert (done.stdout, done.exit_code, done.exited) == (b"bye\n", 4, True)


def test_command_lines_wait_for_open_quotes_and_operators():
    lines = CommandLines()
    assert lines.feed(b"echo a\necho b\nech") == ["echo a", "echo b"]
    assert lines.feed(b"o c\n") == ["echo c"]
    assert lines.feed(b"echo 'x\n") == []  # the quote is still open
    assert lines.feed(b"y' && \n") == []  # closed, but `&&` needs a command
    assert lines.feed(b"echo z\n\n") == ["echo 'x\ny' && \necho z", ""]
    assert lines.feed(b"ls |") == [] and lines.rest() == "ls |"
    assert lines.rest() == ""
    assert is_open("a ||") and is_open('echo "') and not is_open("echo 'a' # done")


def test_unknown_command_is_127(sh):
    out, err, code = run(sh, "frobnicate --now")
    assert (out, code) == ("", 127)
    assert err == "/system/bin/sh: frobnicate: inaccessible or not found\n"


def test_files_redirection_and_tools(sh):
    script = "mkdir -p /sdcard/a/b; echo one > /sdcard/a/b/f; echo two >> /sdcard/a/b/f"
    assert run(sh, script)[2] == 0
    assert run(sh, "cat /sdcard/a/b/f")[0] == "one\ntwo\n"
    assert run(sh, "cat /storage/emulated/0/a/b/f | grep tw")[0] == "two\n"
    assert run(sh, "ls /sdcard/a/b")[0] == "f\n"
    assert run(sh, "cat /nope 2>/dev/null; echo $?") == ("1\n", "", 0)
    assert run(sh, "cat /nope 2>&1")[0] == "cat: /nope: No such file or directory\n"
    assert run(sh, "rm /sdcard/a/b/f && ls /sdcard/a/b")[0] == ""
    assert run(sh, "rm /sdcard/a/b/f")[2] == 1
    assert run(sh, "rm -f /sdcard/a/b/f")[2] == 0


def test_no_command_substitution(sh):
    assert run(sh, "echo $(reboot) `id`")[0] == "$(reboot) `id`\n"


# ----- input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["hello world", "'; rm -rf /", "$(reboot)", 'quote " and \\ slash', "a && b || c; d | e"],
)
def test_input_text_lands_literally(sh, text):
    focus_search(sh)
    # what adbutils' send_keys sends: each argument quoted with shlex.quote
    assert run(sh, "input text " + shlex.quote(text))[2] == 0
    assert sh.phone.state().field_text == text
    assert sh.events == ["text"]


def test_input_text_percent_s_is_a_space_and_other_keys_are_noops(sh):
    focus_search(sh)
    run(sh, "input text hello%sworld")
    assert sh.phone.state().field_text == "hello world"
    # only HOME, BACK and ENTER act; DEL (67) is accepted but changes nothing
    assert run(sh, "input keyevent KEYCODE_DEL; input keyevent 67")[2] == 0
    assert sh.phone.state().field_text == "hello world"


def test_input_without_focus_is_dropped(sh):
    run(sh, "input text ignored")
    assert sh.phone.state().field_text == ""


def test_keyevents_and_swipe_open_and_close_the_drawer(sh):
    run(sh, "input swipe 135 450 135 150 200")
    assert sh.phone.state().page == "drawer"
    run(sh, "input keyevent KEYCODE_BACK")
    assert sh.phone.state().page == "home"
    _out, err, code = run(sh, "input keyevent KEYCODE_NOPE")
    assert code == 1 and "NOPE" in err


def test_tap_on_an_app_icon_launches_it(sh):
    run(sh, "input swipe 135 450 135 150 200")
    x, y = center_of(sh.phone, content_desc="Netflix")
    run(sh, f"input tap {x} {y}")
    assert sh.phone.state().app_label == "Netflix"
    assert sh.events == ["input", "app_launch"]
    assert "com.netflix.mediaclient/" in run(sh, "dumpsys window windows")[0]


def test_input_rejects_bad_arguments(sh):
    assert run(sh, "input tap 1")[2] == 1
    assert run(sh, "input tap x y")[2] == 1
    assert run(sh, "input fly")[2] == 1


# ----- screen and device info ----------------------------------------------------------------
def test_screencap_png_and_raw(sh):
    out, _, code = sh.run("screencap -p")
    img = Image.open(io.BytesIO(out))
    scale = sh.phone.render_scale
    assert code == 0 and img.size == (round(SCREEN_W * scale), round(SCREEN_H * scale))
    raw = sh.run("screencap").stdout
    w, h, fmt, _ = struct.unpack("<IIII", raw[:16])
    assert (w, h, fmt) == (*img.size, 1) and len(raw) == 16 + w * h * 4
    assert run(sh, "screencap -p /sdcard/s.png")[2] == 0
    assert sh.fs.read("/sdcard/s.png") == out


def test_uiautomator_dump(sh):
    out, _, code = run(sh, "rm -f /data/local/tmp/u.xml; uiautomator dump /data/local/tmp/u.xml")
    assert (out, code) == ("UI hierchary dumped to: /data/local/tmp/u.xml\n", 0)
    assert sh.fs.read("/data/local/tmp/u.xml").startswith(b"<?xml")
    assert run(sh, "uiautomator dump")[0].endswith("/sdcard/window_dump.xml\n")


def test_outputs_match_what_adbutils_parses(sh):
    assert run(sh, "wm size")[0] == "Physical size: 270x600\n"  # the screencap size
    display = run(sh, "dumpsys display")[0]
    m = re.search(
        r"DisplayViewport{.*?valid=true, .*?orientation=(\d+), .*?deviceWidth=(\d+)", display
    )
    assert m is not None and m.groups() == ("0", "270")
    window = run(sh, "dumpsys window windows")[0]
    m = re.search(r"mCurrentFocus=Window{.*\s+(?P<package>[^\s]+)/(?P<activity>[^\s]+)\}", window)
    assert m is not None and m.group("package") == sh.phone.front.package
    assert run(sh, "getprop ro.build.version.sdk")[0] == "33\n"
    assert run(sh, "getprop ro.serialno")[0] == "emulator-5554\n"
    packages = run(sh, "pm list packages")[0].splitlines()
    assert "package:com.netflix.mediaclient" in packages


def test_monkey_am_start_and_force_stop(sh):
    out, _, code = run(sh, "monkey -p com.whatsapp -c android.intent.category.LAUNCHER 1")
    assert code == 0 and "Events injected: 1" in out
    assert sh.phone.state().app_label == "WhatsApp"
    run(sh, "am force-stop com.whatsapp")
    assert sh.phone.state().app == sh.phone.launcher.package
    # an activity the app does not have is refused, as on a device
    out, err, code = run(sh, "am start -n com.whatsapp/.Main")
    assert code == 0 and "Activity class {com.whatsapp/.Main} does not exist." in out + err
    assert run(sh, "am start -n com.whatsapp/.MainActivity")[2] == 0
    assert sh.phone.state().app_label == "WhatsApp"
    settings = "com.android.settings/.Settings"
    assert run(sh, f"am start -n {settings}")[2] == 0
    assert sh.phone.state().app == "com.android.settings"
    assert run(sh, "monkey -p com.not.installed 1")[2] == 252


# ----- simctl --------------------------------------------------------------------------------
class _InDrawer(Family):
    name = "test_drawer"

    def match(self, text: str) -> dict[str, str] | None:
        return {} if text == "open the drawer" else None

    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        return state.page == "drawer"


def test_simctl_state_reset_and_task_check(sh):
    state = json.loads(run(sh, "simctl state")[0])
    assert state["page"] == "home" and state["focused_field"] == ""
    assert json.loads(run(sh, "simctl task check")[0])["success"] is False
    sh.phone.set_task(Task("open the drawer", "test_drawer", {}, "general", _InDrawer()))
    assert json.loads(run(sh, "simctl task check")[0])["success"] is False
    run(sh, "input swipe 135 450 135 150 200")
    assert json.loads(run(sh, "simctl task check")[0])["success"] is True
    assert run(sh, "simctl reset")[2] == 0 and sh.events == ["reset"]
    assert json.loads(run(sh, "simctl state")[0])["page"] == "home"
    assert run(sh, "simctl bogus")[2] == 2


def test_simctl_task_set_needs_a_goal_parser(sh):
    _, err, code = run(sh, "simctl task set 'Set an alarm for 6pm'")
    assert code == 2 and "without a goal parser" in err
    assert sh.events == []


def test_simctl_task_set_uses_the_goal_parser():
    from distrl_tasks.tasks.parse import parse_goal

    sh = DeviceShell(Phone("emulator-5554", seed=0, goal_parser=parse_goal), SHELL_COMMANDS)
    out, err, code = run(sh, "simctl task set 'zzqx unparseable gibberish'")
    assert code == 2 and err.startswith("simctl:")
    out, err, code = run(sh, "simctl task set 'Set an alarm for 6pm'")
    assert code == 0, err
    assert json.loads(out)["goal"] == "Set an alarm for 6pm"
    assert json.loads(run(sh, "simctl task check")[0])["success"] is False


def test_crashed_device_fails_until_reset(sh):
    sh.phone.crashed = True
    _out, err, code = run(sh, "input tap 10 10")
    assert code == 1 and "crashed" in err
    assert run(sh, "screencap -p")[2] == 1
    assert run(sh, "echo alive")[0] == "alive\n"  # the shell itself still runs
    assert run(sh, "simctl reset")[2] == 0
    assert run(sh, "input tap 10 10")[2] == 0


def test_input_text_types_only_its_first_argument_as_android_11_does(sh):
    focus_search(sh)
    assert run(sh, "input text alpha beta")[2] == 0
    assert sh.phone.state().field_text == "alpha"


@pytest.mark.parametrize(
    ("uri", "package"),
    [
        ("content://contacts/people/", "com.google.android.contacts"),
        ("https://www.google.com", "com.android.chrome"),
        ("geo:37.42,-122.08", "com.google.android.apps.maps"),
        ("market://details?id=com.whatsapp", "com.android.vending"),
    ],
)
def test_view_intents_open_the_app_their_uri_resolves_to(sh, uri, package):
    _, err, code = run(sh, f"am start -a android.intent.action.VIEW -d '{uri}'")
    assert code == 0, err
    assert sh.phone.state().app == package
    _, err, code = run(sh, "am start -a android.intent.action.VIEW -d 'zzz:nothing'")
    assert "unable to resolve Intent" in err  # status 0, as Android's am


# ----- what Android's own clients ask (android_env, Android World, ppadb, uiautomator2) -------
def test_am_stack_list_names_the_visible_task_first(sh):
    run(sh, "monkey -p com.android.chrome 1")
    out = run(sh, "am stack list")[0]
    visible = [line for line in out.splitlines() if "visible=true" in line]
    assert len(visible) == 1
    m = re.search(r"\{(?P<component>[^}]+)\}", visible[0])
    assert m is not None
    assert m.group("component") == "com.android.chrome/com.google.android.apps.chrome.Main"
    assert "com.google.android.apps.nexuslauncher" in out  # the home task behind it


def test_orientation_size_and_density_agree_everywhere(sh):
    w, h = sh.phone.display_size
    assert run(sh, "wm size")[0] == f"Physical size: {w}x{h}\n"
    density = int(run(sh, "wm density")[0].split(":")[1])
    assert int(run(sh, "getprop ro.sf.lcd_density")[0]) == density
    assert w / (density / 160) >= 320  # Android's smallest phone width in dp
    assert "SurfaceOrientation: 0" in run(sh, "dumpsys input")[0]
    assert "mCurrentRotation=ROTATION_0" in run(sh, "dumpsys window")[0]
    assert "rotation 0" in run(sh, "dumpsys display")[0]
    assert run(sh, "dumpsys -l")[0].startswith("Currently running services:")


def test_settings_list_delete_reset_and_svc(sh):
    run(sh, "settings put system user_rotation 1")
    assert "user_rotation=1" in run(sh, "settings list system")[0]
    assert run(sh, "settings delete system user_rotation")[0] == "Deleted 1 rows\n"
    assert run(sh, "settings delete system user_rotation")[0] == "Deleted 0 rows\n"
    run(sh, "settings put secure a 1")
    assert run(sh, "settings reset secure untrusted_defaults")[2] == 0
    assert run(sh, "settings list secure")[0] == "location_mode=3\n"  # the defaults again
    assert run(sh, "settings get global airplane_mode_on")[0] == "0\n"  # as on an emulator
    assert run(sh, "settings get nowhere x")[2] != 0
    run(sh, "svc wifi disable")
    assert run(sh, "settings get global wifi_on")[0] == "0\n"
    run(sh, "svc data enable")
    assert run(sh, "settings get global mobile_data")[0] == "1\n"


def test_broadcast_features_ps_cut_md5sum_and_assignments(sh):
    out = run(sh, "am broadcast -a android.intent.action.BOOT_COMPLETED")[0]
    assert "Broadcast completed: result=0" in out
    assert "feature:android.hardware.touchscreen" in run(sh, "pm list features")[0]
    run(sh, "monkey -p com.android.chrome 1")
    ps = run(sh, "ps -A")[0].splitlines()
    assert ps[0].split()[:2] == ["USER", "PID"]
    pids = {line.split()[-1]: int(line.split()[1]) for line in ps[1:]}
    assert "com.android.chrome" in pids and "com.google.android.apps.nexuslauncher" in pids
    assert len(set(pids.values())) == len(pids)  # every process its own pid
    assert run(sh, "echo a:b:c | cut -d : -f 2")[0] == "b\n"
    assert run(sh, "echo a:b:c | cut -d: -f2-")[0] == "b:c\n"
    assert run(sh, "echo -n hello | md5sum")[0] == "5d41402abc4b2a76b9719d911017c592  -\n"
    assert run(sh, "LANG=C FOO=bar echo hi")[0] == "hi\n"
    assert run(sh, "X=1")[2] == 0
