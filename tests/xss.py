"""Hostile stored text: each payload runs script if a page puts it into markup unescaped.

Every payload sets `window.__xss` (never an alert, so a test reads the outcome instead of
fighting a modal dialog). Used by the report's and the viewer's browser tests.
"""

from __future__ import annotations

import time
from typing import Any

PAYLOADS = (
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '"><svg onload="window.__xss=1">',
    '\'><iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    "</pre></td></tr></table><script>window.__xss=1</script>",
    "</script><script>window.__xss=1</script>",
    '<details open ontoggle="window.__xss=1">',
    '<a href="javascript:window.__xss=1">click</a>',
    "{{ 7*7 }} {% raw %}${7*7}",
)
TEXT = "XSS " + " ".join(PAYLOADS)
# for places that cannot hold a slash (a name in a URL path)
NAME = 'x"><img src=x onerror=window.__xss=1>'

# injected markup shows up as elements or attributes no page of ours has
PROBE_JS = """
return {
  xss: window.__xss === undefined ? null : window.__xss,
  handlers: document.querySelectorAll('[onerror],[onload],[ontoggle],[onclick]').length,
  iframes: document.querySelectorAll('iframe').length,
  inline_scripts: Array.from(document.scripts).filter(s => !s.src).length,
  js_links: Array.from(document.querySelectorAll('a[href]')).filter(a => a.getAttribute('href').trim().toLowerCase().startsWith('javascript:')).length,
};
"""
CLEAN = {"xss": None, "handlers": 0, "iframes": 0, "js_links": 0}

# Opens every `<details>` a reader can see, as clicking each one's summary in document order does
# (a parent first, so the ones inside it are visible by the time they are reached): the click is
# the summary's own (`HTMLElement.click()` runs its activation behaviour and fires `toggle`), in one
# round trip to the browser instead of two WebDriver commands per element (200 elements in the
# report took 20 s that way). Returns how many it opened.
OPEN_DETAILS_JS = """
let opened = 0;
for (const d of document.querySelectorAll('details')) {
  const summary = d.querySelector('summary');
  if (summary && d.getClientRects().length > 0 && getComputedStyle(d).visibility !== 'hidden') {
    summary.click();
    opened++;
  }
}
return opened;
"""


def assert_escaped(html: str) -> None:
    """No payload reaches the markup as markup."""
    for p in (
        "<script>window.__xss",
        "<img src=x onerror",
        "<svg onload",
        "<iframe",
        "<details open ontoggle",
    ):
        assert p not in html, p


def assert_page_runs_nothing(driver: Any, url: str, *, inline_scripts: int, settle: float = 0.0) -> None:
    """Load `url` in Chromium, open every `<details>`, wait `settle` seconds (for a page's own
    script to fill it in), and check that no payload ran and that the page holds exactly
    `inline_scripts` inline scripts (its own, allowed by their hash)."""
    driver.get(url)
    driver.execute_script(OPEN_DETAILS_JS)
    if settle:
        time.sleep(settle)
    probe = driver.execute_script(PROBE_JS)
    assert {k: probe[k] for k in CLEAN} == CLEAN, (url, probe)
    assert probe["inline_scripts"] == inline_scripts, url
