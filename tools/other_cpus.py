"""Run every lesson under nbval with different arithmetic underneath.

    python tools/other_cpus.py            # every variant below
    python tools/other_cpus.py --list     # only say what each variant sets

A saved output must not depend on the last bits of floating point: learners'
laptops, CI machines and ours differ in CPU (x86 with or without AVX-512, ARM),
and OpenBLAS and NumPy pick different kernels on each. This script imitates
those machines on the one it runs on, by re-running the notebooks with

- another OpenBLAS kernel (``OPENBLAS_CORETYPE``): Haswell where the CPU has
  AVX-512, Sandybridge (no FMA) where it has AVX2 only;
- single-threaded BLAS (``OPENBLAS_NUM_THREADS=1``), which sums in another order;
- NumPy's widest SIMD paths switched off (``NPY_DISABLE_CPU_FEATURES``): the
  AVX-512 ones where the CPU has them, otherwise the AVX2/FMA ones.

Each variant runs the same strict nbval as ``make nbval``. The other supported
Pythons are covered by ``make nbval PYTHON=python3.10`` and ``python3.13`` in
their own environments (the Makefile's ``test-cpus`` target).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBVAL = [
    "-m",
    "pytest",
    "--nbval",
    "--nbval-current-env",
    "--nbval-sanitize-with",
    "tests/nbval_sanitize.cfg",
    # one notebook per core at a time, each notebook's cells on one worker (pytest-xdist)
    "-n",
    "auto",
    "--dist",
    "loadscope",
    "-q",
    "notebooks",
]


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def other_openblas_core(flags: set[str]) -> str:
    """An OpenBLAS kernel that this CPU can run but would not pick for itself."""
    if platform.machine() in ("aarch64", "arm64"):
        return "ARMV8"
    if "avx512f" in flags:
        return "Haswell"
    if "avx2" in flags:
        return "Sandybridge"
    return "Prescott"


def numpy_paths_to_disable(python: str) -> list[str]:
    """The widest SIMD targets NumPy would dispatch to on this CPU (names differ by version)."""
    code = (
        "from numpy._core._multiarray_umath import __cpu_dispatch__ as d, __cpu_features__ as f\n"
        "wide = [t for t in d if f.get(t) and (t.startswith('AVX512') or t == 'X86_V4')]\n"
        "if not wide:\n"
        "    wide = [t for t in d if f.get(t) and t in ('X86_V3', 'AVX2', 'FMA3', 'AVX512F')]\n"
        "if not wide:\n"
        "    wide = [t for t in d if f.get(t)]\n"
        "print(' '.join(wide))\n"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    except subprocess.CalledProcessError:  # NumPy 1.x keeps these under numpy.core
        out = subprocess.run(
            [python, "-c", code.replace("numpy._core", "numpy.core")],
            capture_output=True,
            text=True,
            check=True,
        )
    return out.stdout.split()


def variants(python: str) -> list[tuple[str, dict[str, str]]]:
    flags = cpu_flags()
    disable = numpy_paths_to_disable(python)
    found = [
        (
            f"OpenBLAS kernel {other_openblas_core(flags)}",
            {"OPENBLAS_CORETYPE": other_openblas_core(flags)},
        ),
        ("single-threaded BLAS", {"OPENBLAS_NUM_THREADS": "1"}),
    ]
    if disable:
        found.append(
            (f"NumPy without {' '.join(disable)}", {"NPY_DISABLE_CPU_FEATURES": " ".join(disable)})
        )
    else:
        print("NumPy dispatches to no SIMD target above its baseline here; that variant is moot.")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the environment's Python")
    parser.add_argument("--list", action="store_true", help="print the variants and stop")
    args = parser.parse_args()
    failed = []
    for name, env in variants(args.python):
        settings = " ".join(f"{k}={v!r}" for k, v in env.items())
        print(f"\n=== {name}: {settings}", flush=True)
        if args.list:
            continue
        start = time.perf_counter()
        rc = subprocess.run([args.python, *NBVAL], cwd=ROOT, env={**os.environ, **env}).returncode
        verdict = "passed" if rc == 0 else "FAILED"
        print(f"=== {name}: {verdict} in {time.perf_counter() - start:.0f} s")
        if rc != 0:
            failed.append(name)
    if failed:
        print("\nThe lessons' saved outputs differ under: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
