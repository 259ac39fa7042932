"""The index and two pages opened in headless Chromium with networking off: the charts render
(SVG with mark paths in the dumped DOM) and nothing reaches the console as an error. Skips when
chromium is absent, unless TRACEREPLAY_REQUIRE_BROWSER=1 (set by .ci/run)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=15000",
    "--dump-dom",
)
MARK_PATH = re.compile(r'class="mark-(rect|symbol|line|area|rule)[^"]*"[^>]*>\s*<path')
CONSOLE_ERROR = re.compile(r"ERROR:CONSOLE|CONSOLE[^\]]*\]\s*\"(Uncaught|Error|TypeError)")


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("TRACEREPLAY_REQUIRE_BROWSER", "") not in ("", "0", "false"):
            pytest.fail("chromium not found and TRACEREPLAY_REQUIRE_BROWSER is set")
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium)")
    return found


def _open(browser: str, page, profile) -> tuple[str, str]:
    done = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout, done.stderr


@pytest.mark.slow
def test_index_and_two_pages_render_offline_in_chromium(demo_site, tmp_path) -> None:
    browser = _chromium()
    dom, log = _open(browser, demo_site.index, tmp_path / "profile-index")
    assert all(f'href="{p.path.name}"' in dom for p in demo_site.pages), dom[:500]
    assert not CONSOLE_ERROR.search(log)
    pages = {p.name: p for p in demo_site.pages}
    for name in ("timeline", "breakdown"):
        dom, log = _open(browser, pages[name].path, tmp_path / f"profile-{name}")
        assert "<svg" in dom, f"{name}: no SVG rendered"
        assert len(MARK_PATH.findall(dom)) >= 1, f"{name}: no marks drawn"
        assert '<pre class="chart-error"' not in dom
        errors = [line for line in log.splitlines() if CONSOLE_ERROR.search(line)]
        assert not errors, errors
