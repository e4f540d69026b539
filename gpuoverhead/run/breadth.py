"""Which jobs' first processes a time limit holds, told before anything is measured.

Under a time limit every job gets its first worker process before any job gets a second
(passes, run/budget.py). Where the limit cannot hold even the first pass, the jobs it leaves
out are chosen now, from the start-ups expected (earlier runs here, else the drivers'
hints), and said at the start. They are chosen breadth first, so that every group gets
some implementation before any gets all: job 0 of every benchmark, then job 1, ..., the
benchmarks in an order that spreads them over the suite (first, last, middle, ...). On an
H200 a crossover suite whose limit held five of ten jobs measured all of H = 16 and nothing
of H = 64, and its crossover sentences then rested on one H. A job left out runs after the
others' first processes if the time left holds it then (start-ups are often shorter than
expected), else it is reported as skipped by the time limit.
"""

from __future__ import annotations

from collections.abc import Callable

Job = tuple[int, int]


def spread(count: int) -> list[int]:
    """0..count-1 in an order that spreads them: the ends, then each gap's middle."""
    if count <= 2:
        return list(range(count))
    order, gaps = [0, count - 1], [(0, count - 1)]
    while gaps:
        low, high = gaps.pop(0)
        if high - low > 1:
            mid = (low + high) // 2
            order.append(mid)
            gaps += [(low, mid), (mid, high)]
    return order


def order(jobs_per_benchmark: list[int]) -> list[Job]:
    """Every (benchmark, job), job 0 of each benchmark (spread) first, then job 1, ..."""
    benchmarks = spread(len(jobs_per_benchmark))
    return [(b, j) for j in range(max(jobs_per_benchmark, default=0)) for b in benchmarks
            if j < jobs_per_benchmark[b]]


def left_out(jobs_per_benchmark: list[int], cost: Callable[[Job], float], room: float
         ) -> list[Job]:
    """The jobs whose first processes `room` seconds do not hold, taken breadth first (a
    job that does not fit is passed over for cheaper ones after it)."""
    left: list[Job] = []
    for job in order(jobs_per_benchmark):
        if cost(job) <= room:
            room -= cost(job)
        else:
            left.append(job)
    return left
