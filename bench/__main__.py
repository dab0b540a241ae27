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
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(results: dict) -> None:
    m = results["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, NumPy {m['numpy']}")
    print("\nattention, float32, d = 64")
    print(f"{'n':>6} {'ms':>9} {'2 matmuls ms':>13} {'ratio':>6} {'vs torch':>9}")
    for r in results["attention"]["attention"]:
        torch = f"{r['ratio_to_torch']:9.2f}" if "ratio_to_torch" in r else f"{'-':>9}"
        print(
            f"{r['n']:6d} {r['attention_ms']:9.1f} {r['matmuls_ms']:13.1f} "
            f"{r['ratio_to_matmuls']:6.2f} {torch}"
        )
    at_2048 = next(r for r in results["attention"]["attention"] if r["n"] == 2048)
    print(
        f"goal n=2048 ≤ 2.5x matmuls: {verdict(at_2048['ratio_to_matmuls'] <= 2.5)}"
        + (
            f"; ≤ 1.25x torch: {verdict(at_2048['ratio_to_torch'] <= 1.25)}"
            if "ratio_to_torch" in at_2048
            else "; torch not installed"
        )
    )
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
        "\nnotebooks: Run All in a fresh kernel (goal ≤ 15 s and ≤ 400 MB each; "
        "course ≤ 90 s, ≤ 500 MB)"
    )
    total = 0.0
    for name, r in results["notebooks"].items():
        total += r["seconds"]
        print(f"  {name:32} {r['seconds']:6.1f} s {r['peak_rss_mb']:7.0f} MB")
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
