"""The ADB file sync protocol (``sync:`` service) over a device's in-memory filesystem.

Requests are ``<4-byte id><u32 LE length><payload>``: STAT, LIST, RECV (pull), SEND (push) and
QUIT. Only the v1 messages are served (the server does not advertise ``stat_v2``/``ls_v2``).
"""

from __future__ import annotations

import asyncio
import posixpath
import struct

from distrl_tasks.sim.vfs import FsError, VirtualFS

SYNC_DATA_MAX = 64 * 1024  # adb's chunk size limit for DATA messages
MAX_PATH = 4096


def _fail(message: str) -> bytes:
    data = message.encode()
    return b"FAIL" + struct.pack("<I", len(data)) + data


async def serve_sync(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, fs: VirtualFS
) -> None:
    """Serve sync requests until QUIT or EOF."""
    while True:
        try:
            head = await reader.readexactly(8)
        except asyncio.IncompleteReadError:
            return
        cmd, size = head[:4], struct.unpack("<I", head[4:])[0]
        if cmd == b"QUIT":
            return
        if size > MAX_PATH:
            writer.write(_fail(f"path too long ({size} bytes)"))
            await writer.drain()
            return
        path = (await reader.readexactly(size)).decode("utf-8", errors="replace")
        if cmd == b"STAT":
            st = fs.stat(path) if path else None
            mode, fsize, mtime = (st.mode, st.size, st.mtime) if st else (0, 0, 0)
            writer.write(b"STAT" + struct.pack("<III", mode, fsize & 0xFFFFFFFF, mtime))
        elif cmd == b"LIST":
            writer.write(_list(fs, path))
        elif cmd == b"RECV":
            writer.write(_recv(fs, path))
        elif cmd == b"SEND":
            reply = await _send(reader, fs, path)
            writer.write(reply)
            if reply.startswith(b"FAIL"):
                await writer.drain()
                return
        else:
            writer.write(_fail(f"unknown sync command {cmd!r}"))
            await writer.drain()
            return
        await writer.drain()


def _list(fs: VirtualFS, path: str) -> bytes:
    out = []
    try:
        entries = fs.listdir(path)
    except FsError:
        entries = []  # adbd lists nothing for a missing directory and just says DONE
    for name, st in entries:
        raw = name.encode()
        out.append(b"DENT" + struct.pack("<IIII", st.mode, st.size, st.mtime, len(raw)) + raw)
    out.append(b"DONE" + bytes(16))
    return b"".join(out)


def _recv(fs: VirtualFS, path: str) -> bytes:
    try:
        data = fs.read(path)
    except FsError as exc:
        return _fail(
            f"remote object '{path}' does not exist" if "No such" in str(exc) else str(exc)
        )
    chunks = [
        b"DATA" + struct.pack("<I", len(data[i : i + SYNC_DATA_MAX])) + data[i : i + SYNC_DATA_MAX]
        for i in range(0, len(data), SYNC_DATA_MAX)
    ]
    return b"".join(chunks) + b"DONE" + bytes(4)


async def _send(reader: asyncio.StreamReader, fs: VirtualFS, spec: str) -> bytes:
    """Receive DATA chunks until DONE, then store the file; returns the OKAY/FAIL reply."""
    path, _, mode_text = spec.rpartition(",")
    if not path:
        path, mode_text = spec, "33188"  # no mode given: 0100644
    try:
        mode = int(mode_text)
    except ValueError:
        mode = 0o100644
    parts: list[bytes] = []
    error = ""
    while True:
        head = await reader.readexactly(8)
        kind, size = head[:4], struct.unpack("<I", head[4:])[0]
        if kind == b"DATA":
            if size > SYNC_DATA_MAX:
                return _fail(f"DATA chunk of {size} bytes exceeds {SYNC_DATA_MAX}")
            parts.append(await reader.readexactly(size))
        elif kind == b"DONE":
            mtime = size  # DONE carries the modification time in the length field
            break
        else:
            return _fail(f"unexpected {kind!r} while receiving a file")
    try:
        fs.mkdir(posixpath.dirname(fs.normalize(path)), parents=True)  # adbd creates parents
        fs.write(path, b"".join(parts), mode=mode & 0o7777, mtime=mtime)
    except FsError as exc:
        error = f"couldn't create file: {exc}"
    return _fail(error) if error else b"OKAY" + bytes(4)
