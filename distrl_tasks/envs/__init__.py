"""Devices (ADB, emulators) and the AitW-style Android environment."""

from distrl_tasks.envs.adb_device import AdbDevice, input_text_commands
from distrl_tasks.envs.android_env import AndroidEnv, EnvObservation, StepResult, horizon_for
from distrl_tasks.envs.device import Device, DeviceError

__all__ = [
    "AdbDevice",
    "AndroidEnv",
    "Device",
    "DeviceError",
    "EnvObservation",
    "StepResult",
    "horizon_for",
    "input_text_commands",
]
