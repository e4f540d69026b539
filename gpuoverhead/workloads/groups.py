"""What a fusion benchmark asks of its workload (`Request`), and the groups most workloads
give for it: per element count, every K with its unfused and fused form (and their
GPU-timestamp twins), sampled interleaved. A workload whose groups differ (matmul's sizes,
the decode step's encodings) builds its own from the same request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from gpuoverhead.cases import Case, Group, Kernel, Sampling


@dataclass(frozen=True)
class Request:
    """A fusion benchmark as its workload sees it: the shipped kernel, the merged settings,
    the sampling, the benchmark's base case and the syncs each form is timed with."""

    pattern: str
    kernel: Kernel
    cfg: dict[str, Any]
    sampling: Sampling
    base: Case
    syncs: tuple[str, ...]

    @property
    def ks(self) -> list[int]:
        return list(dict.fromkeys(self.cfg["k_sweep"]))

    def group(self, elements: int, workgroup_size: int, cases: Iterable[Case]) -> Group:
        return Group(self.base.benchmark, self.kernel, elements, workgroup_size, self.sampling,
                     tuple(cases), self.cfg["torch_compile_max_n"], self.pattern,
                     self.cfg["precision"], self.cfg["batch"], self.cfg["compile_limit_s"])


def per_elements(req: Request, ks: Iterable[int], size: Callable[[int], int]) -> list[Group]:
    """A group per element count (workgroup size `size(elements)`): each K unfused and
    fused, each with every sync; the fused form over the suite's `fused_n_sweep`, where it
    gives one."""
    ks = list(ks)
    sweeps = {"unfused": req.base.n_values, "fused": fused_sweep(req)}
    return [req.group(elements, size(elements),
                      (replace(req.base, elements=elements, workgroup_size=size(elements), k=k,
                               variant=v, sync=s, n_values=sweeps[v])
                       for k in ks for v in ("unfused", "fused") for s in req.syncs))
            for elements in req.cfg["elements"]]


def fused_sweep(req: Request) -> tuple[int, ...]:
    """The fused forms' N sweep: the suite's `fused_n_sweep`, else its `n_sweep`."""
    given = req.cfg.get("fused_n_sweep")
    return tuple(sorted(set(given))) if given else req.base.n_values
