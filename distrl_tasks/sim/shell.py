"""The device shell: parses command lines the way Android's ``/system/bin/sh`` does for the
commands ADB clients send, and runs them against a :class:`~distrl_tasks.sim.phone.Phone`.

Supported syntax: POSIX quoting (``'...'``, ``"..."``, backslash), ``;``, ``&&``, ``||``, ``|``,
newlines, ``#`` comments, redirections (``>``, ``>>``, ``<``, ``2>``, ``2>>``, ``2>&1``, ``>&2``),
and expansion of ``$?``, ``$$``, ``$NAME`` and ``${NAME}``. Command substitution is *not*
performed: ``$(...)`` and backticks stay literal text, so hostile strings cannot run anything.

The programs it runs are given to it: builtins (``echo``, ``cat``, ``ls``, ``grep``, ...) live in
:mod:`distrl_tasks.sim.shell_builtins`, the Android tools (``input``, ``screencap``, ``dumpsys``,
...) in :mod:`distrl_tasks.sim.shell_android`, ``simctl`` in ``shell_simctl``; they import this
module, never the other way round. :meth:`DeviceShell.run` returns a :class:`ShellResult` that
unpacks as ``(stdout, stderr, exit_code)``; ``events`` lists the latency categories the
line touched (read by :mod:`distrl_tasks.sim.realism`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distrl_tasks.sim.vfs import FsError, VirtualFS

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

SH = "/system/bin/sh"
CmdResult = tuple[bytes, bytes, int]
Command = Callable[["DeviceShell", list[str], bytes], CmdResult]


# what still answers on a device whose system has crashed (simulated), so it can be reset
CRASH_SAFE = frozenset({"echo", "true", "false", ":", "exit", "sleep", "simctl"})


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class ShellExit(Exception):
    """Raised by ``exit``: stops the rest of the command line with ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ShellSyntaxError(ValueError):
    """The command line cannot be parsed (unterminated quote, dangling operator, ...)."""


@dataclass
class ShellResult:
    """Outcome of one command line. ``merged`` interleaves stdout and stderr in write order."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    merged: bytes
    exited: bool = False  # the line ran `exit` (ends an interactive session)

    def __iter__(self) -> Iterator[bytes | int]:
        yield from (self.stdout, self.stderr, self.exit_code)


# ----- lexing and parsing --------------------------------------------------------------------
@dataclass(frozen=True)
class Var:
    """A ``$NAME`` reference, expanded when the command runs (so ``$?`` sees the last status)."""

    name: str


@dataclass
class Word:
    parts: list[str | Var] = field(default_factory=list)
    quoted: bool = False  # any quoting: an empty expansion still yields an (empty) argument

    def expand(self, lookup: Callable[[str], str]) -> str:
        return "".join(p if isinstance(p, str) else lookup(p.name) for p in self.parts)


@dataclass(frozen=True)
class Op:
    op: str


@dataclass
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word | None]] = field(default_factory=list)


_OPS = (";;", "&&", "||", ">>", ";", "&", "|", ">", "<")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokenize(line: str) -> list[Word | Op]:
    """Split a command line into words and operators (quotes removed, variables deferred)."""
    tokens: list[Word | Op] = []
    word: Word | None = None
    i, n = 0, len(line)

    def lit(w: Word, s: str) -> None:
        if w.parts and isinstance(w.parts[-1], str):
            w.parts[-1] += s
        else:
            w.parts.append(s)

    def dollar(w: Word, i: int) -> int:
        """Handle ``$`` at line[i]; returns the index after the expansion."""
        nxt = line[i + 1] if i + 1 < n else ""
        if nxt in ("?", "$", "#", "!") and nxt:
            w.parts.append(Var(nxt))
            return i + 2
        if nxt == "{":
            end = line.find("}", i + 2)
            if end < 0:
                raise ShellSyntaxError("${: bad substitution")
            w.parts.append(Var(line[i + 2 : end]))
            return end + 1
        m = _NAME.match(line, i + 1)
        if m:
            w.parts.append(Var(m.group()))
            return m.end()
        lit(w, "$")  # '$(' and a lone '$' stay literal: no command substitution
        return i + 1

    while i < n:
        c = line[i]
        if c in " \t":
            if word is not None:
                tokens.append(word)
                word = None
            i += 1
        elif c == "\n":
            if word is not None:
                tokens.append(word)
                word = None
            tokens.append(Op("\n"))
            i += 1
        elif c == "#" and word is None:
            end = line.find("\n", i)
            i = n if end < 0 else end
        elif c == "\\":
            word = word or Word()
            if i + 1 < n and line[i + 1] == "\n":
                i += 2
                continue
            word.quoted = True
            lit(word, line[i + 1 : i + 2])
            i += 2
        elif c == "'":
            word = word or Word()
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("no closing quote")
            word.quoted = True
            lit(word, line[i + 1 : end])
            i = end + 1
        elif c == '"':
            word = word or Word()
            word.quoted = True
            lit(word, "")
            i += 1
            while True:
                if i >= n:
                    raise ShellSyntaxError("no closing quote")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and line[i + 1] in '$`"\\\n':
                    if line[i + 1] != "\n":
                        lit(word, line[i + 1])
                    i += 2
                elif c == "$":
                    i = dollar(word, i)
                else:
                    lit(word, c)
                    i += 1
        elif c == "$":
            word = word or Word()
            i = dollar(word, i)
        elif c in ";&|<>":
            op = next(o for o in _OPS if line.startswith(o, i))
            i += len(op)
            # "2>" / "1>>": a lone digit glued to a redirection names the file descriptor
            if op in (">", ">>", "<") and word is not None and not word.quoted:
                text = "".join(p for p in word.parts if isinstance(p, str))
                if len(word.parts) == 1 and text in ("1", "2"):
                    word = None
                    op = ("" if text == "1" else "2") + op
            if word is not None:
                tokens.append(word)
                word = None
            if op.endswith(">") and line.startswith("&", i) and i + 1 < n and line[i + 1] in "12":
                op = f"{op}&{line[i + 1]}"
                i += 2
            if op == "&" and line.startswith(">", i):  # "&>" = stdout and stderr to a file
                op, i = "&>", i + 1
            tokens.append(Op(op))
        else:
            word = word or Word()
            lit(word, c)
            i += 1
    if word is not None:
        tokens.append(word)
    return tokens


def parse(line: str) -> list[tuple[str, list[SimpleCommand]]]:
    """Parse into ``[(connector, pipeline)]``; the connector is how the pipeline is joined to
    the previous one (``""`` for the first, ``;``, ``&&`` or ``||``)."""
    script: list[tuple[str, list[SimpleCommand]]] = []
    connector = ""
    pipeline: list[SimpleCommand] = []
    cmd = SimpleCommand()
    tokens = tokenize(line)
    k = 0

    def close_command(op: str) -> None:
        if not cmd.words and not cmd.redirects:
            raise ShellSyntaxError(f"syntax error: unexpected '{op}'")
        pipeline.append(cmd)

    while k < len(tokens):
        tok = tokens[k]
        if isinstance(tok, Word):
            cmd.words.append(tok)
        elif tok.op in (";", "&", "&&", "||", "\n"):
            if cmd.words or cmd.redirects:
                pipeline.append(cmd)
            elif pipeline or (tok.op in ("&&", "||") and connector not in ("&&", "||")):
                raise ShellSyntaxError(f"syntax error: unexpected '{tok.op}'")
            if not pipeline and tok.op in ("&&", "||") and not script:
                raise ShellSyntaxError(f"syntax error: unexpected '{tok.op}'")
            if pipeline:
                script.append((connector, pipeline))
                connector = ";" if tok.op in ("&", "\n") else tok.op
            elif tok.op in ("&&", "||"):
                raise ShellSyntaxError(f"syntax error: unexpected '{tok.op}'")
            pipeline, cmd = [], SimpleCommand()
        elif tok.op == "|":
            close_command("|")
            cmd = SimpleCommand()
        elif tok.op == ";;":
            raise ShellSyntaxError("syntax error: unexpected ';;'")
        else:  # a redirection
            if tok.op.endswith(("&1", "&2")):
                cmd.redirects.append((tok.op, None))
            else:
                if k + 1 >= len(tokens) or not isinstance(tokens[k + 1], Word):
                    raise ShellSyntaxError(f"syntax error: missing file name after '{tok.op}'")
                k += 1
                target = tokens[k]
                assert isinstance(target, Word)
                cmd.redirects.append((tok.op, target))
        k += 1
    if cmd.words or cmd.redirects:
        pipeline.append(cmd)
    if pipeline:
        script.append((connector, pipeline))
    elif connector in ("&&", "||"):
        raise ShellSyntaxError(f"syntax error: unexpected end of line after '{connector}'")
    return script


# ----- execution -----------------------------------------------------------------------------
class DeviceShell:
    """The shell of one simulated device.

    Args:
        phone: the device model.
        commands: the programs on the device by name (the farm passes the POSIX builtins and the
            Android tools, :data:`distrl_tasks.sim.device_farm.SHELL_COMMANDS`).
        fs: its filesystem (created empty with Android's usual directories when omitted).
        screenshot: returns the PNG a ``screencap`` shows; defaults to ``phone.screenshot_png``
            (the realism layer substitutes blank frames through this hook).
    """

    def __init__(
        self,
        phone: Phone,
        commands: Mapping[str, Command],
        fs: VirtualFS | None = None,
        screenshot: Callable[[], bytes] | None = None,
    ) -> None:
        self.phone = phone
        self.fs = fs if fs is not None else VirtualFS()
        self.screenshot = screenshot or phone.screenshot_png
        self.env: dict[str, str] = {
            "HOME": "/",
            "PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin",
            "SHELL": SH,
            "USER": "shell",
            "ANDROID_SERIAL": phone.serial,
        }
        self.settings: dict[str, str | None] = {}  # `settings put` (None: deleted)
        self.last_status = 0
        self.events: list[str] = []  # latency categories touched by the current line
        self.sleep_s = 0.0  # seconds of `sleep` the current line asked for
        self.commands: dict[str, Command] = dict(commands)

    def _lookup(self, name: str) -> str:
        if name == "?":
            return str(self.last_status)
        if name == "$":
            return "4242"
        if name in ("#", "!"):
            return "0"
        return self.env.get(name, "")

    def run(self, line: str, stdin: bytes = b"", *, session: bool = False) -> ShellResult:
        """Run one command line; never raises for bad input (errors go to stderr).

        ``session``: the line continues an interactive session, so ``$?`` is the previous
        line's status; otherwise every adb shell request starts a fresh shell process.
        """
        self.events = []
        self.sleep_s = 0.0
        if not session:
            self.last_status = 0
        chunks: list[tuple[int, bytes]] = []
        try:
            script = parse(line)
        except ShellSyntaxError as exc:
            msg = f"{SH}: {exc}\n".encode()
            self.last_status = 2
            return ShellResult(b"", msg, 2, msg)
        status, exited = self.last_status, False
        try:
            for connector, pipeline in script:
                if (connector == "&&" and status != 0) or (connector == "||" and status == 0):
                    continue
                status = self._pipeline(pipeline, stdin, chunks)
                self.last_status = status
        except ShellExit as ex:
            status, exited = ex.code, True
        self.last_status = status
        out = b"".join(d for s, d in chunks if s == 1)
        err = b"".join(d for s, d in chunks if s == 2)
        return ShellResult(out, err, status, b"".join(d for _, d in chunks), exited)

    def _pipeline(
        self, pipeline: list[SimpleCommand], stdin: bytes, chunks: list[tuple[int, bytes]]
    ) -> int:
        data, code = stdin, 0
        for i, cmd in enumerate(pipeline):
            out, err, code = self._simple(cmd, data)
            if err:
                chunks.append((2, err))
            if i == len(pipeline) - 1:
                if out:
                    chunks.append((1, out))
            else:
                data = out
        return code

    def _simple(self, cmd: SimpleCommand, stdin: bytes) -> CmdResult:
        argv = [
            w.expand(self._lookup) for w in cmd.words if w.quoted or w.expand(self._lookup) != ""
        ]
        redirects = [(op, t.expand(self._lookup) if t else "") for op, t in cmd.redirects]
        try:
            for op, target in redirects:
                if op == "<":
                    stdin = self.fs.read(target)
        except FsError as exc:
            return b"", f"{SH}: {exc}\n".encode(), 1
        out, err, code = self.call(argv, stdin) if argv else (b"", b"", 0)
        try:
            for op, target in redirects:
                if op in (">", ">>", "&>"):
                    payload = out + err if op == "&>" else out
                    self.fs.write(target, payload, append=op == ">>")
                    out = b""
                    err = b"" if op == "&>" else err
                elif op in ("2>", "2>>"):
                    self.fs.write(target, err, append=op == "2>>")
                    err = b""
                elif op == "2>&1":
                    out, err = out + err, b""
                elif op in (">&2", "1>&2"):
                    out, err = b"", err + out
        except FsError as exc:
            return b"", f"{SH}: {exc}\n".encode(), 1
        return out, err, code

    def call(self, argv: list[str], stdin: bytes = b"") -> CmdResult:
        """Run one command given as an argument vector (no shell syntax involved).

        Leading ``NAME=value`` words are the command's environment, as in ``sh``: no simulated
        command reads environment variables, so they are accepted and dropped (alone, they set
        a shell variable: nothing to do either).
        """
        while argv and _ASSIGNMENT.match(argv[0]):
            argv = argv[1:]
        if not argv:
            return b"", b"", 0
        name = argv[0]
        base = posixpath.basename(name) if name.startswith(("/system/bin/", "/bin/")) else name
        func = self.commands.get(base)
        if func is None:
            return b"", f"{SH}: {name}: inaccessible or not found\n".encode(), 127
        if self.phone.crashed and base not in CRASH_SAFE:
            msg = f"{base}: device crashed (simulated); run 'simctl reset'\n"
            return b"", msg.encode(), 1
        return func(self, argv[1:], stdin)
