"""The built site (make site) on a static server on 127.0.0.1, and Chromium.

``make test-site`` runs these tests inside a network namespace that has only the
loopback (``unshare -n``, as root), so the site cannot reach the internet even
by accident; on top of that every page fails its test on any request to a host
other than 127.0.0.1. The browser is Debian's Chromium, as for make test-browser.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "site"
SCREENSHOTS = REPO / ".site-test"  # git-ignored
CHROMIUM = Path(os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
    }

    def log_message(self, format, *args):  # one line per file would drown the test's output
        pass


@dataclass
class StaticSite:
    url: str
    requested: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def site() -> StaticSite:
    """site/ served as any static host would, on a free port of 127.0.0.1."""
    if not (SITE / "index.html").exists() or not (SITE / "lite" / "jupyter-lite.json").exists():
        pytest.fail("no built site in site/: run `make site` first", pytrace=False)
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield StaticSite(url=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"No Chromium at {CHROMIUM}: install Debian's chromium package, "
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
class PageLog:
    """What the page did: requests off the loopback, uncaught errors."""

    off_loopback: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser, site):
    """A fresh context whose every request must stay on 127.0.0.1 (``page.site_log``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    log = PageLog()

    def guard(route):
        url = route.request.url
        host = urlsplit(url).hostname or ""
        if url.startswith(("data:", "blob:")) or host in LOOPBACK:
            route.continue_()
        else:
            log.off_loopback.append(url)
            route.abort("blockedbyclient")

    context.route("**/*", guard)
    page = context.new_page()
    page.on("pageerror", lambda error: log.page_errors.append(str(error)))
    page.site_log = log
    try:
        yield page
    finally:
        context.close()
    assert not log.off_loopback, "requests to hosts other than the loopback:\n" + "\n".join(
        log.off_loopback
    )


def pytest_terminal_summary(terminalreporter):
    """The budget figures of this run: the site's size, and per lesson the seconds
    from "Run in your browser" to an idle kernel and to the first widget drawn."""
    timings = SCREENSHOTS / "timings.json"
    if not SITE.exists() or not timings.exists():
        return
    import json

    size = sum(p.stat().st_size for p in SITE.rglob("*") if p.is_file()) / 1e6
    write = terminalreporter.write_line
    write(f"site: {size:.1f} MB (goal ≤ 60)")
    write("lesson: kernel ready s (goal ≤ 30), first widget drawn s (goal ≤ 45)")
    for stem, t in sorted(json.loads(timings.read_text()).items()):
        write(f"  {stem:26} {t['kernel_ready_s']:6.1f} {t['first_widget_s']:6.1f}")
