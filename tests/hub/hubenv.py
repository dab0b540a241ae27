"""The course environment for the hub's users, in a place every user can reach.

The single-user servers run as the students and the instructor, not as root, so
their Python cannot live in the course's `.venv`: that is a symlink to an
interpreter under root's home (pyenv), and the checkout itself may sit under a
folder other users cannot traverse (/root is 0700). So `make test-hub` builds a
separate virtual environment under /opt/attnlab-hub (ATTNLAB_HUB_PREFIX) from
the system's own Python (/usr/bin/python3, ATTNLAB_HUB_PYTHON), which any user
may execute, with the course's pins (constraints.txt), the `lab` and `grading`
extras and the hub's own pins (deploy/jupyterhub/requirements.txt): the same
set the single-user image gets. attnlab is installed into it as a copy, not
linked to the checkout. The environment is rebuilt only when its inputs change.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("ATTNLAB_HUB_PREFIX", "/opt/attnlab-hub"))
BASE_PYTHON = os.environ.get("ATTNLAB_HUB_PYTHON", "/usr/bin/python3")
REQUIREMENTS = ROOT / "deploy" / "jupyterhub" / "requirements.txt"
STAMP = ".attnlab-hub-env"


def _name(line: str) -> str:
    return re.split(r"[=<>!~; \[]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def constraints_for_hub() -> str:
    """constraints.txt without the pins the hub's requirements set themselves
    (soupsieve, whose newest release needs a newer Python 3.11 than Debian's)."""
    own = {_name(x) for x in REQUIREMENTS.read_text().splitlines() if x and x[0].isalpha()}
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return "\n".join(x for x in lines if not x or not x[0].isalpha() or _name(x) not in own) + "\n"


def _inputs_digest() -> str:
    version = subprocess.run(
        [BASE_PYTHON, "-c", "import sys; print(sys.version)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = version + constraints_for_hub() + REQUIREMENTS.read_text()
    data += (ROOT / "pyproject.toml").read_text()
    return hashlib.sha256(data.encode()).hexdigest()


def _pip(prefix: Path, *args: str) -> None:
    result = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "pip", "--quiet", *args],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{result.stderr[-4000:]}")


def _package_copy(into: Path) -> Path:
    """attnlab's sources alone, so that pip builds it outside the checkout."""
    copy = into / "attnlab-src"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, copy / name)
    shutil.copytree(
        ROOT / "attnlab", copy / "attnlab", ignore=shutil.ignore_patterns("__pycache__")
    )
    return copy


def build(prefix: Path = PREFIX) -> tuple[Path, float]:
    """Create or update the environment; return its bin folder and the seconds it took."""
    start = time.perf_counter()
    check = subprocess.run(
        [BASE_PYTHON, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"],
        capture_output=True,
    )
    if check.returncode:
        raise RuntimeError(
            f"{BASE_PYTHON} must be Python 3.11 or newer (nbgrader needs it); "
            "set ATTNLAB_HUB_PYTHON to another interpreter every user may run"
        )
    digest = _inputs_digest()
    stamp = prefix / STAMP
    if not stamp.exists() or stamp.read_text() != digest:
        shutil.rmtree(prefix, ignore_errors=True)
        subprocess.run([BASE_PYTHON, "-m", "venv", str(prefix)], check=True)
        _pip(prefix, "install", "--upgrade", "pip>=23.1")
        constraints = prefix / "constraints.txt"
        constraints.write_text(constraints_for_hub())
        with tempfile.TemporaryDirectory() as tmp:
            source = _package_copy(Path(tmp))
            _pip(
                prefix,
                "install",
                "-c",
                str(constraints),
                "-r",
                str(REQUIREMENTS),
                f"{source}[lab,grading]",
            )
        stamp.write_text(digest)
    else:
        # The dependencies are current; attnlab itself is refreshed every time.
        with tempfile.TemporaryDirectory() as tmp:
            _pip(prefix, "install", "--no-deps", "--force-reinstall", str(_package_copy(Path(tmp))))
    subprocess.run(["chmod", "-R", "a+rX", str(prefix)], check=True)
    return prefix / "bin", time.perf_counter() - start
