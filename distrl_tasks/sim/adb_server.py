"""An asyncio ADB server for the simulated farm: the real ``adb`` client and adbutils talk to it
exactly as to Android's adb server (host services, transports, shell v1/v2, exec, sync).

One event loop serves every device and client. Phone operations run inline on the loop (they
are fast and cached); latency, hangs and sleeps are ``asyncio.sleep`` so devices never block
each other. ``host:kill`` (``adb kill-server``) is acknowledged but only stops the server when
it was created with ``allow_kill=True`` (``distrl sim serve --allow-kill``): a stray
``adb kill-server`` must not take a training run's device farm down. The shell services, one
command or an interactive session, are in :mod:`distrl_tasks.sim.adb_shell_service`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct

from distrl_tasks.sim.adb_protocol import (
    ADB_SERVER_VERSION,
    DEVICE_FEATURES,
    ProtocolError,
    block,
    fail,
    okay,
    read_request,
)
from distrl_tasks.sim.adb_shell_service import RunCommand, shell_raw, shell_v2
from distrl_tasks.sim.adb_sync import serve_sync
from distrl_tasks.sim.device_farm import DeviceFarm, SimDevice
from distrl_tasks.sim.shell import ShellResult

log = logging.getLogger(__name__)
TRACK_POLL_S = 0.25  # how often host:track-devices looks for state changes
PRODUCT = "product:sdk_gphone64_x86_64 model:sdk_gphone64_x86_64 device:emu64xa"


class AdbError(Exception):
    """A request the server refuses; the message goes back to the client in a FAIL reply."""


class AdbServer:
    """Serves a :class:`DeviceFarm` on ``host:port`` (port 0 picks a free port).

    Args:
        farm: the devices.
        host: bind address (loopback by default: the protocol has no authentication).
        port: TCP port; read the bound one from :attr:`port` after :meth:`start`.
        allow_kill: let ``host:kill`` stop the server.
        backlog: pending connections the listening socket queues. Hundreds of clients that
            connect at once overflow a small queue, and each overflow costs the client a SYN
            retry (about a second).
        idle_timeout_s: a connection that sends no request for this long is closed (a client
            that went away without closing holds nothing forever). Shell sessions and
            ``track-devices`` streams are not requests in waiting and are not cut.
    """

    def __init__(
        self,
        farm: DeviceFarm,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_kill: bool = False,
        backlog: int = 1024,
        idle_timeout_s: float = 300.0,
    ) -> None:
        self.farm = farm
        self.host = host
        self.port = port
        self.allow_kill = allow_kill
        self.backlog = backlog
        self.idle_timeout_s = idle_timeout_s
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._stop: asyncio.Event | None = None

    # ----- lifecycle -----------------------------------------------------------------------
    async def start(self) -> int:
        self._stop = asyncio.Event()
        self._server = await asyncio.start_server(
            self._handle, self.host, self.port, backlog=self.backlog
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def serve_until(self, stop: asyncio.Event | None = None) -> None:
        """Serve until ``stop`` is set (or an allowed ``host:kill`` arrives)."""
        assert self._stop is not None, "call start() first"
        waiters = [asyncio.ensure_future(self._stop.wait())]
        if stop is not None:
            waiters.append(asyncio.ensure_future(stop.wait()))
        _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for w in pending:
            w.cancel()

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    # ----- connections ---------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            device: SimDevice | None = None
            while True:
                try:
                    request = await asyncio.wait_for(read_request(reader), self.idle_timeout_s)
                except TimeoutError:
                    log.debug("closing a connection idle for %.0f s", self.idle_timeout_s)
                    return
                if request is None:
                    return
                try:
                    if device is None:
                        device, done = await self._host(request, reader, writer)
                    else:
                        await self._device_service(device, request, reader, writer)
                        done = True
                except AdbError as exc:
                    writer.write(fail(str(exc)))
                    done = True
                await writer.drain()
                if done:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ProtocolError) as exc:
            log.debug("connection dropped: %s", exc)
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # ----- host services -------------------------------------------------------------------
    async def _host(
        self, req: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[SimDevice | None, bool]:
        """Handle a host request; returns (device now selected, whether the connection ends)."""
        if req == "host:version":
            writer.write(okay(f"{ADB_SERVER_VERSION:04x}"))
        elif req == "host:kill":
            writer.write(okay())
            if self.allow_kill and self._stop is not None:
                self._stop.set()
            else:
                log.info("ignored host:kill (start the server with allow_kill to honour it)")
        elif req in ("host:devices", "host:devices-l"):
            writer.write(okay(self._listing(long=req.endswith("-l"))))
        elif req in ("host:track-devices", "host:track-devices-l"):
            await self._track(req.endswith("-l"), reader, writer)
        elif req == "host:host-features":
            writer.write(okay(",".join(DEVICE_FEATURES)))
        elif req in ("host:list-forward", "host:killforward-all"):
            writer.write(okay("") if req.endswith("list-forward") else okay())
        elif req.startswith("host:connect:"):
            addr = req.split(":", 2)[2]
            writer.write(okay(f"failed to connect to '{addr}': the simulated farm has no network"))
        elif req.startswith("host:disconnect:"):
            writer.write(okay("no such device in the simulated farm"))
        elif req.startswith(("host:transport", "host:tport:")):
            device = self._select(req)
            self._gate(device)
            if req.startswith("host:tport:"):
                writer.write(okay() + struct.pack("<Q", device.transport_id))
            else:
                writer.write(okay())
            return device, False
        else:
            device_query = self._split_device_query(req)
            if device_query is None:
                raise AdbError(f"unknown host service '{req}'")
            device, query = device_query
            await self._device_query(device, query, writer)
        return None, True

    def _listing(self, long: bool) -> str:
        rows = []
        for dev in self.farm.devices.values():
            if long:
                rows.append(
                    f"{dev.serial:<22} {dev.state} {PRODUCT} transport_id:{dev.transport_id}"
                )
            else:
                rows.append(f"{dev.serial}\t{dev.state}")
        return "".join(r + "\n" for r in rows)

    async def _track(
        self, long: bool, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writer.write(okay())
        last = None
        while True:
            listing = self._listing(long)
            if listing != last:
                writer.write(block(listing))
                await writer.drain()
                last = listing
            try:
                if not await asyncio.wait_for(reader.read(1), TRACK_POLL_S):
                    return  # the client hung up
            except TimeoutError:
                continue

    def _any(self) -> SimDevice:
        devices = list(self.farm.devices.values())
        if not devices:
            raise AdbError("no devices/emulators found")
        if len(devices) > 1:
            raise AdbError("more than one device/emulator")
        return devices[0]

    def _by_serial(self, serial: str) -> SimDevice:
        dev = self.farm.devices.get(serial)
        if dev is None:
            raise AdbError(f"device '{serial}' not found")
        return dev

    def _by_id(self, text: str) -> SimDevice:
        dev = self.farm.by_transport_id(int(text)) if text.isdigit() else None
        if dev is None:
            raise AdbError(f"no device with transport id '{text}'")
        return dev

    def _select(self, req: str) -> SimDevice:
        """Resolve ``host:transport*`` / ``host:tport:*`` to a device."""
        if req.startswith("host:tport:"):
            what = req[len("host:tport:") :]
            if what.startswith("serial:"):
                return self._by_serial(what[len("serial:") :])
            if what.startswith("id:"):
                return self._by_id(what[len("id:") :])
            if what in ("any", "usb", "local"):
                if what == "usb":
                    raise AdbError("no devices/emulators found")  # emulators are not USB devices
                return self._any()
            raise AdbError(f"bad transport request '{req}'")
        if req.startswith("host:transport:"):
            return self._by_serial(req[len("host:transport:") :])
        if req.startswith("host:transport-id:"):
            return self._by_id(req[len("host:transport-id:") :])
        if req in ("host:transport-any", "host:transport-local"):
            return self._any()
        if req == "host:transport-usb":
            raise AdbError("no devices/emulators found")
        raise AdbError(f"unknown host service '{req}'")

    def _gate(self, dev: SimDevice) -> None:
        """Refuse an offline device (this may start an injected offline spell)."""
        if dev.realism.faults.roll_offline():
            raise AdbError("device offline")

    def _split_device_query(self, req: str) -> tuple[SimDevice, str] | None:
        if req.startswith("host-serial:"):
            rest = req[len("host-serial:") :]
            for serial in self.farm.devices:
                if rest.startswith(serial + ":"):
                    return self.farm.devices[serial], rest[len(serial) + 1 :]
            serial, _, _query = rest.rpartition(":")
            raise AdbError(f"device '{serial or rest}' not found")
        if req.startswith("host-transport-id:"):
            tid, _, query = req[len("host-transport-id:") :].partition(":")
            return self._by_id(tid), query
        for prefix in ("host-local:", "host:", "host-any:"):
            if req.startswith(prefix):
                return self._any(), req[len(prefix) :]
        if req.startswith("host-usb:"):
            raise AdbError("no devices/emulators found")
        return None

    async def _device_query(self, dev: SimDevice, query: str, writer: asyncio.StreamWriter) -> None:
        if query == "get-state":
            writer.write(okay(dev.state))
        elif query == "get-serialno":
            writer.write(okay(dev.serial))
        elif query == "get-devpath":
            writer.write(okay("unknown"))
        elif query == "features":
            writer.write(okay(",".join(DEVICE_FEATURES)))
        elif query.startswith("wait-for-"):
            want = query.rsplit("-", 1)[-1]
            writer.write(okay())
            await writer.drain()
            while not _wait_done(dev, want):
                await asyncio.sleep(TRACK_POLL_S)
            writer.write(okay())
        elif query == "list-forward":
            writer.write(okay(""))
        elif query.startswith(("forward:", "killforward")):
            raise AdbError("port forwarding is not supported by the simulated farm")
        else:
            raise AdbError(f"unknown host service '{query}'")

    # ----- device services -----------------------------------------------------------------
    async def _device_service(
        self,
        dev: SimDevice,
        service: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        if service.startswith("shell"):
            head, sep, command = service.partition(":")
            if not sep:
                raise AdbError(f"bad service '{service}'")
            options = set(head.split(",")[1:])
            writer.write(okay())
            serve = shell_v2 if "v2" in options else shell_raw
            await serve(self._runner(dev), command, reader, writer)
        elif service.startswith("exec:"):
            writer.write(okay())
            await shell_raw(self._runner(dev), service[len("exec:") :], reader, writer)
        elif service == "sync:":
            writer.write(okay())
            await serve_sync(reader, writer, dev.fs)
        elif service.startswith("reboot:"):
            writer.write(okay())
            await self.run_command(dev, "simctl reset")
        elif service in ("root:", "unroot:"):
            writer.write(okay())
            writer.write(b"adbd cannot run as root in production builds\n")
        else:
            raise AdbError(f"unsupported device service '{service}'")

    async def run_command(
        self, dev: SimDevice, command: str, stdin: bytes = b"", *, session: bool = False
    ) -> ShellResult:
        """Run a shell command with the device's faults and latency applied.

        ``session``: a line of an interactive session (``$?`` carries over from the last one).
        """
        stall = dev.realism.before_command(dev.phone, command)
        if stall > 0:
            await asyncio.sleep(stall)
        result = dev.shell.run(command, stdin, session=session)
        delay = dev.realism.command_delay(dev.shell.events) + dev.shell.sleep_s
        if delay > 0:
            await asyncio.sleep(delay)
        return result

    def _runner(self, dev: SimDevice) -> RunCommand:
        async def run(command: str, session: bool) -> ShellResult:
            return await self.run_command(dev, command, session=session)

        return run


def _wait_done(dev: SimDevice, want: str) -> bool:
    if want == "disconnect":
        return False  # simulated devices never detach
    return want == "any" or dev.state == want
