"""The request timeline, checked as a person sees it: in headless Chromium.

A recorded session of each era (``recorded_session.py``) is rendered with
:func:`trio_mcp.lowlevel.request_timeline`, opened from a file in Debian's
Chromium (driven as ``test_docs_browser.py`` drives it, over a pipe), and must
load without a console error or a blocked request (the page's own
Content-Security-Policy forbids fetching anything: a fetch would be an error),
draw a lane per request with visible segments, and give a screenshot that is
not blank. The screenshots are kept in ``docs/_build/screenshots/``
(``timeline-legacy.png``, ``timeline-modern.png``).

Marked ``browser``, as the documentation's browser test.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from recorded_session import Recorded, record_both
from test_docs_browser import SCREENSHOTS, Browser, _chromium, _errors

from trio_mcp.lowlevel import request_timeline

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = _chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (apt-get install chromium); .ci/run installs it")
    with tempfile.TemporaryDirectory() as profile:
        opened = Browser(executable, profile)
        try:
            yield opened
        finally:
            opened.close()


@pytest.fixture(scope="module")
def sessions() -> dict[str, Recorded]:
    return {recorded.era: recorded for recorded in record_both()}


_CHECK_PAGE = """(() => {
  const svg = document.querySelector('svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const segments = Array.from(document.querySelectorAll('rect.seg')).map(r => {
    const b = r.getBoundingClientRect();
    return b.width > 0 && b.height > 0;
  });
  return {
    width: box.width, height: box.height,
    lanes: document.querySelectorAll('g.lane').length,
    segments: segments.length, visible: segments.filter(Boolean).length,
    framesWithTitles: Array.from(document.querySelectorAll('circle.frame'))
      .filter(c => c.querySelector('title') && c.querySelector('title').textContent.length > 0)
      .length,
    frames: document.querySelectorAll('circle.frame').length,
  };
})()"""

# Run in a blank page of its own (the timeline's policy forbids images from
# data: URLs): how many distinct colours the screenshot has, and how much of it
# is not the white background.
_INSPECT_PNG = """new Promise((resolve, reject) => {
  const image = new Image();
  image.onload = () => {
    const canvas = document.createElement('canvas');
    canvas.width = image.width; canvas.height = image.height;
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    const data = context.getImageData(0, 0, image.width, image.height).data;
    const colours = new Set(); let inked = 0;
    for (let i = 0; i < data.length; i += 4) {
      colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      if (data[i] < 240 || data[i + 1] < 240 || data[i + 2] < 240) inked++;
    }
    resolve({colours: colours.size, inked: inked / (data.length / 4),
             width: image.width, height: image.height});
  };
  image.onerror = () => reject(new Error('the screenshot is not an image'));
  image.src = 'data:image/png;base64,%s';
})"""


def _open(browser: Browser, url: str) -> tuple[str, str]:
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", session=session)
    browser.events.clear()
    browser.send("Page.navigate", {"url": url}, session=session)
    browser.wait_for("Page.loadEventFired")
    return target, session


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_timeline_of_a_recorded_session_draws_in_a_browser(
    browser: Browser, sessions: dict[str, Recorded], era: str, tmp_path: Path
) -> None:
    recorded = sessions[era]
    page = tmp_path / f"timeline-{era}.html"
    page.write_text(
        request_timeline(recorded.records, frames=recorded.frames, title=f"a session ({era})")
    )
    target, session = _open(browser, page.as_uri())
    try:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        state = browser.send(
            "Runtime.evaluate", {"expression": _CHECK_PAGE, "returnByValue": True}, session=session
        )["result"]["value"]
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        errors = _errors(browser.events)
    finally:
        browser.send("Target.closeTarget", {"targetId": target})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / f"timeline-{era}.png").write_bytes(base64.b64decode(shot["data"]))

    assert errors == []
    tasks = 1 if era == "legacy" else 0
    assert state["lanes"] == len(recorded.records) + tasks
    assert state["width"] > 1000
    assert state["height"] > 30 * state["lanes"]
    assert state["segments"] > len(recorded.records)
    assert state["visible"] == state["segments"]
    assert state["frames"] > 0
    assert state["framesWithTitles"] == state["frames"]

    blank, blank_session = _open(browser, "about:blank")
    try:
        pixels = browser.send(
            "Runtime.evaluate",
            {
                "expression": _INSPECT_PNG % shot["data"],
                "awaitPromise": True,
                "returnByValue": True,
            },
            session=blank_session,
        )["result"]["value"]
    finally:
        browser.send("Target.closeTarget", {"targetId": blank})
    assert (pixels["width"], pixels["height"]) == (1400, 1000)
    # Lanes in five state colours, the grid, text: many colours, and ink on
    # a good part of the page (a blank or all-white page has one colour).
    assert pixels["colours"] > 20
    assert 0.02 < pixels["inked"] < 0.9
