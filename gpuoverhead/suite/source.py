"""Load YAML safely and remember the line of every key, so that errors can point at it.

Only plain YAML is accepted: SafeLoader's constructor refuses `!!python/...` tags (read by
libyaml where PyYAML has it, `LOADER`), and aliases are refused here because an alias bomb
("billion laughs") expands exponentially once the data is walked. Files are read capped and
without blocking (`read_capped`, shared with the shaders): a device, a huge sparse file or a
FIFO with no writer must end in one line, not in a MemoryError or a hang.
"""

from __future__ import annotations

import hashlib
import os
import select
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from gpuoverhead.errors import UserError, shortened

Loc = tuple[str | int, ...]
#: Largest suite or shader file read: a suite is a page of YAML and a kernel a page of WGSL,
#: not a device or a data file.
MAX_BYTES = 1 << 20
#: Seconds a pipe given as the suite may stay silent (no writer, or nothing written) before
#: it is given up: `<(slow command)` gets that long, a FIFO nobody writes to no longer.
PIPE_WAIT_S = 10.0
#: What each pipe read so far held, by (device, inode): a pipe can be read only once, and a
#: suite is loaded more than once (checked, then expanded).
_PIPES: dict[tuple[int, int], bytes] = {}
_KINDS = {stat.S_ISDIR: "a folder", stat.S_ISCHR: "a character device",
          stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket", stat.S_ISFIFO: "a FIFO"}
#: Deepest nesting of YAML mappings and lists accepted (a suite needs four levels).
MAX_DEPTH = 32
#: Longest integer accepted, in characters: every setting's largest value has fewer, and
#: Python refuses to read one of more than 4,300 digits (its bounds would print it too).
MAX_INT_CHARS = 40
INT_TAG = "tag:yaml.org,2002:int"


if yaml.__with_libyaml__:
    from yaml.cyaml import CParser

    class _LibyamlLoader(CParser, Composer, SafeConstructor, Resolver):
        """SafeLoader's reading with libyaml's scanner and parser (a 900 KB suite name: 8 ms,
        against 0.46 CPU-s in Python) and Python's composer: PyYAML's own C composer
        recurses in C, and a suite nested 100,000 deep killed the process (a segmentation
        fault), where Python's stops at its recursion limit."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        check_node = Composer.check_node
        get_node = Composer.get_node
        get_single_node = Composer.get_single_node

    #: What `load_yaml` parses with.
    LOADER: type = _LibyamlLoader
else:  # PyYAML built without libyaml
    LOADER = yaml.SafeLoader


@dataclass(frozen=True)
class YamlDocument:
    """A parsed YAML file with the source line (1-based) of each key or list item."""

    path: Path
    data: Any
    lines: dict[Loc, int]
    #: SHA-256 of the bytes parsed (a pipe cannot be read again to hash it).
    sha256: str = ""

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known key on `loc`, a key path like ("benchmarks", 0, "kernel")."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


def load_yaml(path: Path) -> YamlDocument:
    """Parse `path` (a regular file, or a pipe given on the command line, read once); every
    problem ends in a UserError naming the file and line."""
    try:
        raw = read_capped(path, MAX_BYTES, pipe=True)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise UserError(f"{path}: larger than {MAX_BYTES // 1024} KiB: not a suite")
    loader = None
    try:
        loader = LOADER(text)  # SafeLoader checks every character here, libyaml as it reads
        node = loader.get_single_node()
        if node is None:
            raise UserError(f"{path}: the file is empty")
        lines: dict[Loc, int] = {}
        _index(path, node, (), lines, set())
        data = loader.construct_document(node)
    except yaml.reader.ReaderError as exc:  # the first character refused: its first place
        line = text.count("\n", 0, text.find(chr(exc.character))) + 1
        raise UserError(f"{path}:{line}: not valid YAML: character U+{exc.character:04X} (not "
                        "allowed in YAML); a suite is plain text") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{path}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise UserError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a suite") from None
    finally:
        if loader is not None:
            loader.dispose()
    return YamlDocument(path, data, lines, hashlib.sha256(raw).hexdigest())


def key_text(loc: Loc) -> str:
    """A key path as a suite's author writes it: `benchmarks[0].elements` (a key too long to
    echo shortened)."""
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{shortened(str(p))}"
                  for p in loc).lstrip(".")
    return key or "(top level)"


def _index(path: Path, node: yaml.Node, loc: Loc, lines: dict[Loc, int], seen: set[int]) -> None:
    if len(loc) > MAX_DEPTH:
        raise UserError(f"{path}:{node.start_mark.line + 1}: nested deeper than {MAX_DEPTH} "
                        "levels: not a suite")
    if id(node) in seen:
        # The node is the anchor's; the alias is somewhere under the nearest indexed key.
        line = next(lines[loc[:end]] for end in range(len(loc), -1, -1) if loc[:end] in lines)
        raise UserError(f"{path}:{line}: YAML aliases are not allowed")
    seen.add(id(node))
    lines.setdefault(loc, node.start_mark.line + 1)
    _check_int(path, node, loc)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _check_int(path, key, loc)
            child = loc + (str(key.value),)
            if child in lines and child != loc:
                raise UserError(f"{path}:{key.start_mark.line + 1}: key {key.value!r} appears "
                                f"twice (first on line {lines[child]}); YAML keeps only the last")
            lines[child] = key.start_mark.line + 1
            _index(path, value, child, lines, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(path, item, loc + (i,), lines, seen)


def _check_int(path: Path, node: yaml.Node, loc: Loc) -> None:
    """A UserError for an integer longer than MAX_INT_CHARS, before Python reads it."""
    if node.tag == INT_TAG and len(node.value) > MAX_INT_CHARS:
        raise UserError(f"{path}:{node.start_mark.line + 1}: {key_text(loc)}: an integer of "
                        f"{len(node.value):,} characters; no setting takes one longer than "
                        f"{MAX_INT_CHARS}")


def read_capped(path: Path, limit: int, pipe: bool = False) -> bytes:
    """At most `limit + 1` bytes of `path` (more means too large: the caller says so).

    Only a regular file, or with `pipe` also a FIFO or pipe, whose bytes are kept for the
    next call; anything else raises OSError, checked before the open (opening a device can
    act on it) and again on what was opened. The open never blocks (O_NONBLOCK: a FIFO with
    no writer holds a plain open forever), nor does a pipe's read (`PIPE_WAIT_S`)."""
    check_kind(os.stat(path).st_mode, pipe)
    flags = os.O_RDONLY | sum(getattr(os, f, 0) for f in ("O_NONBLOCK", "O_NOCTTY", "O_BINARY"))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        check_kind(info.st_mode, pipe)
        if stat.S_ISREG(info.st_mode):
            with open(fd, "rb", closefd=False) as file:
                return file.read(limit + 1)
        key = (info.st_dev, info.st_ino)
        if key not in _PIPES:
            _PIPES[key] = _drain(fd, limit)
        return _PIPES[key]
    finally:
        os.close(fd)


def check_kind(mode: int, pipe: bool = False) -> None:
    """An OSError saying what `mode` is, unless a regular file (or with `pipe`, a FIFO)."""
    if not (stat.S_ISREG(mode) or (pipe and stat.S_ISFIFO(mode))):
        kind = next((k for test, k in _KINDS.items() if test(mode)), "something else")
        raise OSError(0, f"not a regular file but {kind}")


def _drain(fd: int, limit: int) -> bytes:
    """A pipe's bytes until its writer closes it, or `limit + 1` of them; each wait for the
    writer bounded by PIPE_WAIT_S."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        if not select.select([fd], [], [], PIPE_WAIT_S)[0]:
            raise OSError(0, f"nothing came through the pipe in {PIPE_WAIT_S:g} s")
        try:
            chunk = os.read(fd, limit + 1 - size)
        except BlockingIOError:  # woken with nothing to read yet
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
