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


#: What a page must not show at any width: a page wider than the viewport (a long table scrolls inside its
#: own box instead), text broken one or a few characters per line, raw JSON or a query shown before anyone
#: asks for it (it belongs in a closed ``<details>``).
LAYOUT_PROBLEMS = r"""
() => {
  const problems = [];
  const doc = document.documentElement;
  const width = doc.clientWidth;
  if (doc.scrollWidth > width + 1) {
    const wide = [...document.body.querySelectorAll('*')]
      .filter((el) => el.getBoundingClientRect().right > width + 1 && !el.closest('.scroll'))
      .filter((el) => ![...el.children].some((child) => child.getBoundingClientRect().right > width + 1))
      .slice(0, 3).map((el) => `<${el.tagName.toLowerCase()} class="${el.className}">`);
    problems.push(`overflow: ${doc.scrollWidth}px wide in a ${width}px viewport (${wide.join(', ')})`);
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const letters = node.textContent.replace(/\s+/g, '').length;
    if (letters < 4 || node.parentElement.getBoundingClientRect().width <= 1) continue;  // visually hidden
    const range = document.createRange();
    range.selectNodeContents(node);
    const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
    if (lines >= 3 && letters / lines <= 3) {
      problems.push(`wrapped ${letters} characters on ${lines} lines: ${node.textContent.trim().slice(0, 40)}`);
    }
  }
  const shown = document.body.innerText;
  const json = shown.match(/[{\[]\s*"[^"\n]{1,80}"\s*:/);
  if (json) problems.push(`raw JSON shown: ...${shown.slice(Math.max(0, json.index - 40), json.index + 60)}...`);
  const query = shown.match(/\bSELECT\b[^]{0,400}?\bFROM\b/);
  if (query) problems.push(`a raw query shown: ${query[0].slice(0, 80)}`);
  if (shown.includes('\\n')) problems.push('an escaped newline (\\n) shown');
  return problems;
}
"""


async def layout_problems(page: Page) -> list[str]:
    """What is wrong with the page's layout at its viewport (see ``LAYOUT_PROBLEMS``)."""
    found: list[str] = await page.evaluate(LAYOUT_PROBLEMS)
    return found
