"""Widget latency: from a control change to a redrawn view, on the kernel side.

Every control of every factory is moved through a range of values; each
change is timed until its observers (which redraw the view) have returned.
Goal: median ≤ 30 ms and p95 ≤ 60 ms per factory.

    python -m bench.widgets                   # every factory
    python -m bench.widgets softmax_explorer  # one
"""

from __future__ import annotations

import sys
import time

import numpy as np

GOAL_MEDIAN_MS = 30.0
GOAL_P95_MS = 60.0


def values_to_try(control, steps: int = 8) -> list:
    """Values a learner could set on this control, in an order that changes the view each time."""
    examples = getattr(control, "example_values", None)
    if examples:
        return list(examples)
    if hasattr(control, "options") and control.options:
        labels = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return (labels * steps)[: max(steps, len(labels))] if len(labels) > 1 else []
    if isinstance(getattr(control, "value", None), bool):
        return [not control.value, control.value] * (steps // 2)
    if hasattr(control, "min") and hasattr(control, "max"):
        lo, hi = control.min, control.max
        if isinstance(control.value, int):
            grid = np.unique(np.linspace(lo, hi, steps).round().astype(int)).tolist()
        else:
            grid = np.linspace(lo, hi, steps).tolist()
        # Start from the far end so the first change is a real change.
        return grid[::-1] if grid and grid[0] == control.value else grid
    return []


def measure(widget, repeats: int = 3) -> dict:
    """Time every control change of a built widget; return median and p95 in ms."""
    times = []
    for control in widget.controls.values():
        original = control.value
        for _ in range(repeats):
            for value in values_to_try(control):
                if value == control.value:
                    continue
                start = time.perf_counter()
                control.value = value
                times.append(time.perf_counter() - start)
        control.value = original
    if not times:
        raise ValueError(f"{type(widget).__name__} has no control that could be moved")
    ms = np.array(times) * 1000
    return {
        "median_ms": float(np.median(ms)),
        "p95_ms": float(np.percentile(ms, 95)),
        "changes": len(ms),
    }


def run(names=None) -> dict:
    import attnlab.widgets as w

    results = {}
    for name in names or w.FACTORIES:
        widget = getattr(w, name)()
        measure(widget, repeats=1)  # warm up: fonts, caches, first layout
        results[name] = measure(widget)
    return results


def main(argv=None) -> None:
    results = run(argv or sys.argv[1:] or None)
    print(f"{'widget':28} {'median ms':>10} {'p95 ms':>8} {'changes':>8}  goal")
    for name, r in results.items():
        ok = r["median_ms"] <= GOAL_MEDIAN_MS and r["p95_ms"] <= GOAL_P95_MS
        print(
            f"{name:28} {r['median_ms']:10.1f} {r['p95_ms']:8.1f} {r['changes']:8d}  "
            f"{'met' if ok else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
