"""Text on the overview reads at WCAG AA (4.5:1) in a real browser, on the tinted rows too: the red and
grey of a snapshot-overwritten row's why stood at 3.3:1 on its red tint, the failing pill at 4:1."""

from __future__ import annotations

import pytest

from tests.test_browser import browser, sync_api  # noqa: F401 (fixtures)
from tests.test_browser_phone import _page, week  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(sync_api is None, reason="playwright is not installed")

# Each text element's colour against the first opaque background behind it, as WCAG computes it.
CONTRASTS = """
selector => Array.from(document.querySelectorAll(selector)).filter(e => e.innerText.trim()).map(element => {
  const rgb = text => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => [r, g, b].map(c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  let behind = element;
  while (behind && rgb(getComputedStyle(behind).backgroundColor)[3] === 0) { behind = behind.parentElement; }
  const background = behind ? rgb(getComputedStyle(behind).backgroundColor) : [255, 255, 255];
  const [a, b] = [luminance(rgb(getComputedStyle(element).color)), luminance(background)].sort((x, y) => y - x);
  return [element.innerText.trim().slice(0, 40), Math.round((a + 0.05) / (b + 0.05) * 100) / 100];
})
"""


def test_the_overviews_rows_read_at_aa_contrast(browser, live_server, week, staff):
    context, page = _page(browser, live_server, 1440)
    try:
        page.goto(f"{live_server.url}/")
        assert page.locator("tr.sev-0").count() == 1  # the snapshot-overwritten row, on its red tint
        found = page.evaluate(CONTRASTS, "table.overview tbody :is(.why, .reason, .sub, .pill, .tag, .verdict)")
        assert found and [(text, ratio) for text, ratio in found if ratio < 4.5] == []
    finally:
        context.close()
