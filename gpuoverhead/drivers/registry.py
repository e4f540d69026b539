"""The drivers, chosen in one place: which implementation families exist, and which one a
`--implementation` name or a job belongs to.

The planner, the runner, the worker supervisor and the CLI ask this registry and never test
an implementation's name (hyperfine's scheduler picks its executor the same way, in one
`match`). Adding a family is its module (see `base.Driver`) and its name in MODULES.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module

from gpuoverhead.cases import Suite
from gpuoverhead.drivers.base import Driver, Request
from gpuoverhead.errors import UserError
from gpuoverhead.torch_forms import CPU

#: Every family's module, in the order their jobs run within a benchmark (the registration).
MODULES = ("webgpu", "chromium", "pytorch", "host")
#: The implementation the others are divided by for the CPU/GPU crossover (`cpu_ratio`):
#: torch on the CPU, one of the CPU-reference driver's (host.py).
CPU_REFERENCE = CPU
#: `--implementation all`: every family, each with what it finds installed.
ALL = "all"


def in_order() -> Iterator[Driver]:
    """The drivers in the registration order, each module imported as it is reached."""
    return (import_module(f"{__package__}.{m}") for m in MODULES)  # type: ignore[misc]


def drivers() -> tuple[Driver, ...]:
    return tuple(in_order())


def get(family: str) -> Driver:
    """The driver of `family`, importing the modules before it in the order and none after:
    a wgpu-native worker imports no browser, PyTorch or CPU-reference driver (0.1 CPU-s of
    each worker's start)."""
    return next(d for d in in_order() if family == d.FAMILY)


def names() -> list[str]:
    """Every name `--implementation` takes, families first."""
    found = drivers()
    return [*(d.FAMILY for d in found), *(n for d in found for n in d.IMPLEMENTATIONS
                                          if n != d.FAMILY)]


def parse(option: str) -> dict[str, tuple[str, ...] | None] | None:
    """`--implementation`: `all` (None), or a comma-separated list of names; per family
    named, the implementation names asked of it (None: all of the family's)."""
    if option.strip() == ALL:
        return None
    asked: dict[str, tuple[str, ...] | None] = {}
    for name in (n.strip() for n in option.split(",")):
        family = next((d for d in drivers() if name == d.FAMILY or name in d.IMPLEMENTATIONS),
                      None)
        if family is None:
            raise UserError(f"unknown implementation {name!r}; choose one of "
                            f"{', '.join(names())} or {ALL} (several: joined by commas)")
        whole = name == family.FAMILY or asked.get(family.FAMILY, ()) is None
        mine = asked.get(family.FAMILY) or ()
        asked[family.FAMILY] = None if whole else (*mine, name)
    return asked


def request(asked: dict[str, tuple[str, ...] | None] | None, driver: Driver,
            base: Request) -> Request | None:
    """The request to `driver` for a run that asked `asked` (None where it was not asked)."""
    if asked is None:
        return base
    if driver.FAMILY not in asked:
        return None
    names_asked = asked[driver.FAMILY]
    return Request(base.suite, base.backend, base.adapter, base.browser,
                   names_asked if names_asked is not None else driver.IMPLEMENTATIONS)


def compile_kernels(suite: Suite) -> str:
    """Compile each kernel the suite names where a driver can (`validate`), or say that
    none was."""
    said = (d.compile_kernels(suite) for d in drivers())
    return next((s for s in said if s is not None), "shaders not compiled: no driver can")
