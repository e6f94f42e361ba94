"""A real headless Chromium (Debian's ``chromium`` package, installed by ``make browser``) driven by
Playwright for the console's end-to-end tests, and where their screenshots go."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[1]
#: Screenshots of every console page the tests visit (CI keeps the folder as its artifacts).
ARTIFACTS = Path(os.environ.get("MASTER_AGENT_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "console"
#: The flags Chromium needs here: no sandbox as root, and no calls home on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = (
        os.environ.get("MASTER_AGENT_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if not found:
        pytest.fail("no Chromium: run `make browser` (apt-get install chromium) or set MASTER_AGENT_CHROMIUM")
    return found


@contextlib.asynccontextmanager
async def launch() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


async def snap(page: Page, name: str) -> Path:
    """A full-page screenshot as a test artifact (the visible part if the full page will not settle)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    try:
        await page.screenshot(path=path, full_page=True, animations="disabled", timeout=20_000)
    except PlaywrightTimeout:
        await page.screenshot(path=path, animations="disabled")
    return path


UNLABELLED_CONTROLS = """
() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter((el) => el.type !== 'hidden' && !el.hidden && el.offsetParent !== null)
  .filter((el) => {
    const named = (el.labels && [...el.labels].some((l) => l.textContent.trim()))
      || (el.getAttribute('aria-label') || '').trim()
      || (el.getAttribute('aria-labelledby') || '').trim()
      || (el.tagName === 'BUTTON' && el.textContent.trim());
    return !named;
  })
  .map((el) => el.outerHTML.slice(0, 120))
"""


async def unlabelled_controls(page: Page) -> list[str]:
    """Visible form controls without an accessible name (a label, aria-label or a button's text)."""
    found: list[str] = await page.evaluate(UNLABELLED_CONTROLS)
    return found
