"""Run lesson notebooks top to bottom in fresh kernels and save them with their outputs.

    python tools/run_notebooks.py                      # every notebook in notebooks/
    python tools/run_notebooks.py notebooks/02_*.ipynb # some

What is saved is what nbval later compares against, so the saved notebook
must be clean: outputs from one fresh run with sequential counts, no error
outputs, no paths of this machine, and no widget state. A widget output keeps
only its plain-text note ("run this cell to use it"), so a notebook opened
fresh, on Binder say, shows that note rather than "Error displaying widget".
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def local_path_pattern() -> re.Pattern:
    places = {
        str(ROOT),
        os.path.expanduser("~") + "/",
        tempfile.gettempdir() + "/",
        "site-packages",
        sys.prefix,
    }
    return re.compile("|".join(re.escape(p) for p in sorted(places, key=len, reverse=True)))


def clean(nb) -> None:
    """Strip what must not be saved: widget state and views, and timing metadata; join
    the pieces of a stream that the kernel happened to send in several messages."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = coalesced(cell.outputs)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]


def coalesced(outputs: list) -> list:
    """Consecutive stream outputs of the same name as one, as a run in one piece gives."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            joined.append(output)
    return joined


def problems(nb) -> list[str]:
    found, paths = [], local_path_pattern()
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "error":
                found.append(f"cell {index}: error {output.get('ename')}: {output.get('evalue')}")
            if kind == "stream" and output.get("name") == "stderr":
                found.append(f"cell {index}: wrote to stderr: {output.get('text', '')[:200]!r}")
            if paths.search(
                json.dumps({k: v for k, v in output.items() if k != "data"})
                + json.dumps(output.get("data", {}).get("text/plain", ""))
                + json.dumps(output.get("data", {}).get("text/html", ""))
            ):
                found.append(f"cell {index}: an output shows a path of this machine")
    return found


def run(path: Path, timeout: int = 300) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    elapsed = time.perf_counter() - start
    clean(nb)
    issues = problems(nb)
    if issues:
        raise SystemExit(f"{path.name} was not saved:\n  " + "\n  ".join(issues))
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> None:
    paths = [Path(p) for p in argv] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    for path in paths:
        print(f"{path.name}: ran in {run(path):.1f} s and saved")


if __name__ == "__main__":
    main(sys.argv[1:])
