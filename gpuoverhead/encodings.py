"""The command encodings, declared once: the suite schema, the layers, the printers and the
plots read this list instead of spelling it out.

An encoding says how N operations are recorded and submitted (docs/methodology.md):
`submit` gives each operation its own encoder, pass and submit (the reference study's
method); `pass` one encoder with a compute pass per operation; `dispatch` one pass for all.
Each layer (wrapper, raw FFI, the C loop, the browser page) implements each encoding; a new
one is added here and in those loops.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Encoding:
    name: str
    #: What it records per operation, in words.
    description: str
    #: Native calls per operation (create encoder, begin pass, set pipeline, set bind group,
    #: dispatch, end, finish, submit, and the releases): what the FFI floor is multiplied by.
    calls_per_op: int
    #: The C loop's code for it (gpu/layers/native_loop.c).
    native_code: int


ENCODINGS = (
    Encoding("submit", "each op its own encoder, pass and submit", 11, 0),
    Encoding("pass", "one encoder, a compute pass per op, one submit", 6, 1),
    Encoding("dispatch", "one compute pass for all ops, one submit", 3, 2),
)
NAMES = tuple(e.name for e in ENCODINGS)
