"""Android tools of the simulated device shell: ``input``, ``screencap``, ``wm``, ``dumpsys``,
``uiautomator``, ``getprop``, ``pm``, ``am``, ``monkey`` and ``settings``, plus the simulator's
own ``simctl`` (:mod:`distrl_tasks.sim.shell_simctl`).

Output formats follow what Android 13 prints where clients parse it (adbutils'
``window_size``/``rotation``/``app_current``/``dump_hierarchy``/``list_packages``). Package names,
what is installed and launching by package live in :mod:`distrl_tasks.sim.android_packages` and
are re-exported here.
"""

from __future__ import annotations

import hashlib
import io
import struct
from typing import TYPE_CHECKING

from PIL import Image

from distrl_tasks.sim.android_packages import (
    KNOWN_PACKAGES,  # noqa: F401
    activity_of,
    front_package,
    front_package_of,
    has_activity,
    installed_packages,
    launch_package,
    package_for_label,  # noqa: F401
    package_for_uri,
)
from distrl_tasks.sim.apps import LAUNCHER
from distrl_tasks.sim.shell import CmdResult, Command, DeviceShell
from distrl_tasks.sim.shell_builtins import error_result
from distrl_tasks.sim.shell_simctl import simctl
from distrl_tasks.sim.vfs import FsError

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

DENSITY = 420  # dpi of the full 1080x2400 layout (a Pixel's); 105 at render scale 0.25 (270x600)
KEYCODES = {
    "HOME": 3,
    "BACK": 4,
    "CALL": 5,
    "ENDCALL": 6,
    "DPAD_UP": 19,
    "DPAD_DOWN": 20,
    "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22,
    "DPAD_CENTER": 23,
    "VOLUME_UP": 24,
    "VOLUME_DOWN": 25,
    "POWER": 26,
    "CAMERA": 27,
    "TAB": 61,
    "SPACE": 62,
    "ENTER": 66,
    "DEL": 67,
    "MENU": 82,
    "SEARCH": 84,
    "VOLUME_MUTE": 164,
    "APP_SWITCH": 187,
    "SLEEP": 223,
    "WAKEUP": 224,
}
PROPS = {
    "ro.product.model": "sdk_gphone64_x86_64",
    "ro.product.name": "sdk_gphone64_x86_64",
    "ro.product.device": "emu64xa",
    "ro.product.brand": "google",
    "ro.product.manufacturer": "Google",
    "ro.product.cpu.abi": "x86_64",
    "ro.build.version.sdk": "33",
    "ro.build.version.release": "13",
    "ro.build.characteristics": "emulator",
    "ro.build.type": "user",  # a Play Store image: `adb root` is refused, as the server says
    "ro.hardware": "ranchu",
    "ro.kernel.qemu": "1",
    "ro.boot.qemu": "1",
    "ro.sf.lcd_density": str(DENSITY),
    "sys.boot_completed": "1",
    "dev.bootcomplete": "1",
    "init.svc.bootanim": "stopped",
    "persist.sys.timezone": "America/Los_Angeles",
}


# ----- navigation bookkeeping for the latency model ---------------------------------------
def _where(phone: Phone) -> tuple[str, object]:
    return front_package(phone), phone.front.page


def _moved(sh: DeviceShell, before: tuple[str, object]) -> None:
    """Add app_launch / page_load to the line's latency events if the input navigated."""
    after = _where(sh.phone)
    if after[0] != before[0]:
        if after[0] != LAUNCHER:
            sh.events.append("app_launch")
    elif after[1] != before[1]:
        sh.events.append("page_load")


# ----- input -----------------------------------------------------------------------------------
_SOURCES = {"touchscreen", "touchpad", "mouse", "keyboard", "dpad", "stylus", "trackball"}


def _input(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    while args and (args[0] in _SOURCES or args[0] == "-d"):
        args = args[2:] if args[0] == "-d" else args[1:]
    if not args:
        return error_result("Usage: input [<source>] <command> [<arg>...]")
    verb, rest = args[0], args[1:]
    phone = sh.phone
    before = _where(phone)
    try:
        if verb == "tap":
            x, y = (float(v) for v in rest[:2]) if len(rest) >= 2 else _bad(verb)
            phone.tap(phone.to_logical(x), phone.to_logical(y))
            sh.events.append("input")
        elif verb in ("swipe", "draganddrop"):
            if len(rest) < 4:
                _bad(verb)
            x1, y1, x2, y2 = (phone.to_logical(float(v)) for v in rest[:4])
            ms = int(float(rest[4])) if len(rest) > 4 else 300
            phone.swipe(x1, y1, x2, y2, ms)
            sh.events.append("input")
        elif verb == "text":
            if not rest:
                _bad(verb)
            # the shell already removed quoting; Android's only escape is %s for a space. Since
            # Android 11 `input text` reads one argument: `input text a b` types "a"
            phone.input_text(rest[0].replace("%s", " "))
            sh.events.append("text")
        elif verb in ("keyevent", "press"):
            codes = [a for a in rest if not a.startswith("--")] or (
                ["23"] if verb == "press" else []
            )
            if not codes:
                _bad(verb)
            for code in codes:
                _key(phone, _keycode(code))
            sh.events.append("input")
        else:
            return error_result(f"Error: Unknown command: {verb}")
    except ValueError as exc:
        return error_result(f"Error: {exc}")
    _moved(sh, before)
    return b"", b"", 0


def _bad(verb: str) -> tuple[float, float]:
    raise ValueError(f"Invalid arguments for command: {verb}")


def _keycode(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    name = text.upper().removeprefix("KEYCODE_")
    if name not in KEYCODES:
        raise ValueError(f"Invalid arguments for command: keyevent (unknown key '{text}')")
    return KEYCODES[name]


def _key(phone: Phone, code: int) -> None:
    # The phone acts on HOME, BACK and ENTER; every other key code is a no-op, as specified.
    phone.keyevent(code)


# ----- screen ----------------------------------------------------------------------------------
def _screencap(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    png_flag = "-p" in args
    files = [a for a in args if not a.startswith("-")]
    if "-d" in args:  # "-d <display id>": the id is not a file name
        i = args.index("-d")
        files = [a for a in files if a != (args[i + 1] if i + 1 < len(args) else None)]
    sh.events.append("screenshot")
    png = sh.screenshot()
    if files:
        data = png if (png_flag or files[0].endswith(".png")) else _raw_frame(png)
        try:
            sh.fs.write(files[0], data)
        except FsError as exc:
            return error_result(f"Error opening file: {exc}")
        return b"", b"", 0
    return (png if png_flag else _raw_frame(png)), b"", 0


def _raw_frame(png: bytes) -> bytes:
    """screencap's raw format: width, height, format (1 = RGBA_8888), dataspace, pixels."""
    img = Image.open(io.BytesIO(png)).convert("RGBA")
    return struct.pack("<IIII", img.width, img.height, 1, 0) + img.tobytes()


def _wm(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    if args[:1] == ["size"]:
        w, h = sh.phone.display_size
        return f"Physical size: {w}x{h}\n".encode(), b"", 0
    if args[:1] == ["density"]:
        return f"Physical density: {_density(sh.phone)}\n".encode(), b"", 0
    return error_result("usage: wm [size|density]")


def _density(phone: Phone) -> int:
    # dpi scales with the display so the screen stays 411 dp wide at any render scale
    return max(1, round(DENSITY * phone.render_scale))


DUMPSYS_SERVICES = ("activity", "battery", "display", "input", "package", "power", "window")


def pid_of(package: str) -> int:
    """A stable process id per app (a device gives every app its own)."""
    return 2000 + int(hashlib.sha1(package.encode()).hexdigest(), 16) % 20000


def task_id_of(package: str) -> int:
    """A stable task id per app (``am stack list``, ``dumpsys activity recents``)."""
    return 100 + int(hashlib.sha1(b"task:" + package.encode()).hexdigest(), 16) % 900


def _recent_packages(phone: Phone) -> list[str]:
    """Tasks front to back: the front app, the apps behind it, the launcher's home task."""
    front = front_package(phone)
    behind = [front_package_of(phone, a) for a in reversed(phone.recents)]
    tasks = [front] + [p for p in dict.fromkeys(behind) if p != front]
    if front != LAUNCHER:
        tasks.append(LAUNCHER)
    return tasks


def _dumpsys(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    service = args[0] if args else ""
    pkg = front_package(sh.phone)
    act = activity_of(pkg)
    if service == "-l":
        text = "Currently running services:\n" + "".join(f"  {n}\n" for n in DUMPSYS_SERVICES)
    elif service == "input":
        w, h = sh.phone.display_size
        text = (
            "INPUT MANAGER (dumpsys input)\n\n"
            "Input Manager State:\n"
            "  Display: 0\n"
            f"    Viewport INTERNAL: displayId=0, uniqueId=local:4619827259835644672, port=0, "
            f"orientation=0, logicalFrame=[0, 0, {w}, {h}], physicalFrame=[0, 0, {w}, {h}], "
            f"deviceSize=[{w}, {h}], isActive=[1]\n"
            "  Device 2: virtio_input_multi_touch_0\n"
            "    Touch Input Mapper (mode - DIRECT):\n"
            f"      SurfaceWidth: {w}px\n"
            f"      SurfaceHeight: {h}px\n"
            "      SurfaceOrientation: 0\n"
        )
    elif service == "display":
        w, h = sh.phone.display_size
        text = (
            "DISPLAY MANAGER (dumpsys display)\n"
            "  mOnlyCode=false\n"
            "  mDefaultViewport=DisplayViewport{type=INTERNAL, valid=true, isActive=true, "
            "displayId=0, uniqueId='local:4619827259835644672', physicalPort=0, "
            f"orientation=0, logicalFrame=Rect(0, 0 - {w}, {h}), "
            f"physicalFrame=Rect(0, 0 - {w}, {h}), "
            f"deviceWidth={w}, deviceHeight={h}}}\n"
            f'  mBaseDisplayInfo=DisplayInfo{{"Built-in Screen", displayId 0, real {w} x '
            f"{h}, largest app {w} x {h}, density {_density(sh.phone)}, rotation 0}}\n"
        )
    elif service == "window":
        w, h = sh.phone.display_size
        full = pkg + act if act.startswith(".") else act
        text = (
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
            f"  Display: mDisplayId=0 init={w}x{h} {_density(sh.phone)}dpi cur={w}x{h} "
            f"app={w}x{h} rng={w}x{w}-{h}x{h}\n"
            f"  mCurrentFocus=Window{{5b1e2a4 u0 {pkg}/{full}}}\n"
            "  mCurrentRotation=ROTATION_0\n"
            f"  mFocusedApp=ActivityRecord{{8f3c1d2 u0 {pkg}/{act} t17}}\n"
        )
    elif service == "activity" and args[1:2] == ["recents"]:
        rows = [
            f"  * Recent #{i}: Task{{{pid_of(p):x} #{task_id_of(p)} type=standard A={p}}}\n"
            f"    id={task_id_of(p)} userId=0 realActivity={p}/{activity_of(p)}\n"
            for i, p in enumerate(_recent_packages(sh.phone))
            if p != LAUNCHER
        ]
        text = "ACTIVITY MANAGER RECENT TASKS (dumpsys activity recents)\n" + "".join(rows)
    elif service == "activity":
        text = (
            "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
            f"    mResumedActivity: ActivityRecord{{8f3c1d2 u0 {pkg}/{act} t17}}\n"
            f"  ACTIVITY {pkg}/{act} 8f3c1d2 pid={pid_of(pkg)}\n"
        )
    elif service == "power":
        text = "POWER MANAGER (dumpsys power)\n  mHoldingDisplaySuspendBlocker=true\n"
    elif service == "battery":
        text = (
            "Current Battery Service state:\n  AC powered: true\n  USB powered: false\n"
            "  present: true\n  level: 87\n  scale: 100\n  status: 2\n  health: 2\n"
            "  voltage: 5000\n  temperature: 250\n  technology: Li-ion\n"
        )
    else:
        return error_result(f"Can't find service: {service}") if service else (b"", b"", 0)
    return text.encode(), b"", 0


def _uiautomator(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    if args[:1] != ["dump"]:
        return error_result("Usage: uiautomator dump [--compressed] [file]")
    files = [a for a in args[1:] if not a.startswith("--")]
    target = files[0] if files else "/sdcard/window_dump.xml"
    xml = sh.phone.display_xml().encode()
    sh.events.append("screenshot")  # a hierarchy dump costs about as much as a screencap
    message = f"UI hierchary dumped to: {target}\n".encode()  # sic: Android's own typo
    if target == "/dev/tty":
        return xml + message, b"", 0
    try:
        sh.fs.write(target, xml)
    except FsError as exc:
        return error_result(f"ERROR: could not write {target}: {exc}")
    return message, b"", 0


def _getprop(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    props = {**PROPS, "ro.sf.lcd_density": str(_density(sh.phone))}
    props = {**props, "ro.serialno": sh.phone.serial, "ro.boot.serialno": sh.phone.serial}
    if args:
        return (props.get(args[0], args[1] if len(args) > 1 else "") + "\n").encode(), b"", 0
    return "".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())).encode(), b"", 0


SETTINGS_NAMESPACES = ("system", "secure", "global")
# What an Android 13 emulator answers before anyone changes them (`settings get` of any other key
# is "null", as on a device); `settings reset` returns a namespace to these.
SETTINGS_DEFAULTS = {
    "global/airplane_mode_on": "0",
    "global/wifi_on": "1",
    "global/mobile_data": "1",
    "global/bluetooth_on": "0",
    "system/screen_brightness": "102",
    "system/accelerometer_rotation": "0",
    "system/user_rotation": "0",
    "secure/location_mode": "3",
}


def _setting(sh: DeviceShell, key: str) -> str | None:
    return sh.settings.get(key, SETTINGS_DEFAULTS.get(key))


def _settings(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    verb, ns = (args[0] if args else ""), (args[1] if len(args) > 1 else "")
    if verb in ("get", "put", "delete", "list", "reset") and ns not in SETTINGS_NAMESPACES:
        return error_result(f"Invalid namespace '{ns}'" if ns else "Need a namespace")
    if len(args) >= 3 and verb == "get":
        return ((_setting(sh, f"{ns}/{args[2]}") or "null") + "\n").encode(), b"", 0
    if len(args) >= 4 and verb == "put":
        sh.settings[f"{ns}/{args[2]}"] = args[3]
        return b"", b"", 0
    if len(args) >= 3 and verb == "delete":
        key = f"{ns}/{args[2]}"
        gone = _setting(sh, key) is not None
        sh.settings[key] = None  # deleted: no default either
        return f"Deleted {int(gone)} rows\n".encode(), b"", 0
    if verb == "list":
        merged = {**SETTINGS_DEFAULTS, **sh.settings}
        rows = sorted(
            (k.split("/", 1)[1], v)
            for k, v in merged.items()
            if k.startswith(ns + "/") and v is not None
        )
        return "".join(f"{k}={v}\n" for k, v in rows).encode(), b"", 0
    if verb == "reset" and len(args) >= 3:  # back to the defaults: what the shell set goes
        for k in [k for k in sh.settings if k.startswith(ns + "/")]:
            del sh.settings[k]
        return b"", b"", 0
    return error_result(
        "usage: settings get|put|delete NAMESPACE KEY [VALUE] | list NAMESPACE | "
        "reset NAMESPACE {PACKAGE_NAME | untrusted_defaults | untrusted_clear | trusted_defaults}"
    )


def _svc(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    keys = {
        "wifi": "global/wifi_on",
        "data": "global/mobile_data",
        "bluetooth": "global/bluetooth_on",
    }
    if len(args) >= 2 and args[0] in keys and args[1] in ("enable", "disable"):
        sh.settings[keys[args[0]]] = "1" if args[1] == "enable" else "0"
        return b"", b"", 0
    return error_result("usage: svc wifi|data|bluetooth enable|disable")


# ----- packages and activities -----------------------------------------------------------------
def _pm(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    phone = sh.phone
    pkgs = installed_packages(phone)
    if args[:2] == ["list", "packages"]:
        flags = {a for a in args[2:] if a.startswith("-")}
        words = [a for a in args[2:] if not a.startswith("-")]
        rows = []
        for pkg, (_, system) in sorted(pkgs.items()):
            if ("-3" in flags and system) or ("-s" in flags and not system):
                continue
            if words and words[0] not in pkg:
                continue
            rows.append(f"package:{pkg}\n")
        return "".join(rows).encode(), b"", 0
    if args[:1] == ["install"] or args[:1] == ["install-create"]:
        # no APK runs here: the apps are built in. The device's own failure format, so a client
        # that installs an on-device helper (uiautomator2's server) learns it at once
        return (
            b"",
            b"Failure [INSTALL_FAILED_INVALID_APK: the simulator runs no APKs; its apps are "
            b"built in]\n",
            1,
        )
    if args[:1] in (["grant"], ["revoke"]) and len(args) >= 3:
        if args[1] not in pkgs:
            return b"", f"Exception occurred: Unknown package: {args[1]}\n".encode(), 255
        return b"", b"", 0  # permissions are not modelled: every app may do what it does
    if args[:2] == ["list", "features"]:
        return "".join(f"feature:{f}\n" for f in FEATURES).encode(), b"", 0
    if args[:1] == ["path"] and len(args) > 1:
        if args[1] not in pkgs:
            return b"", b"", 1
        return f"package:/data/app/{args[1]}-1/base.apk\n".encode(), b"", 0
    if args[:1] in (["clear"], ["uninstall"]) and len(args) > 1:
        pkg = args[-1]
        if pkg not in pkgs:
            return b"", f"Failure [not installed for 0: {pkg}]\n".encode(), 1
        label, system = pkgs[pkg]
        if args[0] == "uninstall":
            if system:
                return b"", b"Failure [DELETE_FAILED_INTERNAL_ERROR]\n", 1
            phone.installed.discard(label)
            if front_package(phone) == pkg:
                phone.go_home()
        elif pkg in phone.apps:
            phone.apps[pkg].reset()
        phone._touch()
        return b"Success\n", b"", 0
    return error_result("pm: unsupported command (try: list packages, path, clear, uninstall)")


FEATURES = (
    "android.hardware.camera",
    "android.hardware.faketouch",
    "android.hardware.location.gps",
    "android.hardware.screen.portrait",
    "android.hardware.telephony",
    "android.hardware.touchscreen",
    "android.hardware.touchscreen.multitouch",
    "android.hardware.wifi",
    "android.software.webview",
)


def _stack_list(phone: Phone) -> str:
    """``am stack list``: the front task visible, the tasks behind it not."""
    w, h = phone.display_size
    lines = [f"RootTask id=1 bounds=[0,0][{w},{h}] displayId=0 userId=0"]
    for i, pkg in enumerate(_recent_packages(phone)):
        act = activity_of(pkg)
        full = pkg + act if act.startswith(".") else act
        lines.append(
            f"  taskId={task_id_of(pkg)}: {pkg}/{act} bounds=[0,0][{w},{h}] userId=0 "
            f"visible={'true' if i == 0 else 'false'} topActivity=ComponentInfo{{{pkg}/{full}}}"
        )
    return "\n".join(lines) + "\n"


def _remove_task(phone: Phone, task: str) -> CmdResult:
    """``am stack remove ID``: the task is gone from the recents; the front one finishes."""
    by_id = {str(task_id_of(p)): p for p in _recent_packages(phone) if p != LAUNCHER}
    pkg = by_id.get(task)
    if pkg is None:
        return b"", b"", 0  # no such task: nothing to remove, as on a device
    if front_package(phone) == pkg:
        phone.go_home()
    phone.recents = [a for a in phone.recents if front_package_of(phone, a) != pkg]
    phone.came_from.pop(pkg, None)
    if pkg in phone.apps:
        phone.apps[pkg].reset()
    phone._touch()
    return b"", b"", 0


def _am_failed(message: str) -> CmdResult:
    """What ``am start`` gives when it cannot start anything: the reason on stderr and exit
    status 0, as Android's activity manager does (clients such as android_env read the text)."""
    return b"", (message + "\n").encode(), 0


def _am(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    phone = sh.phone
    if not args:
        return error_result("usage: am start|force-stop|broadcast|stack list ...")
    verb, rest = args[0], args[1:]
    if verb == "stack" and rest[:1] == ["list"]:
        return _stack_list(phone).encode(), b"", 0
    if verb == "stack" and rest[:1] == ["remove"] and len(rest) > 1:
        return _remove_task(phone, rest[1])
    if verb == "broadcast":
        action = rest[rest.index("-a") + 1] if "-a" in rest[:-1] else None
        intent = f"act={action} flg=0x400000" if action else "flg=0x400000"
        return (
            f"Broadcasting: Intent {{ {intent} }}\nBroadcast completed: result=0\n".encode(),
            b"",
            0,
        )
    if verb in ("force-stop", "kill") and rest:
        pkg = rest[-1]
        if front_package(phone) == pkg:
            phone.go_home()
        if pkg in phone.apps:
            phone.apps[pkg].reset()
        phone._touch()
        return b"", b"", 0
    if verb not in ("start", "start-activity"):
        return error_result(f"am: unsupported command: {verb}")
    opts: dict[str, str] = {}
    i = 0
    while i < len(rest):
        if rest[i] in ("-n", "-a", "-d", "-c") and i + 1 < len(rest):
            opts[rest[i]] = rest[i + 1]
            i += 2
        else:
            i += 1
    before = _where(phone)
    if "-n" in opts:
        pkg, _, activity = opts["-n"].partition("/")
        if pkg not in installed_packages(phone) or not has_activity(pkg, activity or "."):
            return _am_failed(
                f"Error type 3\nError: Activity class {{{opts['-n']}}} does not exist."
            )
    elif opts.get("-a") == "android.intent.action.VIEW" and "-d" in opts:
        resolved = package_for_uri(opts["-d"])
        if resolved is None:
            return _am_failed(
                "Error: Activity not started, unable to resolve Intent { "
                f"act=android.intent.action.VIEW dat={opts['-d']} flg=0x10000000 }}"
            )
        pkg = resolved
    else:
        return error_result("Error: no component (-n pkg/activity) given")
    if not launch_package(phone, pkg):
        return _am_failed(
            f"Error type 3\nError: Activity class {{{opts.get('-n', pkg)}}} does not exist."
        )
    sh.events.append("input")
    _moved(sh, before)
    return f"Starting: Intent {{ cmp={pkg}/{activity_of(pkg)} }}\n".encode(), b"", 0


def _ps(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    """toybox ``ps -A``: init, the system processes and every app that runs (front, recents)."""
    phone = sh.phone
    rows = [
        ("root", 1, 0, "init"),
        ("root", 360, 1, "zygote64"),
        ("system", 590, 360, "system_server"),
    ]
    running = [LAUNCHER, front_package(phone)]
    running += [front_package_of(phone, a) for a in phone.recents]
    for i, pkg in enumerate(dict.fromkeys(running)):
        rows.append((f"u0_a{100 + i}", pid_of(pkg), 360, pkg))
    rows.append(("shell", 9000 + len(rows), 1, "sh"))
    head = f"{'USER':<14}{'PID':>6}{'PPID':>6}{'VSZ':>9}{'RSS':>7} WCHAN            ADDR S NAME\n"
    body = "".join(
        f"{user:<14}{pid:>6}{ppid:>6}{'1234567':>9}{'98765':>7} 0                   0 S {name}\n"
        for user, pid, ppid, name in rows
    )
    return (head + body).encode(), b"", 0


def _monkey(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    if "-p" not in args or args.index("-p") + 1 >= len(args):
        return error_result("usage: monkey -p PACKAGE -c android.intent.category.LAUNCHER 1")
    pkg = args[args.index("-p") + 1]
    before = _where(sh.phone)
    if not launch_package(sh.phone, pkg):
        return b"", b"** No activities found to run, monkey aborted.\n", 252
    sh.events.append("input")
    _moved(sh, before)
    return b"  bash arg: -p\nEvents injected: 1\n## Network stats: elapsed time=12ms\n", b"", 0


ANDROID_COMMANDS: dict[str, Command] = {
    "input": _input,
    "screencap": _screencap,
    "wm": _wm,
    "dumpsys": _dumpsys,
    "uiautomator": _uiautomator,
    "getprop": _getprop,
    "settings": _settings,
    "pm": _pm,
    "am": _am,
    "svc": _svc,
    "ps": _ps,
    "monkey": _monkey,
    "simctl": simctl,
}
