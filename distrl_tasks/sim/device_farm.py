"""The simulated device farm: phones keyed by serial, each with its shell and realism layer.

``DeviceFarm`` only holds state; :mod:`distrl_tasks.sim.adb_server` serves it and
:mod:`distrl_tasks.sim.serving` runs that server on a background thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from distrl_tasks.config import SimConfig
from distrl_tasks.sim.dynamics import Dynamics, parse_profile
from distrl_tasks.sim.phone import GoalParser, Phone
from distrl_tasks.sim.realism import DeviceRealism
from distrl_tasks.sim.shell import Command, DeviceShell
from distrl_tasks.sim.shell_android import ANDROID_COMMANDS
from distrl_tasks.sim.shell_builtins import BUILTINS
from distrl_tasks.sim.vfs import VirtualFS

# the whole shell of a simulated device: POSIX builtins plus the Android tools
SHELL_COMMANDS: dict[str, Command] = {**BUILTINS, **ANDROID_COMMANDS}
FIRST_PORT = 5554  # emulator serials are emulator-<console port>; console ports go up by 2


def serial_for(index: int) -> str:
    """``0 -> emulator-5554``, ``1 -> emulator-5556``, ..."""
    return f"emulator-{FIRST_PORT + 2 * index}"


@dataclass
class SimDevice:
    """One simulated device with everything the ADB server needs."""

    serial: str
    transport_id: int
    phone: Phone
    fs: VirtualFS
    realism: DeviceRealism
    shell: DeviceShell = field(init=False)

    def __post_init__(self) -> None:
        self.shell = DeviceShell(
            self.phone,
            SHELL_COMMANDS,
            self.fs,
            screenshot=lambda: self.realism.screenshot(self.phone),
        )

    @property
    def state(self) -> str:
        """ADB connection state: ``device`` or ``offline``."""
        return "offline" if self.realism.faults.is_offline() else "device"


class DeviceFarm:
    """``n_devices`` phones with serials ``emulator-5554``, ``emulator-5556``, ...

    Args:
        n_devices: how many devices (1..256 in configs; any positive number here).
        seed: seeds app content, latency draws and faults; each device derives its own streams.
        sim_cfg: render scale, latency, fault and dynamics-rate settings (defaults when None).
        dynamics: live-world profile of every device (``static``, ``live``, ``hostile``; see
            :mod:`distrl_tasks.sim.dynamics`). ``static`` unless given: callers that collect or
            evaluate online pass ``cfg.sim.dynamics.profile``; the rates set in
            ``sim_cfg.dynamics.rates`` override the profile's.
        goal_parser: turns ``simctl task set`` text into a task (the simulator knows no task
            families; :mod:`distrl_tasks.tasks.goal_farms` builds farms with the project's parser).
            Without one, ``simctl task set`` answers an error.

    Raises:
        ValueError: ``n_devices`` < 1 or an unknown profile.
    """

    def __init__(
        self,
        n_devices: int,
        seed: int = 0,
        sim_cfg: SimConfig | None = None,
        dynamics: str = "static",
        goal_parser: GoalParser | None = None,
    ) -> None:
        if n_devices < 1:
            raise ValueError(f"n_devices must be >= 1, got {n_devices}")
        self.cfg = sim_cfg or SimConfig()
        self.seed = seed
        self.dynamics = parse_profile(dynamics)
        self.goal_parser = goal_parser
        self.devices: dict[str, SimDevice] = {}
        for _ in range(n_devices):
            self.add_device()

    def add_device(self) -> SimDevice:
        """Attach one more device (the next serial in sequence)."""
        i = len(self.devices)
        serial = serial_for(i)
        dev = SimDevice(
            serial=serial,
            transport_id=i + 1,
            phone=Phone(
                serial,
                seed=(self.seed << 16) + i,
                render_scale=self.cfg.render_scale,
                dynamics=Dynamics(
                    self.dynamics,
                    self.cfg.dynamics.rates.overrides(),
                    seed=self.seed,
                    serial=serial,
                ),
                goal_parser=self.goal_parser,
            ),
            fs=VirtualFS(),
            realism=DeviceRealism(self.cfg.latency, self.cfg.faults, seed=self.seed, serial=serial),
        )
        self.devices[serial] = dev
        return dev

    def set_dynamics(self, profile: str) -> None:
        """Switch every device to ``profile`` (their next screens are drawn under it)."""
        self.dynamics = parse_profile(profile)
        for dev in self.devices.values():
            dev.phone.dynamics.set_profile(self.dynamics)
            dev.phone._touch()

    @property
    def serials(self) -> list[str]:
        return list(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def __getitem__(self, serial: str) -> SimDevice:
        try:
            return self.devices[serial]
        except KeyError:
            raise KeyError(f"no simulated device {serial!r} (have: {self.serials})") from None

    def by_transport_id(self, tid: int) -> SimDevice | None:
        return next((d for d in self.devices.values() if d.transport_id == tid), None)
