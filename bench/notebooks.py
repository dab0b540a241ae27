"""Run All of each lesson notebook in a fresh kernel: wall time and the kernel's peak RSS.

Goals: each notebook ≤ 15 s and ≤ 400 MB (lessons 00-05); the course ≤ 90 s
in total with no kernel past 500 MB, which fits Binder's 1 GB per user.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

ROOT = Path(__file__).resolve().parents[1]
# The kernel reports its own high-water mark of resident memory (Linux).
PEAK_RSS_CELL = (
    "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
)


def measure(path: Path) -> dict:
    nb = nbformat.read(path, as_version=4)
    n_cells = len(nb.cells)
    nb.cells.append(new_code_cell(PEAK_RSS_CELL))
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells[:n_cells]):
            client.execute_cell(cell, index)
        elapsed = time.perf_counter() - start
        client.execute_cell(nb.cells[-1], n_cells)
    peak_kb = int(nb.cells[-1].outputs[0]["text"].strip())
    return {"seconds": elapsed, "peak_rss_mb": peak_kb / 1024}


def run() -> dict:
    return {p.name: measure(p) for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))}
