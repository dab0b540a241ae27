"""Speed and memory of the attention math (float32, d = 64).

Goals:
- the fast path ``attnlab.fast.attention`` at n = 2048: at most 2.0 x the time
  of its two matrix products and, with torch installed, at most 1.25 x
  ``F.scaled_dot_product_attention`` with as many threads;
- ``tiled_attention`` at n = 4096: at most 2 x the fast path's time, and for
  8192 queries x 32768 keys a peak of at most 100 MB allocated (tracemalloc);
- ``import attnlab``: at most 250 ms.

The readable ``attnlab.attention`` is timed next to the fast path, so the price
of reading the formula line by line is visible; it has no speed goal.

Every ratio compares timings taken in the same run, interleaved repeat by
repeat, each side's best repeat kept: another program on the machine can only
slow a run down, so the best repeat is the closest to the code's own speed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import attnlab
import attnlab.fast

D = 64
SIZES = (256, 1024, 2048, 4096)
GOAL_N = 2048
GOAL_TO_MATMULS = 2.0
GOAL_TO_TORCH = 1.25
# Rest before each function's turn, and calls per turn (see best_times).
SETTLE_SECONDS = 0.25
BURST = 3
# NumPy's dispatch targets that use AVX-512 (NumPy 2.4 names them X86_V4 and
# AVX512_*; older releases AVX512F, AVX512_SKX, ...).
AVX512_PREFIXES = ("AVX512", "X86_V4")


def best_times(fns: dict, repeats: int) -> dict:
    """Best seconds of each function: in each of ``repeats`` rounds, the functions take
    turns, each called ``BURST`` times in a row.

    Back-to-back calls are what a training loop makes, with every worker thread awake.
    Between turns the machine rests: after a call, OpenBLAS's and torch's OpenMP
    worker threads keep spinning for a while before they sleep, and on a machine with
    few cores they would take the cores from whatever is timed next.
    A function that returns a float has timed itself (torch, in its own process).
    """
    for fn in fns.values():
        fn()  # warm up
    times: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(SETTLE_SECONDS)
            for _ in range(BURST):
                start = time.perf_counter()
                own = fn()
                elapsed = time.perf_counter() - start
                times[name].append(own if isinstance(own, float) else elapsed)
    return {name: min(t) for name, t in times.items()}


def inputs(n_q: int, n_k: int, rng) -> tuple[np.ndarray, ...]:
    return tuple(rng.standard_normal((n, D), dtype=np.float32) for n in (n_q, n_k, n_k))


def two_matmuls(Q, K, V):
    """The floor any implementation pays: Q Kᵀ and (n_q x n_k) @ V."""
    S = Q @ K.T
    return S @ V


def repeats_for(n: int) -> int:
    return 5 if n <= 2048 else 2


def threads() -> int:
    """The cores this process may use: NumPy's BLAS and attnlab.fast use them all."""
    return attnlab.fast._cores()


# torch runs in a child process: torch's OpenMP threads and NumPy's OpenBLAS
# threads spin against each other when both live in one process. The child
# times one call per request, so torch's repeats interleave with NumPy's and a
# busy spell on the machine slows both sides alike.
_TORCH_CHILD = """
import json, sys, time
import numpy as np
import torch
F = torch.nn.functional
torch.set_num_threads(int(sys.argv[1]))
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
qkv = {}
for line in sys.stdin:
    n = int(line)
    if n not in qkv:
        rng = np.random.default_rng(0)
        # Shaped (batch, heads, n, d): only then does torch use its fused CPU kernel.
        shape = (1, 1, n, 64)
        qkv = {n: [torch.from_numpy(rng.standard_normal(shape, dtype=np.float32)) for _ in "QKV"]}
    with torch.no_grad():
        start = time.perf_counter()
        F.scaled_dot_product_attention(*qkv[n])
        print(time.perf_counter() - start, flush=True)
"""


class TorchTimer:
    """torch's F.scaled_dot_product_attention on the CPU, timed in a child process."""

    def __init__(self, threads: int):
        self.child = subprocess.Popen(
            [sys.executable, "-c", _TORCH_CHILD, str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.about = json.loads(self._read())

    def _read(self) -> str:
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError("the torch timing process stopped")
        return line

    def __call__(self, n: int) -> float:
        """Seconds of one call at this n (Q, K, V of shape (n, 64), float32)."""
        self.child.stdin.write(f"{n}\n")
        self.child.stdin.flush()
        return float(self._read())

    def close(self) -> None:
        self.child.stdin.close()
        self.child.wait()


def torch_timer() -> TorchTimer | None:
    return TorchTimer(threads()) if importlib.util.find_spec("torch") is not None else None


def attention_rows(rng, sizes=SIZES) -> tuple[list[dict], dict | None]:
    """One row per n: the fast path, its two matrix products, the readable version, torch."""
    torch = torch_timer()
    rows = []
    try:
        for n in sizes:
            Q, K, V = inputs(n, n, rng)
            fns = {
                "fast": lambda: attnlab.fast.attention(Q, K, V),  # noqa: B023
                "matmuls": lambda: two_matmuls(Q, K, V),  # noqa: B023
                "readable": lambda: attnlab.attention(Q, K, V),  # noqa: B023
            }
            if torch is not None:
                fns["torch"] = lambda: torch(n)  # noqa: B023
            best = best_times(fns, repeats_for(n))
            row = {
                "n": n,
                "attention_ms": best["fast"] * 1e3,
                "matmuls_ms": best["matmuls"] * 1e3,
                "readable_ms": best["readable"] * 1e3,
                "ratio_to_matmuls": best["fast"] / best["matmuls"],
                "readable_to_fast": best["readable"] / best["fast"],
            }
            if torch is not None:
                row["torch_ms"] = best["torch"] * 1e3
                row["ratio_to_torch"] = best["fast"] / best["torch"]
            rows.append(row)
    finally:
        if torch is not None:
            torch.close()
    return rows, None if torch is None else torch.about


def avx512_features() -> list[str]:
    """NumPy's AVX-512 dispatch targets that this CPU supports (empty without AVX-512)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [
        f for f in __cpu_dispatch__ if f.startswith(AVX512_PREFIXES) and __cpu_features__.get(f)
    ]


_CHILD = """
import json, sys
import numpy as np
from numpy._core._multiarray_umath import __cpu_features__
from bench import attention
rows, _ = attention.attention_rows(np.random.default_rng(0), [attention.GOAL_N])
print(json.dumps({"row": rows[0], "features": [f for f, on in __cpu_features__.items() if on]}))
"""


def run_with_features_disabled(features: list[str]) -> dict:
    """The n = 2048 row measured in a child process in which NumPy's ``features`` are off.

    NumPy reads ``NPY_DISABLE_CPU_FEATURES`` once, when it is imported, so the
    comparison needs a fresh interpreter.
    """
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(features))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-c", _CHILD]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=root)
    result = json.loads(done.stdout)
    still_on = sorted(set(features) & set(result["features"]))
    if still_on:
        raise RuntimeError(f"NPY_DISABLE_CPU_FEATURES left {still_on} enabled")
    return {"disabled": features, **result["row"]}


def without_avx512() -> dict:
    """The n = 2048 figures with NumPy's AVX-512 paths off, or why there are none."""
    features = avx512_features()
    if not features:
        return {"disabled": [], "note": "this CPU has no AVX-512; NumPy already runs without it"}
    return run_with_features_disabled(features)


def tiled_row(rng) -> dict:
    Q, K, V = inputs(4096, 4096, rng)
    best = best_times(
        {
            "tiled": lambda: attnlab.tiled_attention(Q, K, V),
            "fast": lambda: attnlab.fast.attention(Q, K, V),
        },
        3,
    )
    Q, K, V = inputs(8192, 32768, rng)
    tracemalloc.start()
    attnlab.tiled_attention(Q, K, V)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "ratio_to_attention_n4096": best["tiled"] / best["fast"],
        "tiled_ms_n4096": best["tiled"] * 1e3,
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
    rows, about_torch = attention_rows(rng)
    return {
        "attention": rows,
        "threads": threads(),
        "torch": about_torch,
        "without_avx512": without_avx512(),
        "tiled": tiled_row(rng),
        "import_ms": import_ms(),
    }
