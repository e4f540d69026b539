"""The decode step's weights are the same in every process, however its threads are
scheduled (decode_model.Weights.random draws them in threads)."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from gpuoverhead.workloads import decode_model
from gpuoverhead.workloads.decode_model import Shape, Weights

TINY = Shape("test-weights", 2, 32, 2, 1, 64, 256, head_dim=16)


class InOrder:
    """An executor whose work runs at once, in the caller's thread: the schedule where each
    thread starts before the caller's next line (as beside a busy core)."""

    def __init__(self, _workers: int) -> None:
        pass

    def __enter__(self) -> InOrder:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def map(self, fn, items):  # noqa: ANN001, ANN201
        return [fn(item) for item in items]

    def submit(self, fn, *args):  # noqa: ANN001, ANN201
        done: Future = Future()
        done.set_result(fn(*args))
        return done


def test_weights_do_not_depend_on_which_thread_draws_first(monkeypatch):
    threaded = Weights.of(TINY, 20)
    monkeypatch.setattr(decode_model, "ThreadPoolExecutor", InOrder)
    in_order = Weights.of(TINY, 20)
    assert np.array_equal(threaded.head, in_order.head)
    assert np.array_equal(threaded.final_norm, in_order.final_norm)
    for a, b in zip(threaded.layers, in_order.layers, strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in a)
