"""How much memory a computation allocates at its peak, measured with tracemalloc.

NumPy reports its array buffers to tracemalloc, so the peak counts every temporary
array. Lesson 07 measures attention's n × n matrices with it, lesson 10 the two
orders of linear attention, and the checker of lesson 10's ``linear_attention``
tells the quadratic order from the linear one by it.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def measured_peak(run: Callable[[], T]) -> tuple[T, int]:
    """Run ``run()``; return its value and the peak bytes it allocated.

    Memory allocated before the call is not counted. The garbage collector is run
    first and paused during the call: otherwise it may free earlier garbage (a
    notebook's closed figures, say) in the middle of the call, and the figure would
    depend on when it happened to run.
    Lessons: ``notebooks/07_cost_and_tiling.ipynb``, ``notebooks/10_in_practice.ipynb``.
    """
    was_tracing, was_collecting = tracemalloc.is_tracing(), gc.isenabled()
    gc.collect()
    gc.disable()
    if not was_tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        value = run()
        return value, tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()
        if was_collecting:
            gc.enable()
