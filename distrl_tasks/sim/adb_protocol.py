"""Wire format of the ADB host protocol (client <-> adb server) and of shell protocol v2.

Host requests are ``<4 hex digits length><payload>``. Replies start with ``OKAY`` or ``FAIL``;
``FAIL`` and query results carry a hex-length-prefixed string. After a transport switch the same
connection carries one device service (``shell:``, ``exec:``, ``sync:``...). Shell v2 frames
are ``<id:u8><length:u32 LE><data>`` with ids 0 stdin, 1 stdout, 2 stderr, 3 exit, 4 close stdin,
5 window size.
"""

from __future__ import annotations

import asyncio
import struct

ADB_SERVER_VERSION = 41  # what adb 1.0.41 (platform-tools 29+) expects, else it restarts us
# Only what is fully implemented: shell protocol v2 (separate streams, exit codes).
DEVICE_FEATURES = ("shell_v2",)
MAX_REQUEST = 64 * 1024  # adb caps host requests far below this; larger means garbage

V2_STDIN, V2_STDOUT, V2_STDERR, V2_EXIT, V2_CLOSE_STDIN, V2_WINDOW_SIZE = range(6)
V2_CHUNK = 32 * 1024  # split large outputs: clients read packets into bounded buffers


class ProtocolError(Exception):
    """The peer sent something that is not ADB protocol."""


def block(payload: str | bytes) -> bytes:
    """A hex-length-prefixed string, as in query replies and FAIL messages."""
    data = payload.encode() if isinstance(payload, str) else payload
    return f"{len(data):04x}".encode() + data


def okay(payload: str | bytes | None = None) -> bytes:
    return b"OKAY" if payload is None else b"OKAY" + block(payload)


def fail(message: str) -> bytes:
    return b"FAIL" + block(message)


async def read_request(reader: asyncio.StreamReader) -> str | None:
    """Read one host request; None on a clean EOF before the length."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    try:
        size = int(head, 16)
    except ValueError:
        raise ProtocolError(f"bad request length {head!r}") from None
    if size > MAX_REQUEST:
        raise ProtocolError(f"request of {size} bytes is too long")
    return (await reader.readexactly(size)).decode("utf-8", errors="replace")


def v2_packet(kind: int, data: bytes) -> bytes:
    return struct.pack("<BI", kind, len(data)) + data


def v2_stream(kind: int, data: bytes) -> bytes:
    """``data`` as one or more v2 packets of at most :data:`V2_CHUNK` bytes."""
    return b"".join(v2_packet(kind, data[i : i + V2_CHUNK]) for i in range(0, len(data), V2_CHUNK))


async def read_v2_packet(reader: asyncio.StreamReader) -> tuple[int, bytes] | None:
    """One shell v2 packet from the client, or None at EOF."""
    try:
        head = await reader.readexactly(5)
    except asyncio.IncompleteReadError:
        return None
    kind, size = struct.unpack("<BI", head)
    if size > 1024 * 1024:
        raise ProtocolError(f"shell v2 packet of {size} bytes is too long")
    try:
        return kind, await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
