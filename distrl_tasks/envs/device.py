"""The Device protocol: everything an env or collector needs from one phone.

Two implementations drive the same code path: :class:`~distrl_tasks.envs.adb_device.AdbDevice`
(an emulator or a simulated phone behind an ADB server). Every failure of the device itself
(offline, hang past the timeout, a crashed system, a broken pipe) surfaces as
:class:`DeviceError`, so collectors can catch one type, truncate the episode and recover.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

KEY_HOME = 3
KEY_BACK = 4
KEY_ENTER = 66


class DeviceError(RuntimeError):
    """The device failed a command (offline, timeout, crash, transport error)."""


@runtime_checkable
class Device(Protocol):
    """One Android device as the env sees it. Coordinates are screen pixels."""

    serial: str

    def screenshot(self) -> bytes:
        """PNG bytes of the current screen."""
        ...

    def ui_xml(self) -> str:
        """The ``uiautomator dump`` view hierarchy."""
        ...

    def screen_size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels (``wm size``)."""
        ...

    def tap(self, x: float, y: float) -> None: ...

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None: ...

    def input_text(self, text: str) -> None:
        """Type ``text`` literally into the focused field."""
        ...

    def keyevent(self, code: int) -> None: ...

    def launch_app(self, package: str) -> None: ...

    def reset(self) -> None:
        """Back to a clean home screen (simulator: ``simctl reset``; emulator: snapshot load)."""
        ...

    def set_task(self, goal: str) -> None:
        """Prepare the device for ``goal`` (simulator: ``simctl task set``; emulator: reset)."""
        ...

    def check_task(self) -> dict[str, Any]:
        """The oracle's verdict (simulator only); a dict with at least ``success``."""
        ...

    def is_healthy(self) -> bool:
        """Whether the device answers a trivial command now."""
        ...
