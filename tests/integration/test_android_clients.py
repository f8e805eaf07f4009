"""The farm as ADB clients nobody here wrote see it: DeepMind's android_env and ppadb.

android_env's ``AdbCallParser`` drives the real ``adb`` binary (Debian's) through its own
``AdbController``, exactly as it drives an emulator; pure-python-adb (ppadb) speaks the ADB
host protocol itself. Each request below is one that the client issues against a real device,
and the answers are checked the way the client reads them.
"""

from __future__ import annotations

import re
import shutil

import pytest
from android_env.components import adb_call_parser, adb_controller, config_classes
from android_env.proto import adb_pb2
from ppadb.client import Client as PpadbClient

from distrl_tasks.sim.apps.chrome import URL_BAR_ID
from distrl_tasks.tasks.goal_farms import running_farm

ADB = shutil.which("adb")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(ADB is None, reason="the real `adb` client is not installed"),
]
R = adb_pb2.AdbRequest
OK = adb_pb2.AdbResponse.Status.OK
SETTINGS = "com.android.settings/com.android.settings.Settings"


@pytest.fixture(scope="module")
def farm():
    with running_farm(devices=2, seed=0) as served:
        yield served


@pytest.fixture
def parser(farm) -> adb_call_parser.AdbCallParser:
    config = config_classes.AdbControllerConfig(
        adb_path=ADB, adb_server_port=farm.port, device_name="emulator-5554", default_timeout=30
    )
    return adb_call_parser.AdbCallParser(adb_controller.AdbController(config))


def ok(parser, request: adb_pb2.AdbRequest) -> adb_pb2.AdbResponse:
    response = parser.parse(request)
    assert response.status == OK, response.error_message
    return response


def current_activity(parser) -> str:
    return ok(
        parser, R(get_current_activity=R.GetCurrentActivity())
    ).get_current_activity.full_activity


def test_android_env_activities_buttons_and_orientation(parser) -> None:
    ok(parser, R(press_button=R.PressButton(button=R.PressButton.HOME)))
    assert current_activity(parser).startswith("com.google.android.apps.nexuslauncher/")
    started = ok(parser, R(start_activity=R.StartActivity(full_activity=SETTINGS)))
    assert started.start_activity.full_activity == SETTINGS
    assert current_activity(parser) == SETTINGS
    # an activity the app does not have is an error, as on a device
    bad = parser.parse(
        R(start_activity=R.StartActivity(full_activity="com.android.settings/.Nope"))
    )
    assert bad.status != OK and "does not exist" in str(bad.error_message)
    # BACK at the root of an app opened from home returns home
    ok(parser, R(press_button=R.PressButton(button=R.PressButton.BACK)))
    assert current_activity(parser).startswith("com.google.android.apps.nexuslauncher/")
    ok(parser, R(start_activity=R.StartActivity(full_activity=SETTINGS)))
    ok(parser, R(force_stop=R.ForceStop(package_name="com.android.settings")))
    assert current_activity(parser).startswith("com.google.android.apps.nexuslauncher/")
    assert ok(parser, R(get_orientation=R.GetOrientationRequest())).get_orientation.orientation == 0
    ok(parser, R(tap=R.Tap(x=135, y=300)))
    ok(parser, R(input_text=R.InputText(text="hello")))


def test_android_env_package_manager_dumpsys_settings_broadcast(parser) -> None:
    pm = R.PackageManagerRequest
    packages = ok(parser, R(package_manager=pm(list=pm.List(packages=pm.List.Packages()))))
    assert "com.android.chrome" in packages.package_manager.list.items
    features = ok(parser, R(package_manager=pm(list=pm.List(features=pm.List.Features()))))
    assert "android.hardware.touchscreen" in features.package_manager.list.items
    window = ok(parser, R(dumpsys=R.DumpsysRequest(service="window")))
    assert b"mCurrentFocus=" in window.dumpsys.output
    services = ok(parser, R(dumpsys=R.DumpsysRequest(list_only=True)))
    assert b"window" in services.dumpsys.output

    s, ns = R.SettingsRequest, R.SettingsRequest.Namespace.SYSTEM
    ok(parser, R(settings=s(name_space=ns, put=s.Put(key="screen_brightness", value="42"))))
    got = ok(parser, R(settings=s(name_space=ns, get=s.Get(key="screen_brightness"))))
    assert got.settings.output == b"42\n"
    listed = ok(parser, R(settings=s(name_space=ns, list=s.List())))
    assert b"screen_brightness=42" in listed.settings.output
    ok(parser, R(settings=s(name_space=ns, delete_key=s.Delete(key="screen_brightness"))))
    mode = s.Reset.Mode.UNTRUSTED_DEFAULTS
    ok(parser, R(settings=s(name_space=ns, reset=s.Reset(mode=mode))))
    ok(parser, R(send_broadcast=R.SendBroadcast(action="android.intent.action.AIRPLANE_MODE")))


def test_android_env_push_pull_and_generic(parser) -> None:
    ok(parser, R(push=R.Push(content=b"round trip\n", path="/sdcard/Download/x.txt")))
    pulled = ok(parser, R(pull=R.Pull(path="/sdcard/Download/x.txt")))
    assert pulled.pull.content == b"round trip\n"
    echoed = ok(parser, R(generic=R.GenericRequest(args=["shell", "echo", "hi"])))
    assert echoed.generic.output == b"hi\n"


def test_ppadb_device_helpers(farm) -> None:
    client = PpadbClient(host=farm.host, port=farm.port)
    serials = [d.serial for d in client.devices()]
    assert serials == ["emulator-5554", "emulator-5556"]
    device = client.device("emulator-5556")
    assert device.shell("echo hi") == "hi\n"
    assert device.wm_size().width == 270 and device.wm_size().height == 600
    assert device.shell("wm density") == "Physical density: 105\n"
    assert device.wm_density() == 105 // 160  # ppadb's own integer scale of the dpi
    assert device.get_properties()["ro.build.version.sdk"] == "33"
    assert "com.android.chrome" in device.list_packages()
    assert device.is_installed("com.android.chrome")
    assert not device.is_installed("com.example.absent")
    device.shell("am start -n com.android.chrome/com.google.android.apps.chrome.Main")
    top = device.get_top_activity()
    assert top is not None and top.package == "com.android.chrome"
    assert device.get_pid("com.android.chrome") is not None
    png = device.screencap()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    device.input_keyevent(3)  # HOME
    assert device.get_top_activity().package == "com.google.android.apps.nexuslauncher"


# ----- Android World ---------------------------------------------------------------------------
# Android World (google-research/android_world) is not on PyPI. Its env/adb_utils.py (read at
# commit d9c569f764b3a5629321858de03ff653d0f24056, 2026-02-24) talks to the device only through
# android_env's AdbCallParser; these are the requests its functions issue, read the way they read
# them: get_current_activity, launch_app (its activity table, and `monkey -p` for a package),
# press_home_button / press_back_button, type_text (word by word, its escaping), close_app,
# get_api_level, toggle_wifi, set_brightness, check_airplane_mode, close_recents.
AW_ACTIVITIES = {
    "chrome": "com.android.chrome/com.google.android.apps.chrome.Main",
    "settings": "com.android.settings/.Settings",
    "youtube": "com.google.android.youtube/com.google.android.apps.youtube.app.WatchWhileActivity",
    "play store": "com.android.vending/com.google.android.finsky.activities.MainActivity",
    "gmail": "com.google.android.gm/.ConversationListActivityGmail",
    "maps": "com.google.android.apps.maps/com.google.android.maps.MapsActivity",
    "photos": "com.google.android.apps.photos/com.google.android.apps.photos.home.HomeActivity",
    "calendar": "com.google.android.calendar/com.android.calendar.AllInOneActivity",
    "camera": "com.android.camera2/com.android.camera.CameraLauncher",
}


def aw_text_format(text: str) -> str:
    """Android World's _adb_text_format: backslash before each shell metacharacter."""
    for char in ["\\", ";", "|", "`", "\r", " ", "'", '"', "&", "<", ">", "(", ")", "#", "$"]:
        text = text.replace(char, "\\" + char)
    return text


def generic(parser, *args: str) -> adb_pb2.AdbResponse:
    return ok(parser, R(generic=R.GenericRequest(args=list(args))))


@pytest.mark.parametrize("app", sorted(AW_ACTIVITIES))
def test_android_world_launch_app_and_current_activity(parser, app) -> None:
    activity = AW_ACTIVITIES[app]
    ok(parser, R(press_button=R.PressButton(button=R.PressButton.HOME)))
    response = ok(parser, R(start_activity=R.StartActivity(full_activity=activity)))
    assert b"Error" not in response.start_activity.output
    package = activity.split("/")[0]
    assert current_activity(parser).split("/")[0] == package
    generic(parser, "shell", "am", "force-stop", package)  # close_app
    assert current_activity(parser).split("/")[0] != package


def test_android_world_typing_settings_and_services(parser, farm) -> None:
    generic(parser, "shell", "monkey", "-p", "com.android.chrome", "1")  # launch by package
    assert current_activity(parser).startswith("com.android.chrome/")
    # tap the address bar (its centre in display pixels), then type word by word as type_text
    phone = farm.farm["emulator-5554"].phone
    bar = next(n for n in phone.compose().walk() if n.resource_id == URL_BAR_ID)
    x1, y1, x2, y2 = (round(v * phone.render_scale) for v in bar.bounds)
    ok(parser, R(tap=R.Tap(x=(x1 + x2) // 2, y=(y1 + y2) // 2)))
    assert phone.focus == URL_BAR_ID
    for word in ["rock", "%s", "&", "%s", "roll's"]:
        ok(parser, R(input_text=R.InputText(text=aw_text_format(word))))
    assert phone.state().field_text == "rock & roll's"
    assert int(generic(parser, "shell", "getprop ro.build.version.sdk").generic.output) == 33
    generic(parser, "shell", "svc", "wifi", "disable")
    wifi = generic(parser, "shell", "settings", "get", "global", "wifi_on")
    assert wifi.generic.output == b"0\n"
    generic(parser, "shell", "settings", "put", "system", "screen_brightness", "255")
    airplane = generic(parser, "shell", "settings", "get", "global", "airplane_mode_on")
    assert int(airplane.generic.output.decode().strip()) == 0  # check_airplane_mode's int()
    generic(parser, "shell", "svc", "bluetooth", "enable")  # toggle_bluetooth
    # close_recents: every task id of `dumpsys activity recents` removed with `am stack remove`
    recents = generic(parser, "shell", "dumpsys", "activity", "recents")
    ids = re.findall(r"id=(\d+)", recents.generic.output.decode())
    assert ids  # Chrome's task at least
    for task_id in ids:
        generic(parser, "shell", "am", "stack", "remove", task_id)
    assert current_activity(parser).startswith("com.google.android.apps.nexuslauncher/")
    tasks = generic(parser, "shell", "am", "stack", "list").generic.output.decode()
    assert "com.android.chrome" not in tasks
