"""A real JupyterLab and a real Chromium for the widget tests.

JupyterLab runs from the course environment on a free port of 127.0.0.1, with a
random token, on a throw-away copy of ``notebooks/`` (JupyterLab autosaves; the
lessons in the repository are never touched), and with its own settings,
workspaces, configuration and runtime folders, so nothing a developer set up
for their own JupyterLab changes what the test sees.

The browser is Debian's Chromium (``apt-get install chromium``): Playwright's
own browser downloads are not available everywhere this course is tested.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
SCREENSHOTS = REPO / ".browser"
CHROMIUM = Path(os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these, Chromium keeps trying to reach Google's services, which on
    # an offline machine is a flood of refused connections.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT = 90  # seconds; a cold start of JupyterLab takes a few

# User settings for the test's JupyterLab (one file per plugin, as JupyterLab
# writes them itself).
LAB_SETTINGS = {
    # No "Would you like to get notified about official Jupyter news?" toast:
    # it would cover the notebook, and the news fetch fails offline.
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Every cell stays in the page (JupyterLab otherwise may leave cells far
    # below the viewport unrendered), so each cell and output can be inspected.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # The copies are throw-away, but nothing needs saving either.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}
# The nbgrader panels are switched off as `make lab` and Binder do for
# learners: this test looks at what a learner sees.
PAGE_CONFIG = {"disabledExtensions": {"@jupyter/nbgrader": True}}


def lab_python() -> str:
    """The course environment's Python (the one running the tests, as a fallback)."""
    venv_python = REPO / ".venv" / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    """A running JupyterLab: where it is, how to reach it, where its files are."""

    port: int
    token: str
    root: Path
    log: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, name: str) -> str:
        # `reset` starts from an empty workspace: only this notebook is open.
        return f"{self.base_url}/lab/tree/{name}?reset&token={self.token}"

    def log_tail(self, n_chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n_chars:]
        except OSError:
            return "(no server log)"


def _write_lab_folders(base: Path) -> dict[str, str]:
    """Settings, configuration and runtime folders of the test's own; returns the env."""
    settings = base / "settings"
    for plugin, values in LAB_SETTINGS.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2))
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(PAGE_CONFIG))
    (base / "workspaces").mkdir()
    (base / "runtime").mkdir()
    env = dict(os.environ)
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_TOKEN", None)
    return env


def _wait_until_up(server: LabServer) -> None:
    url = f"{server.base_url}/api/status?token={server.token}"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(
                f"JupyterLab exited with code {server.process.returncode} before it answered.\n"
                f"Its log:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)  # polling a server that is starting; nothing to wait on instead
    pytest.fail(
        f"JupyterLab did not answer {url} within {SERVER_START_TIMEOUT} s.\n"
        f"Its log:\n{server.log_tail()}"
    )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def lab(tmp_path_factory) -> LabServer:
    """JupyterLab serving a throw-away copy of the lessons."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = _write_lab_folders(base)
    token = secrets.token_hex(24)
    port = free_port()
    command = [
        lab_python(),
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={env['JUPYTERLAB_SETTINGS_DIR']}",
        f"--LabApp.workspaces_dir={env['JUPYTERLAB_WORKSPACES_DIR']}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = base / "jupyterlab.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=base,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = LabServer(port=port, token=token, root=root, log=log, process=process)
    try:
        _wait_until_up(server)
        yield server
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"No Chromium at {CHROMIUM}: the browser tests drive Debian's Chromium. "
            "Install it with `apt-get install chromium` (as root), "
            "or point ATTNLAB_CHROMIUM at another Chromium binary.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class BrowserLog:
    """What the page reported: console errors and uncaught exceptions."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser, lab):
    """A fresh browser context and page; its console errors are in ``page.attnlab_log``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    log = BrowserLog()

    def on_console(message):
        if message.type == "error":
            location = message.location or {}
            log.console_errors.append(f"{message.text} (at {location.get('url', '?')})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: log.page_errors.append(str(error)))
    page.attnlab_log = log
    try:
        yield page
    finally:
        context.close()
