"""Run All of each lesson notebook in a fresh kernel: wall time and peak RSS (the kernel's,
plus that of the worker processes it started).

Goals: each notebook ≤ 15 s (lesson 08, which trains: ≤ 45 s) and ≤ 400 MB, or ≤ 500 MB
when it has imported PyTorch (lesson 10 does where torch is installed; torch alone takes
about 300 MB); the course ≤ 90 s in total with no kernel past 500 MB, which fits Binder's
1 GB per user.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

ROOT = Path(__file__).resolve().parents[1]
# The kernel reports its own high-water mark of resident memory (Linux), and that of the
# processes it started (lesson 08's training workers, which live as long as the kernel).
# Their peaks are added: an upper bound on what they held at once (pages they share, such
# as NumPy's libraries, count once per process).
PEAK_RSS_CELL = """
import os, sys
def _peak_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    except OSError:  # a process that has just ended
        return 0
def _parent(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
def _children(pid):
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if _parent(entry) == pid:
                found += [int(entry), *_children(int(entry))]
        except OSError:  # a process that has just ended
            pass
    return found
workers = sum(_peak_kb(child) or 0 for child in _children(os.getpid()))
print(_peak_kb(os.getpid()), workers, "torch" in sys.modules)
"""
TRAINS = "08_does_scaling_matter.ipynb"


def goals(name: str, imports_torch: bool) -> tuple[float, float]:
    """A notebook's (seconds, MB) goal."""
    return (45.0 if name == TRAINS else 15.0), (500.0 if imports_torch else 400.0)


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
    kernel_kb, workers_kb, torch = nb.cells[-1].outputs[0]["text"].split()
    return {
        "seconds": elapsed,
        "peak_rss_mb": (int(kernel_kb) + int(workers_kb)) / 1024,
        "workers_mb": int(workers_kb) / 1024,
        "imports_torch": torch == "True",
    }


def run() -> dict:
    return {p.name: measure(p) for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))}
