"""The built documentation, checked as a reader sees it: in headless Chromium.

The site is built once (``scripts/docs`` does the same build; set
``TRIO_MCP_DOCS_HTML`` to a built ``html`` folder to check that one instead).
Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
no port, nothing but this process can reach it). Each page must load without a
console error or a failed request, show text, have every image loaded, and
have every internal link lead to a page (and anchor) that exists. A screenshot
of each page is saved under ``docs/_build/screenshots/``.

Marked ``browser`` (``pytest -m browser``); it runs in the normal suite when
Chromium is installed (``.ci/run``'s docs step installs Debian's ``chromium``).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "docs" / "_build" / "screenshots"

#: The pages a newcomer meets first, and the screenshot names.
PAGES = {
    "index.html": "index.png",
    "tutorial/index.html": "tutorial.png",
    "tutorial/cancellation.html": "tutorial-cancellation.png",
    "explanation/cancellation.html": "cancellation.png",
    "explanation/lifecycle.html": "lifecycle.png",
    # A request timeline, drawn from a real session as the page was built.
    "explanation/timeline.html": "timeline-page.png",
    "reference/api/trio_mcp.html": "server-reference.png",
    # The spec map: every code and test link goes to a line of a source page.
    "_generated/spec/cancellation.html": "spec-cancellation.png",
}

pytestmark = pytest.mark.browser


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    given = os.environ.get("TRIO_MCP_DOCS_HTML")
    if given:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run(
            [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "docs", out],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        yield Path(out)


class Browser:
    """Headless Chromium over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, executable: str, profile: str) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "--window-size=1280,900",
            "about:blank",
        ]
        # Chromium reads commands on fd 3 and writes answers on fd 4: bash
        # moves the two pipe ends there (whatever fds 3 and 4 are in this process).
        moves = f"3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-"
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" {moves}', "bash", executable, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str) -> dict[str, Any]:
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            event = self._read()
            if event.get("method") == method:
                return event
            self.events.append(event)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            assert chunk, "Chromium closed its DevTools pipe"
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def close(self) -> None:
        with contextlib.suppress(OSError):  # it may be gone already
            os.write(
                self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0"
            )
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        os.close(self._to_browser)
        os.close(self._from_browser)


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


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def _anchors(path: Path) -> set[str]:
    parser = _Page()
    parser.feed(path.read_text(errors="replace"))
    return parser.ids


def _broken_links(page: Path, hrefs: list[str]) -> list[str]:
    broken = []
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme != "file":
            continue  # external links are not followed: the build is offline
        target = Path(unquote(parts.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{href} (no such file)")
        elif parts.fragment and target.suffix == ".html" and parts.fragment not in _anchors(target):
            broken.append(f"{href} (no such anchor)")
    return broken


_CHECK_PAGE = """(() => ({
  text: document.body ? document.body.innerText.trim().length : 0,
  title: document.title,
  images: Array.from(document.images).map(
    i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
}))()"""


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(
                "console: "
                + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Runtime.exceptionThrown":
            found.append("exception: " + params["exceptionDetails"].get("text", ""))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append("log: " + params["entry"]["text"] + " " + params["entry"].get("url", ""))
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append("request failed: " + params.get("errorText", ""))
    return found


@pytest.mark.parametrize("page", list(PAGES))
def test_page_reads_well_in_a_browser(site: Path, browser: Browser, page: str) -> None:
    path = site / page
    assert path.is_file(), f"{page} was not built"
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable", session=session)
        browser.events.clear()
        browser.send("Page.navigate", {"url": path.as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired")
        state = browser.send(
            "Runtime.evaluate", {"expression": _CHECK_PAGE, "returnByValue": True}, session=session
        )["result"]["value"]
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        (SCREENSHOTS / PAGES[page]).write_bytes(base64.b64decode(shot["data"]))
        # Events that arrived with the answers above.
        errors = _errors(browser.events)
    finally:
        browser.send("Target.closeTarget", {"targetId": target})
    assert state["text"] > 200, f"{page} is (almost) blank"
    assert state["title"], f"{page} has no title"
    assert [image["src"] for image in state["images"] if not image["ok"]] == []
    assert _broken_links(path, state["links"]) == []
    assert errors == []


def test_the_lifecycle_page_shows_the_diagrams(site: Path) -> None:
    page = (site / "explanation" / "lifecycle.html").read_text()
    assert page.count('class="diagram') >= 2
    assert page.count(".svg") >= 2
