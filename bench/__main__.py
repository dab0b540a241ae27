"""``make bench``: every speed and memory goal of the course, measured in one run.

Prints a table and writes bench/results/latest.json (git-ignored) with the
figures and a description of the machine they came from.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from . import attention, notebooks, site, widgets

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"


def machine() -> dict:
    try:
        import psutil

        memory_gb = psutil.virtual_memory().total / 2**30
    except ImportError:
        memory_gb = None
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        **simd(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def simd() -> dict:
    """NumPy's SIMD level on this CPU, as ``np.show_runtime()`` reports it, and its BLAS."""
    from numpy._core._multiarray_umath import (
        __cpu_baseline__,
        __cpu_dispatch__,
        __cpu_features__,
    )

    found = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return {
        "simd": (found or list(__cpu_baseline__) or ["none"])[-1],
        "simd_baseline": list(__cpu_baseline__),
        "simd_found": found,
        "simd_not_found": [f for f in __cpu_dispatch__ if f not in found],
        "avx512": any(f.startswith(("AVX512", "X86_V4")) for f in found),
        "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
    }


def describe(m: dict) -> str:
    """One line naming the machine: CPU, cores, NumPy's SIMD level, BLAS, Python and NumPy."""
    avx512 = "with AVX-512" if m.get("avx512") else "no AVX-512"
    return (
        f"{m['cpu']}, {m['cores']} cores, NumPy SIMD {m.get('simd', '?')} ({avx512}), "
        f"{m.get('blas', '?')}, Python {m['python']}, NumPy {m['numpy']}"
    )


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(results: dict) -> None:
    m = results["machine"]
    print(f"machine: {describe(m)}")
    a = results["attention"]
    print(f"\nattnlab.fast.attention, float32, d = 64, {a.get('threads', '?')} threads")
    print(
        f"{'n':>6} {'fast ms':>9} {'2 matmuls ms':>13} {'ratio':>6} {'torch ms':>9} "
        f"{'vs torch':>9} {'readable ms':>12}"
    )
    for r in a["attention"]:
        torch_ms = f"{r['torch_ms']:9.1f}" if "torch_ms" in r else f"{'-':>9}"
        torch = f"{r['ratio_to_torch']:9.2f}" if "ratio_to_torch" in r else f"{'-':>9}"
        print(
            f"{r['n']:6d} {r['attention_ms']:9.1f} {r['matmuls_ms']:13.1f} "
            f"{r['ratio_to_matmuls']:6.2f} {torch_ms} {torch} {r.get('readable_ms', 0):12.1f}"
        )
    goal = next(r for r in a["attention"] if r["n"] == attention.GOAL_N)
    print(
        f"goal n={attention.GOAL_N} ≤ {attention.GOAL_TO_MATMULS}x matmuls: "
        f"{verdict(goal['ratio_to_matmuls'] <= attention.GOAL_TO_MATMULS)}"
        + (
            f"; ≤ {attention.GOAL_TO_TORCH}x torch {a['torch']['torch']}: "
            f"{verdict(goal['ratio_to_torch'] <= attention.GOAL_TO_TORCH)}"
            if "ratio_to_torch" in goal
            else "; torch not installed"
        )
    )
    print(f"  on {m['cpu']}")
    off = a.get("without_avx512", {})
    if off.get("disabled"):
        print(
            f"  with NumPy's AVX-512 off ({' '.join(off['disabled'])}): "
            f"{off['attention_ms']:.1f} ms, {off['ratio_to_matmuls']:.2f}x matmuls"
            + (f", {off['ratio_to_torch']:.2f}x torch" if "ratio_to_torch" in off else "")
        )
    elif off:
        print(f"  without AVX-512: {off['note']}")
    t = results["attention"]["tiled"]
    print(
        f"\ntiled_attention: {t['ratio_to_attention_n4096']:.2f}x attention at n=4096 "
        f"(goal ≤ 2: {verdict(t['ratio_to_attention_n4096'] <= 2)}); peak "
        f"{t['peak_mb_8192x32768']:.1f} MB for 8192 x 32768 (goal ≤ 100: "
        f"{verdict(t['peak_mb_8192x32768'] <= 100)}; the score matrix alone: "
        f"{t['score_matrix_mb_8192x32768']:.0f} MB)"
    )
    ms = results["attention"]["import_ms"]
    print(f"import attnlab: {ms:.0f} ms (goal ≤ 250: {verdict(ms <= 250)})")
    print("\nwidgets: control change to redrawn view (goal median ≤ 30 ms, p95 ≤ 60 ms)")
    for name, r in results["widgets"].items():
        ok = r["median_ms"] <= widgets.GOAL_MEDIAN_MS and r["p95_ms"] <= widgets.GOAL_P95_MS
        print(f"  {name:26} median {r['median_ms']:5.1f}  p95 {r['p95_ms']:5.1f}  {verdict(ok)}")
    print(
        "\nnotebooks: Run All in a fresh kernel (goal ≤ 15 s, lesson 08 ≤ 45 s; ≤ 400 MB, "
        "≤ 500 MB with torch; course ≤ 90 s, ≤ 500 MB)"
    )
    total = 0.0
    for name, r in results["notebooks"].items():
        total += r["seconds"]
        seconds, mb = notebooks.goals(name, r.get("imports_torch", False))
        ok = r["seconds"] <= seconds and r["peak_rss_mb"] <= mb
        torch = " (with torch)" if r.get("imports_torch") else ""
        print(f"  {name:32} {r['seconds']:6.1f} s {r['peak_rss_mb']:7.0f} MB {verdict(ok)}{torch}")
    peak = max((r["peak_rss_mb"] for r in results["notebooks"].values()), default=0)
    print(
        f"  {'total':32} {total:6.1f} s {peak:7.0f} MB peak "
        f"({verdict(total <= 90 and peak <= 500)})"
    )


def main() -> None:
    only = set(sys.argv[1:])  # e.g. `python -m bench widgets notebooks`
    # A partial run updates its parts of the last results and keeps the rest.
    results = json.loads(RESULTS.read_text()) if only and RESULTS.exists() else {}
    results["machine"] = machine()
    modules = (("attention", attention), ("widgets", widgets), ("notebooks", notebooks))
    for name, module in modules + (("site", site),):
        if not only or name in only:
            results[name] = module.run()
            # A partial run keeps older parts, so each part names its own machine.
            results.setdefault("measured_on", {})[name] = results["machine"]
    if {"attention", "widgets", "notebooks"} <= results.keys():
        report(results)
        if "site" in results:
            site.report(results["site"])
    else:
        print(json.dumps(results, indent=1))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    print(f"\nwritten to {RESULTS.relative_to(RESULTS.parents[2])}")


if __name__ == "__main__":
    main()
