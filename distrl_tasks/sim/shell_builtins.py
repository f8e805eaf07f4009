"""Builtins and small POSIX tools of the simulated device shell (``echo``, ``cat``, ``ls``,
``rm``, ``mkdir``, ``grep``, ...). Each takes ``(shell, args, stdin)`` and returns
``(stdout, stderr, exit_code)``.
"""

from __future__ import annotations

import hashlib
import re

from distrl_tasks.sim.shell import CmdResult, Command, DeviceShell, ShellExit
from distrl_tasks.sim.vfs import FsError


def error_result(msg: str, code: int = 1) -> CmdResult:
    """A failed command's result: ``msg`` on stderr (one line ending), exit status ``code``."""
    return b"", (msg.rstrip("\n") + "\n").encode(), code


def _echo(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    newline = True
    if args and args[0] == "-n":
        newline, args = False, args[1:]
    return (" ".join(args) + ("\n" if newline else "")).encode(), b"", 0


def _exit(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    code = int(args[0]) & 0xFF if args and args[0].lstrip("-").isdigit() else sh.last_status
    raise ShellExit(code)


def _sleep(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    try:
        secs = float(args[0]) if args else -1.0
    except ValueError:
        secs = -1.0
    if secs < 0:
        return b"", b"sleep: invalid number\n", 1
    sh.sleep_s += secs
    return b"", b"", 0


def _split_flags(args: list[str]) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    rest: list[str] = []
    for a in args:
        if a.startswith("-") and len(a) > 1 and not rest:
            flags.update(a[1:])
        else:
            rest.append(a)
    return flags, rest


def _cat(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    if not args:
        return stdin, b"", 0
    out, err, code = [], [], 0
    for path in args:
        try:
            out.append(sh.fs.read(path))
        except FsError as exc:
            err.append(f"cat: {exc}\n".encode())
            code = 1
    return b"".join(out), b"".join(err), code


def _ls(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    flags, paths = _split_flags(args)
    out, err, code = [], [], 0
    for path in paths or ["/"]:
        st = sh.fs.stat(path)
        if st is None:
            err.append(f"ls: {path}: No such file or directory\n")
            code = 1
            continue
        entries = sh.fs.listdir(path) if st.is_dir else [(path, st)]
        for name, est in entries:
            if "l" in flags:
                kind = "d" if est.is_dir else "-"
                out.append(f"{kind}rw-rw---- 1 shell shell {est.size:>8} {name}\n")
            else:
                out.append(name + "\n")
    return "".join(out).encode(), "".join(err).encode(), code


def _rm(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    flags, paths = _split_flags(args)
    err, code = [], 0
    for path in paths:
        try:
            sh.fs.remove(path, recursive=bool(flags & {"r", "R"}))
        except FsError as exc:
            if "f" in flags and "No such file" in str(exc):
                continue
            err.append(f"rm: {exc}\n")
            code = 1
    return b"", "".join(err).encode(), code


def _mkdir(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    flags, paths = _split_flags(args)
    err, code = [], 0
    for path in paths:
        try:
            sh.fs.mkdir(path, parents="p" in flags)
        except FsError as exc:
            err.append(f"mkdir: '{path}': {str(exc).split(': ', 1)[-1]}\n")
            code = 1
    return b"", "".join(err).encode(), code


def _touch(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    for path in args:
        try:
            if not sh.fs.exists(path):
                sh.fs.write(path, b"")
        except FsError as exc:
            return b"", f"touch: {exc}\n".encode(), 1
    return b"", b"", 0


def _grep(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    flags, rest = _split_flags(args)
    if not rest:
        return b"", b"usage: grep [-iv] PATTERN [FILE...]\n", 2
    try:
        pattern = re.compile(rest[0], re.IGNORECASE if "i" in flags else 0)
    except re.error as exc:
        return b"", f"grep: bad regex '{rest[0]}': {exc}\n".encode(), 2
    data = stdin
    if rest[1:]:
        try:
            data = b"".join(sh.fs.read(p) for p in rest[1:])
        except FsError as exc:
            return b"", f"grep: {exc}\n".encode(), 2
    lines = data.decode(errors="replace").splitlines(keepends=True)
    hits = [ln for ln in lines if bool(pattern.search(ln)) != ("v" in flags)]
    return "".join(hits).encode(), b"", 0 if hits else 1


def _head(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    count = 10
    if len(args) >= 2 and args[0] == "-n" and args[1].isdigit():
        count = int(args[1])
    lines = stdin.splitlines(keepends=True)
    return b"".join(lines[:count]), b"", 0


def _inputs(sh: DeviceShell, paths: list[str], stdin: bytes, tool: str) -> bytes:
    """The files' bytes in order, or stdin when none is named (FsError names the tool)."""
    if not paths:
        return stdin
    try:
        return b"".join(sh.fs.read(p) for p in paths)
    except FsError as exc:
        raise FsError(f"{tool}: {exc}") from exc


def _cut(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    """toybox ``cut -d DELIM -f LIST [FILE...]`` (LIST: N, N-M, N- or N,M,...)."""
    delim, fields, paths, i = "\t", "", [], 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "-f") and i + 1 < len(args):
            delim, fields = (args[i + 1], fields) if a == "-d" else (delim, args[i + 1])
            i += 2
            continue
        if a.startswith("-d") and len(a) > 2:
            delim = a[2:]
        elif a.startswith("-f") and len(a) > 2:
            fields = a[2:]
        else:
            paths.append(a)
        i += 1
    if not fields or len(delim) != 1:
        return error_result("cut: need -f LIST and a one-character -d DELIM")
    wanted: set[int] = set()
    open_from: int | None = None
    try:
        for part in fields.split(","):
            lo, dash, hi = part.partition("-")
            if dash and not hi:
                open_from = int(lo)
            else:
                wanted.update(range(int(lo or 1), int(hi or lo) + 1))
    except ValueError:
        return error_result(f"cut: bad list '{fields}'")
    try:
        data = _inputs(sh, paths, stdin, "cut")
    except FsError as exc:
        return error_result(str(exc))
    out = []
    for line in data.decode(errors="replace").splitlines():
        cols = line.split(delim)
        keep = [
            c
            for n, c in enumerate(cols, 1)
            if n in wanted or (open_from is not None and n >= open_from)
        ]
        out.append(delim.join(keep) if delim in line else line)
    return ("\n".join(out) + ("\n" if out else "")).encode(), b"", 0


def _md5sum(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
    if not args:
        return f"{hashlib.md5(stdin).hexdigest()}  -\n".encode(), b"", 0
    out, err, code = [], [], 0
    for path in args:
        try:
            out.append(f"{hashlib.md5(sh.fs.read(path)).hexdigest()}  {path}\n")
        except FsError as exc:
            err.append(f"md5sum: {exc}\n")
            code = 1
    return "".join(out).encode(), "".join(err).encode(), code


def _const(out: str, code: int = 0) -> Command:
    def run(sh: DeviceShell, args: list[str], stdin: bytes) -> CmdResult:
        return out.encode(), b"", code

    return run


BUILTINS: dict[str, Command] = {
    "echo": _echo,
    "true": _const(""),
    "false": _const("", 1),
    ":": _const(""),
    "exit": _exit,
    "sleep": _sleep,
    "cat": _cat,
    "ls": _ls,
    "rm": _rm,
    "mkdir": _mkdir,
    "touch": _touch,
    "grep": _grep,
    "head": _head,
    "cut": _cut,
    "md5sum": _md5sum,
    "id": _const("uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0\n"),
    "whoami": _const("shell\n"),
}
