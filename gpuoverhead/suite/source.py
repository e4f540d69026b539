"""Load YAML safely and remember the line of every key, so that errors can point at it.

Only plain YAML is accepted: SafeLoader refuses `!!python/...` tags, and aliases are refused
here because an alias bomb ("billion laughs") expands exponentially once the data is walked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuoverhead.errors import UserError

Loc = tuple[str | int, ...]
#: Largest suite file read: a suite is a page of YAML, not a device or a data file.
MAX_BYTES = 1 << 20
#: Deepest nesting of YAML mappings and lists accepted (a suite needs four levels).
MAX_DEPTH = 32


@dataclass(frozen=True)
class YamlDocument:
    """A parsed YAML file with the source line (1-based) of each key or list item."""

    path: Path
    data: Any
    lines: dict[Loc, int]

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known key on `loc`, a key path like ("benchmarks", 0, "kernel")."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


def load_yaml(path: Path) -> YamlDocument:
    """Parse `path`; every problem ends in a UserError naming the file and line."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise UserError(f"{path}: larger than {MAX_BYTES // 1024} KiB: not a suite")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise UserError(f"{path}: the file is empty")
        lines: dict[Loc, int] = {}
        _index(path, node, (), lines, set())
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{path}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise UserError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a suite") from None
    finally:
        loader.dispose()
    return YamlDocument(path, data, lines)


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
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = loc + (str(key.value),)
            if child in lines and child != loc:
                raise UserError(f"{path}:{key.start_mark.line + 1}: key {key.value!r} appears "
                                f"twice (first on line {lines[child]}); YAML keeps only the last")
            lines[child] = key.start_mark.line + 1
            _index(path, value, child, lines, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(path, item, loc + (i,), lines, seen)
