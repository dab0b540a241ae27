"""Speed and memory of the attention math (float32, d = 64).

Goals (issue: foundation):
- ``attention`` at n = 2048: at most 2.5 x the time of its two matrix products;
  with torch installed, at most 1.25 x ``F.scaled_dot_product_attention``.
- ``tiled_attention`` at n = 4096: at most 2 x ``attention``'s time, and for
  8192 queries x 32768 keys a peak of at most 100 MB allocated (tracemalloc).
- ``import attnlab``: at most 250 ms.

Every ratio compares two timings taken in the same run, each the median of
several repeats, so a busy machine slows both sides alike.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import attnlab

D = 64
SIZES = (256, 1024, 2048, 4096)


def median_time(fn, repeats: int = 7) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def inputs(n_q: int, n_k: int, rng) -> tuple[np.ndarray, ...]:
    return tuple(rng.standard_normal((n, D), dtype=np.float32) for n in (n_q, n_k, n_k))


def two_matmuls(Q, K, V):
    """The floor any implementation pays: Q Kᵀ and (n_q x n_k) @ V."""
    S = Q @ K.T
    return S @ V


# Timed in a child process: torch's OpenMP threads and NumPy's OpenBLAS threads
# spin against each other on two cores when both live in one process.
_TORCH_TIMES = """
import json, sys, time
import numpy as np
import torch
F = torch.nn.functional
out = {}
for n in json.loads(sys.argv[1]):
    rng = np.random.default_rng(0)
    Q, K, V = (torch.from_numpy(rng.standard_normal((n, 64), dtype=np.float32)) for _ in "QKV")
    times = []
    with torch.no_grad():
        F.scaled_dot_product_attention(Q, K, V)
        for _ in range(7 if n <= 2048 else 3):
            start = time.perf_counter()
            F.scaled_dot_product_attention(Q, K, V)
            times.append(time.perf_counter() - start)
    out[n] = float(np.median(times))
print(json.dumps(out))
"""


def torch_times(sizes) -> dict[int, float] | None:
    """Median seconds of torch's F.scaled_dot_product_attention on the CPU, or None."""
    if importlib.util.find_spec("torch") is None:
        return None
    done = subprocess.run(
        [sys.executable, "-c", _TORCH_TIMES, json.dumps(list(sizes))],
        capture_output=True,
        text=True,
        check=True,
    )
    return {int(n): t for n, t in json.loads(done.stdout).items()}


def attention_rows(rng) -> list[dict]:
    torch = torch_times(SIZES)
    rows = []
    for n in SIZES:
        Q, K, V = inputs(n, n, rng)
        repeats = 7 if n <= 2048 else 3
        t = median_time(lambda: attnlab.attention(Q, K, V), repeats)  # noqa: B023
        floor = median_time(lambda: two_matmuls(Q, K, V), repeats)  # noqa: B023
        row = {
            "n": n,
            "attention_ms": t * 1e3,
            "matmuls_ms": floor * 1e3,
            "ratio_to_matmuls": t / floor,
        }
        if torch is not None:
            row["ratio_to_torch"] = t / torch[n]
        rows.append(row)
    return rows


def tiled_row(rng) -> dict:
    Q, K, V = inputs(4096, 4096, rng)
    t_tiled = median_time(lambda: attnlab.tiled_attention(Q, K, V), 3)
    t_full = median_time(lambda: attnlab.attention(Q, K, V), 3)
    Q, K, V = inputs(8192, 32768, rng)
    tracemalloc.start()
    attnlab.tiled_attention(Q, K, V)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "ratio_to_attention_n4096": t_tiled / t_full,
        "tiled_ms_n4096": t_tiled * 1e3,
        "peak_mb_8192x32768": peak / 1e6,
        "score_matrix_mb_8192x32768": 8192 * 32768 * 4 / 1e6,
    }


def import_ms() -> float:
    code = "import time; t = time.perf_counter(); import attnlab; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    return float(np.median(runs)) * 1e3


def run() -> dict:
    rng = np.random.default_rng(0)
    return {"attention": attention_rows(rng), "tiled": tiled_row(rng), "import_ms": import_ms()}
