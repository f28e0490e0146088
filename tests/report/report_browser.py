"""Headless Chromium for the report tests, driven with Playwright (no browser download: the
Debian ``chromium`` package, ``/usr/bin/chromium`` or ``$EDGEPART_CHROMIUM``).

Chromium runs with a fresh ``--user-data-dir`` and the flags that keep it off the network
(``--disable-background-networking --disable-component-update --disable-sync``) and working as
root in a container (``--no-sandbox --disable-gpu``). Screenshots go to :func:`artifacts_dir`:
``$EDGEPART_ARTIFACTS`` if set, else ``<pytest basetemp>/artifacts``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("EDGEPART_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


def artifacts_dir(basetemp: Path) -> Path:
    """Where screenshots are kept (created)."""
    root = Path(os.environ.get("EDGEPART_ARTIFACTS") or basetemp / "artifacts")
    root.mkdir(parents=True, exist_ok=True)
    return root


def require_browser() -> None:
    """Fail with the fix when Chromium or Playwright is missing (the tests do not skip)."""
    if not Path(CHROMIUM).is_file() and shutil.which(CHROMIUM) is None:
        raise AssertionError(
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set EDGEPART_CHROMIUM)"
        )
    try:
        import playwright  # noqa: F401
    except ImportError as err:
        raise AssertionError("playwright is missing: pip install -e '.[test]'") from err


@contextmanager
def chromium(user_data_dir: Path) -> Iterator[Any]:
    """A headless Chromium browser context with a fresh profile directory."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield ctx
        finally:
            ctx.close()


@dataclass
class PageLog:
    """Console errors, page errors and every request a page made."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def open_page(
    ctx: Any, url: str, ready: str | None = None, timeout_ms: int = 60_000
) -> tuple[Any, PageLog]:
    """Open ``url`` in a new page, recording console errors and requests; wait for ``ready``
    (a JavaScript expression) if given."""
    page = ctx.new_page()
    log = PageLog()
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(f"pageerror: {e}"))
    page.on("request", lambda r: log.requests.append(r.url))
    page.goto(url)
    if ready:
        page.wait_for_function(ready, timeout=timeout_ms)
    return page, log
