"""The shell services of the simulated ADB server: ``shell:`` (v1), ``shell,v2:`` and ``exec:``.

A request that names a command runs it once and closes. A request without one is a session, the
way ``adb shell`` with no arguments opens one: each command line runs as soon as its newline
arrives on stdin and its output goes back at once, so a person typing (or a script feeding lines
and waiting for answers) sees each result before sending the next line. A line left open (an
unterminated quote, or a trailing ``|``, ``&&`` or ``||``) waits for the following lines, as
``sh`` does. ``$?`` carries from line to line; ``exit`` or closing stdin ends the session, and
shell v2 reports the last status as the exit code. There is no PTY: no prompt and no echo, as
with ``adb shell -T``.

This lives apart from :mod:`distrl_tasks.sim.adb_server`, which routes requests, because the
session is its own small protocol over the byte streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from distrl_tasks.sim.adb_protocol import (
    V2_CLOSE_STDIN,
    V2_EXIT,
    V2_STDERR,
    V2_STDIN,
    V2_STDOUT,
    read_v2_packet,
    v2_packet,
    v2_stream,
)
from distrl_tasks.sim.shell import ShellResult, ShellSyntaxError, parse

DRAIN_TIMEOUT_S = 5.0  # how long to wait for a client to close after the last reply
READ_CHUNK = 65536

# Runs one command line on the device; ``session=True`` keeps ``$?`` from the previous line.
RunCommand = Callable[[str, bool], Awaitable[ShellResult]]


def is_open(text: str) -> bool:
    """Whether ``text`` stops inside a construct ``sh`` keeps reading lines for."""
    if text.rstrip().endswith(("|", "&&")):
        return True  # `|`, `||` and `&&` need the command that follows
    try:
        parse(text)
    except ShellSyntaxError as exc:
        return "no closing quote" in str(exc)
    return False


class CommandLines:
    """Cuts a session's stdin into complete command lines as the bytes arrive."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[str]:
        """Add ``data``; return the command lines it completed (without their newline)."""
        self.pending += data
        lines: list[str] = []
        start = 0  # where the search for the next newline resumes inside ``pending``
        while (cut := self.pending.find(b"\n", start)) >= 0:
            text = self.pending[:cut].decode(errors="replace")
            if is_open(text):
                start = cut + 1  # the newline is part of the command; read on
                continue
            lines.append(text)
            self.pending, start = self.pending[cut + 1 :], 0
        return lines

    def rest(self) -> str:
        """What is left when stdin closes (a last line without a newline)."""
        text, self.pending = self.pending.decode(errors="replace"), b""
        return text


async def shell_raw(
    run: RunCommand, command: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Shell v1 / exec: one byte stream (stdout and stderr interleaved), then close."""
    if command.strip():
        writer.write((await run(command, False)).merged)
    else:
        lines = CommandLines()

        async def emit(result: ShellResult) -> None:
            writer.write(result.merged)
            await writer.drain()

        while data := await reader.read(READ_CHUNK):
            if (await _run_lines(run, lines.feed(data), emit))[1]:
                break
        else:
            await _run_lines(run, [lines.rest()], emit)
    await finish(reader, writer)


async def shell_v2(
    run: RunCommand, command: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Shell protocol v2: stdout/stderr packets, then an exit-code packet."""

    async def emit(result: ShellResult) -> None:
        if result.stdout:
            writer.write(v2_stream(V2_STDOUT, result.stdout))
        if result.stderr:
            writer.write(v2_stream(V2_STDERR, result.stderr))
        await writer.drain()

    if command.strip():
        result = await run(command, False)
        await emit(result)
        status = result.exit_code
    else:
        status = await _v2_session(run, reader, emit)
    writer.write(v2_packet(V2_EXIT, bytes([status & 0xFF])))
    await finish(reader, writer)


async def _v2_session(
    run: RunCommand,
    reader: asyncio.StreamReader,
    emit: Callable[[ShellResult], Awaitable[None]],
) -> int:
    lines, status = CommandLines(), 0
    while (packet := await read_v2_packet(reader)) is not None:
        kind, data = packet
        if kind == V2_CLOSE_STDIN:
            break
        if kind == V2_STDIN:
            status, exited = await _run_lines(run, lines.feed(data), emit, status)
            if exited:
                return status
    status, _ = await _run_lines(run, [lines.rest()], emit, status)
    return status


async def _run_lines(
    run: RunCommand,
    lines: list[str],
    emit: Callable[[ShellResult], Awaitable[None]],
    status: int = 0,
) -> tuple[int, bool]:
    """Run ``lines`` in order, emitting each output: ``(last status, whether one ran exit)``."""
    for line in lines:
        if not line.strip():
            continue
        result = await run(line, True)
        await emit(result)
        status = result.exit_code
        if result.exited:
            return status, True
    return status, False


async def finish(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Flush, half-close, and wait for the client to hang up.

    Closing with unread client bytes (e.g. a v2 close-stdin packet) would make the kernel send
    RST, which can destroy output the client has not read yet.
    """
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    with contextlib.suppress(TimeoutError, ConnectionError):
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            while await reader.read(READ_CHUNK):
                continue  # discard whatever the client still sends until it hangs up
