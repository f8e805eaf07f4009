"""How the scripted expert talks to a device: five methods, in-process or over ADB.

The in-process :class:`~distrl_tasks.sim.phone.Phone` already has exactly the :class:`Driver`
methods (the fast path for tests and demos). :class:`AdbDriver` sends the same calls to any
device reachable through adbutils: the simulator's ADB server or a real emulator.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Driver(Protocol):
    """What an agent can do to a phone: read the view hierarchy, touch, type and press keys."""

    def ui_xml(self) -> str:
        """The current ``uiautomator dump`` XML."""
        ...

    def tap(self, x: float, y: float) -> None:
        """Tap at screen pixel (x, y)."""
        ...

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        """Swipe from (x1, y1) to (x2, y2)."""
        ...

    def input_text(self, text: str) -> None:
        """Type ``text`` into the focused field."""
        ...

    def keyevent(self, code: int | str) -> None:
        """Press a key (3 HOME, 4 BACK, 66 ENTER)."""
        ...


def escape_input_text(text: str) -> str:
    """Encode text for ``input text``: spaces become ``%s`` (what the Android command expects).

    Shell quoting is left to the caller's argument list, so quotes, ``;``, ``&`` and ``$`` reach
    the device literally. Android's ``input`` has no escape for a literal ``%s``, so such text is
    refused rather than silently typed as a space.

    Raises:
        ValueError: the text holds a newline or a literal ``%s`` (``input text`` cannot type it).
    """
    if "\n" in text or "\r" in text:
        raise ValueError("input text cannot type a newline; press ENTER instead")
    if "%s" in text:
        raise ValueError(f"input text cannot type a literal '%s' (it means a space): {text!r}")
    return text.replace(" ", "%s")


class AdbDriver:
    """A :class:`Driver` over an adbutils ``AdbDevice`` (shell ``input`` and uiautomator dump)."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def ui_xml(self) -> str:
        return str(self.device.dump_hierarchy())

    def _input(self, *args: str) -> None:
        # a list argument is quoted word by word by adbutils, so the text arrives verbatim
        self.device.shell(["input", *args])

    def tap(self, x: float, y: float) -> None:
        self._input("tap", str(round(x)), str(round(y)))

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        coords = [str(round(v)) for v in (x1, y1, x2, y2)]
        self._input("swipe", *coords, str(int(duration_ms)))

    def input_text(self, text: str) -> None:
        if text:
            self._input("text", escape_input_text(text))

    def keyevent(self, code: int | str) -> None:
        self._input("keyevent", str(code))

    def shell(self, cmd: str) -> str:
        """Run a shell command on the device (used for ``simctl`` control commands)."""
        return str(self.device.shell(cmd))
