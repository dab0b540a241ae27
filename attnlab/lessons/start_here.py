"""Helpers for the first lesson: the tiny worked example and the environment check.

Lesson: ``notebooks/00_start_here.ipynb`` (the widget ``formula_explorer`` uses
the same tiny example).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys

import numpy as np

TINY_TOKENS = ("the", "cat", "sat")


def tiny_example(seed: int = 0):
    """Three labelled tokens with their queries, keys and values, d_k = d_v = 4.

    Returns ``(tokens, Q, K, V)``: a tuple of 3 labels and three (3, 4) arrays,
    one row per token. The entries are drawn from a standard normal (seeded) and
    rounded to one decimal so that a learner can read them and redo a product by hand.

    Lesson: ``notebooks/00_start_here.ipynb``.
    """
    rng = np.random.default_rng(seed)
    Q, K, V = (np.round(rng.normal(size=(3, 4)), 1) for _ in range(3))
    return TINY_TOKENS, Q, K, V


# --- environment check -------------------------------------------------------------------

# (what the learner sees, distribution name, import name, lowest version the course needs)
REQUIREMENTS = (
    ("numpy", "numpy", "numpy", "1.24"),
    ("matplotlib", "matplotlib", "matplotlib", "3.7"),
    ("ipywidgets", "ipywidgets", "ipywidgets", "8.0"),
    ("jupyterlab", "jupyterlab", "jupyterlab", "4.0"),
)
PYTHON_MINIMUM = "3.10"
# ipywidgets 8 draws its widgets in JupyterLab 4 through this extension, major version 3.
EXTENSION = "jupyterlab_widgets"
EXTENSION_MAJOR = 3
EXTENSION_FIX = "pip install 'jupyterlab_widgets>=3,<4' and restart JupyterLab"

OK, BAD, NOTE = "✓", "✗", "⚠"


def version_tuple(text: str) -> tuple[int, ...]:
    """The leading numbers of a version string.

    ``"8.1.9"`` → ``(8, 1, 9)``; ``"4.0rc1"`` → ``(4, 0)``.
    """
    numbers = []
    for part in str(text).split("."):
        match = re.match(r"\d+", part)
        if not match:
            break
        numbers.append(int(match.group()))
        if match.end() < len(part):  # "0rc1": the rest is a pre-release tag
            break
    return tuple(numbers)


def installed_version(dist: str, module: str | None = None) -> str | None:
    """The installed version of a package, or None when this kernel cannot find it.

    Asks the package metadata first; when that is unavailable (some minimal or
    frozen environments ship without it), imports the module and reads
    ``__version__``.
    """
    try:
        from importlib import metadata

        return metadata.version(dist)
    except Exception:  # no metadata module, or no metadata for this package
        pass
    if module is None or importlib.util.find_spec(module) is None:
        return None
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:
        return None


def importable(module: str) -> bool:
    """Whether ``import module`` would find it in this kernel."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def python_version() -> str:
    return ".".join(str(n) for n in sys.version_info[:3])


def _requirement_line(label: str, version: str | None, minimum: str) -> tuple[str, bool]:
    needed = f"≥ {minimum} needed"
    if version is None:
        return (
            f"{BAD} {label} is not installed ({needed}). Fix: pip install '{label}>={minimum}'"
        ), False
    if version_tuple(version) < version_tuple(minimum):
        return (
            f"{BAD} {label} {version} is too old ({needed}). "
            f"Fix: pip install --upgrade '{label}>={minimum}'"
        ), False
    return f"{OK} {label} ({needed})", True


def environment_report() -> list[str]:
    """Lines saying whether this kernel has what the course needs, and how to fix what is missing.

    A line starts with ✓ (fine), ✗ (needs fixing, with the fix) or ⚠ (cannot be
    checked from here). Versions are compared with minimums rather than printed,
    so on a working setup the report reads the same whatever the exact versions.

    JupyterLab itself may run from another environment than this kernel (a
    system-wide JupyterLab with a per-project kernel, say). Then jupyterlab and
    its widget extension cannot be seen from here, and the report says so
    instead of calling them missing.

    Lesson: ``notebooks/00_start_here.ipynb``.
    """
    lines, all_ok = [], True
    if version_tuple(python_version()) < version_tuple(PYTHON_MINIMUM):
        lines.append(
            f"{BAD} Python {python_version()} is too old (≥ {PYTHON_MINIMUM} needed). "
            "Fix: build the course environment with a newer Python, "
            "e.g. `make lab PYTHON=python3.11`."
        )
        all_ok = False
    else:
        lines.append(f"{OK} Python (≥ {PYTHON_MINIMUM} needed)")

    lab_here = True
    for label, dist, module, minimum in REQUIREMENTS:
        version = installed_version(dist, module)
        if label == "jupyterlab" and version is None:
            lab_here = False
            lines.append(
                f"{NOTE} jupyterlab is not installed in this kernel's environment: fine "
                "in JupyterLite, and wherever JupyterLab was started from another environment."
            )
            continue
        line, ok = _requirement_line(label, version, minimum)
        lines.append(line)
        all_ok &= ok

    line, ok = extension_line(lab_here)
    lines.append(line)
    all_ok &= ok

    if all_ok and line.startswith(NOTE):
        # The widget extension is out of this kernel's sight: "everything is in place"
        # would be more than the report knows.
        lines.append(
            f"Nothing is missing from this kernel. If widgets do not appear, the {NOTE} "
            "lines above say where to look."
        )
    elif all_ok:
        lines.append("Everything the course needs is in place.")
    else:
        lines.append(
            f"Fix the {BAD} lines above, restart JupyterLab (or at least the kernel: "
            "Kernel → Restart Kernel), then run this cell again."
        )
    return lines


def extension_line(lab_here: bool = True) -> tuple[str, bool]:
    """Check the JupyterLab extension that draws ipywidgets 8 widgets (jupyterlab_widgets 3.x).

    Without it, or with a version made for another ipywidgets, every widget cell
    shows a note or "Error displaying widget" instead of the widget.
    """
    what = f"{EXTENSION} ({EXTENSION_MAJOR}.x needed: the JupyterLab extension that draws widgets)"
    version = installed_version(EXTENSION, EXTENSION) if importable(EXTENSION) else None
    if version is None:
        if sys.platform == "emscripten":  # JupyterLite: the site itself ships the extension
            return f"{OK} {EXTENSION}: part of this JupyterLite site, nothing to install.", True
        if not lab_here:
            return (
                f"{NOTE} {EXTENSION} cannot be checked from this kernel. Make sure the "
                f"environment JupyterLab runs in has it: {EXTENSION_FIX}."
            ), True
        return (
            f"{BAD} The JupyterLab widget extension is missing, so the widgets in this "
            f"course will not appear. Fix: {EXTENSION_FIX}."
        ), False
    major = version_tuple(version)[:1]
    if major != (EXTENSION_MAJOR,):
        widgets_version = installed_version("ipywidgets", "ipywidgets") or "8"
        return (
            f"{BAD} {EXTENSION} {version} does not match ipywidgets {widgets_version}: "
            f"ipywidgets 8 needs {EXTENSION} {EXTENSION_MAJOR}.x, or its widgets will not "
            f"appear. Fix: {EXTENSION_FIX}."
        ), False
    return f"{OK} {what}", True
