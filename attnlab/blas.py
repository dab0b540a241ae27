"""How many threads NumPy's matrix products (BLAS) may use, and a way to pin them to one.

Lesson 07 times attention with BLAS on one thread; lessons 08 and 10 train on one
thread per process, because their products are small. NumPy alone: importing this
module does not import matplotlib, so worker processes start quickly.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

import numpy as np


def _openblas_thread_functions():
    """NumPy's bundled OpenBLAS ``(get_num_threads, set_num_threads)``, or None if not found."""
    base = os.path.dirname(os.path.dirname(np.__file__))
    folders = [os.path.join(base, "numpy.libs"), os.path.join(base, "numpy", ".dylibs")]
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if "openblas" not in name.lower():
                continue
            try:
                lib = ctypes.CDLL(os.path.join(folder, name))
            except OSError:
                continue
            for prefix, suffix in [
                ("scipy_openblas", "64_"),
                ("openblas", "64_"),
                ("openblas", ""),
            ]:
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                    return get, put
    return None


def _blas_on_one_thread() -> bool:
    """Whether threadpoolctl finds at least one BLAS library, and every one runs one thread."""
    from threadpoolctl import threadpool_info  # type: ignore[import-not-found]

    blas = [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]
    return bool(blas) and all(pool.get("num_threads") == 1 for pool in blas)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[bool]:
    """Run the block with NumPy's matrix products (BLAS) on one thread; yields whether they are.

    BLAS splits a large product over all the processor's cores. On a shared machine those
    threads compete with other programs and each other, and a small product can take longer
    on many threads than on one, which makes timings meaningless. Uses ``threadpoolctl`` if
    it is installed (version 3.8 limits OpenBLAS, MKL, BLIS and FlexiBLAS, from pip or conda),
    else NumPy's bundled OpenBLAS directly. It cannot limit Apple's Accelerate, which NumPy
    wheels for Apple silicon use: there it yields False, and only the environment variable
    ``VECLIB_MAXIMUM_THREADS=1``, set before Python starts, gives one thread. Yields True
    only if a BLAS library was found and now runs one thread: False where none can be found
    (Pyodide has no BLAS threads at all), so the caller can say which it was. The old
    setting is restored after.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-not-found]
    except ImportError:
        functions = _openblas_thread_functions()
        if functions is None:
            yield False
            return
        get, put = functions
        before = get()
        put(1)
        try:
            yield get() == 1
        finally:
            put(before)
    else:
        with threadpool_limits(limits=1, user_api="blas"):
            yield _blas_on_one_thread()
