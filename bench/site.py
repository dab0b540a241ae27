"""The in-browser site (make site): how long JupyterLite's Pyodide kernel takes to
be ready, and how big the site is.

Goals (the course with nothing to install):
- the Lite kernel ready in at most 30 s on this machine: from opening a lesson's
  JupyterLite page to an idle kernel, in Debian's Chromium, from a local server;
- the whole site at most 60 MB.

Needs a built site/ (`make site`) and Chromium; without them, the figures are
reported as not measured.
"""

from __future__ import annotations

import functools
import http.server
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
CHROMIUM = Path("/usr/bin/chromium")
LESSON = "00_start_here.ipynb"
GOAL_KERNEL_S = 30.0
GOAL_SITE_MB = 60.0


def site_mb() -> float:
    return sum(p.stat().st_size for p in SITE.rglob("*") if p.is_file()) / 1e6


def kernel_ready_s() -> float:
    """Seconds from opening the lesson in JupyterLite to an idle Pyodide kernel."""
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        extensions_map = {
            **http.server.SimpleHTTPRequestHandler.extensions_map,
            ".wasm": "application/wasm",
            ".mjs": "text/javascript",
        }

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/lite/lab/index.html?path={LESSON}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
            )
            page = browser.new_page()
            started = time.monotonic()
            page.goto(url)
            page.wait_for_selector(
                '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=180_000
            )
            elapsed = time.monotonic() - started
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return elapsed


def run() -> dict:
    if not (SITE / "lite" / "jupyter-lite.json").exists() or not CHROMIUM.exists():
        return {"measured": False, "why": "no site/ (make site) or no /usr/bin/chromium"}
    return {"measured": True, "site_mb": site_mb(), "kernel_ready_s": kernel_ready_s()}


def report(result: dict) -> None:
    if not result.get("measured"):
        print(f"\nsite: not measured ({result['why']})")
        return
    print(
        f"\nsite: {result['site_mb']:.1f} MB (goal ≤ {GOAL_SITE_MB:.0f}: "
        f"{'met' if result['site_mb'] <= GOAL_SITE_MB else 'MISSED'}); Lite kernel ready "
        f"in {result['kernel_ready_s']:.1f} s (goal ≤ {GOAL_KERNEL_S:.0f}: "
        f"{'met' if result['kernel_ready_s'] <= GOAL_KERNEL_S else 'MISSED'})"
    )
