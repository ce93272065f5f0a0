"""Open a report in headless Chromium (Debian's `chromium`, driven by Playwright) and
say what rendered: console errors, requests that left the file, each plot's drawn size
and marks, the page's text, and a screenshot.

Run as a script to take a screenshot (the top HEIGHT pixels, else the whole page):
python -m tests.report.browser REPORT.html OUT.png [HEIGHT]
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("RUNG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# as root, and without the calls home a closed network refuses
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

PLOTS_JS = """() => Array.from(document.querySelectorAll('.plot')).map(el => {
  const gd = el.querySelector('.js-plotly-plot');
  const svg = el.querySelector('svg.main-svg');
  const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const marks = Array.from(el.querySelectorAll('.cartesianlayer .trace path, .barlayer path'))
      .filter(p => (p.getAttribute('d') || '').length > 2).length;
  return {name: el.dataset.plot, traces: gd && gd.data ? gd.data.length : 0, width: r.width,
          height: r.height, marks: marks};
})"""


@dataclass
class Page:
    errors: list[str] = field(default_factory=list)       # console errors and uncaught exceptions
    requests: list[str] = field(default_factory=list)     # anything fetched beyond the file itself
    plots: list[dict] = field(default_factory=list)
    text: str = ""
    decision: dict | None = None
    screenshot: bytes = b""


def require_chromium() -> None:
    """Skip where Chromium is not installed, except in CI, where `.ci/run` installs it."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"Chromium not found at {CHROMIUM}; .ci/run installs Debian's chromium package")
    pytest.skip("headless Chromium is not installed (apt-get install chromium)")


def open_report(path: Path, width: int = 1200, clip_height: int | None = None) -> Page:
    from playwright.sync_api import sync_playwright

    page_out = Page()
    url = Path(path).resolve().as_uri()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda m: page_out.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: page_out.errors.append(str(e)))

            def route(r):
                if r.request.url != url:
                    page_out.requests.append(r.request.url)
                    return r.abort()
                return r.continue_()

            page.route("**/*", route)
            page.goto(url, wait_until="load")
            n = page.evaluate("document.querySelectorAll('.plot').length")
            if n:
                page.wait_for_function(f"document.querySelectorAll('.plot svg.main-svg').length >= {n}",
                                       timeout=30_000)
            page.wait_for_timeout(300)  # let plotly finish its layout pass
            page_out.plots = page.evaluate(PLOTS_JS)
            page_out.text = page.inner_text("body")
            raw = page.evaluate("(document.getElementById('rung-decision') || {}).textContent || null")
            if raw:
                import json

                page_out.decision = json.loads(raw)
            page_out.screenshot = page.screenshot(full_page=True, clip=None if clip_height is None
                                                  else {"x": 0, "y": 0, "width": width, "height": clip_height})
        finally:
            browser.close()
    return page_out


if __name__ == "__main__":
    shot = open_report(Path(sys.argv[1]), clip_height=int(sys.argv[3]) if len(sys.argv) > 3 else None).screenshot
    Path(sys.argv[2]).write_bytes(shot)
    print(f"{sys.argv[2]}: {len(shot):,} bytes")
