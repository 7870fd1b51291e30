"""``trio-mcp check`` against servers written with the official SDKs: the Python
SDK 2.3.0, the TypeScript SDK v1 (1.32.2) and v2 (2.4.0), each over stdio and
Streamable HTTP.

The checker must run to completion and report; each check that FAILs there is
shown to be a real fault by a second assertion, made here on the recorded
frames themselves (parsed independently of the checker's verdict). A FAIL for
which this file has no such assertion fails the test: a new finding must be
looked at before it is accepted.

The lifecycle checks' outcomes, and the frames of every failure, are kept in
``peer_frames/`` (one file per server; rewritten by running these tests with
``TRIO_MCP_RECORD_PEERS=1``): each live run must agree with them, and
:func:`test_recorded_peer_failures_are_shown_by_their_frames` holds the proofs
to the recorded frames without starting any peer.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from check_helpers import INTEROP, OPTIONS, applicable, http_server, outcomes
from npm_cache import npm_install

from trio_mcp._check import CheckResult, HttpTarget, Outcome, Report, StdioTarget, run_checks
from trio_mcp._check._model import FrameRecord

HERE = Path(__file__).resolve().parent
FRAMES = HERE / "peer_frames"
RECORD = os.environ.get("TRIO_MCP_RECORD_PEERS") == "1"
#: The lifecycle checks whose outcome per peer is pinned by ``peer_frames/``.
LIFECYCLE = (
    "listen.empty",
    "listen.unsupported",
    "listen.close",
    "cancel.before-first-event",
    "cancel.duplicate-id",
    "shutdown.end-of-input",
    "shutdown.parent-death",
)

NODE_CACHE_V1 = Path(
    os.environ.get("TRIO_MCP_NODE_CACHE_V1", Path.home() / ".cache" / "trio_mcp" / "ts-sdk-v1")
)
NODE_CACHE_V2 = Path(
    os.environ.get("TRIO_MCP_NODE_CACHE_V2", Path.home() / ".cache" / "trio_mcp" / "ts-sdk-v2")
)
V1_PACKAGES: dict[str, str | None] = {"@modelcontextprotocol/sdk": "1.32.2", "zod": None}
V2_PACKAGES: dict[str, str | None] = {
    "@modelcontextprotocol/server": "2.4.0",
    "@modelcontextprotocol/client": "2.4.0",
    "@modelcontextprotocol/node": "2.1.2",
    "zod": "4.6.7",
}


def _messages(result: CheckResult) -> list[tuple[str, dict[str, Any]]]:
    """Every recorded frame that is a JSON object, with its direction, in order."""
    found = []
    for frame in result.frames:
        try:
            message = json.loads(frame.text.removeprefix("POST "))
        except ValueError:
            continue
        if isinstance(message, dict):
            found.append((frame.direction, message))
    return found


#: The code each malformed-message check expects in the refusal.
REFUSAL = {"jsonrpc.parse-error": -32700}


def _unanswered_refusal(result: CheckResult) -> None:
    """The frame the check sent last got no refusal with the code the check
    expects (no error at all, or another code)."""
    frames = [f for f in result.frames if f.direction in ("->", "<-")]
    last_sent = max(i for i, f in enumerate(frames) if f.direction == "->")
    after = [f.text for f in frames[last_sent + 1 :] if f.direction == "<-"]
    expected = REFUSAL.get(result.check_id, -32600)
    codes = []
    for text in after:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        if isinstance(message, dict) and isinstance(message.get("error"), dict):
            codes.append(message["error"].get("code"))
    assert expected not in codes, f"{result.check_id}: the server did refuse it: {codes}"


def _second_initialize_served(result: CheckResult) -> None:
    """On a session in operation (a ping answered first), initialize got a
    result, or a refusal that does not name its id (so it answers nothing)."""
    messages = _messages(result)
    sent = [m for d, m in messages if d == "->" and "id" in m]
    assert [m["method"] for m in sent] == ["ping", "initialize"]
    answers = {m["id"]: m for d, m in messages if d == "<-" and "id" in m}
    assert answers[sent[0]["id"]]["result"] == {}
    if sent[1]["id"] in answers:
        assert "protocolVersion" in answers[sent[1]["id"]]["result"]
    else:
        assert answers[None]["error"]["code"] == -32600


def _duplicate_served(result: CheckResult) -> None:
    messages = _messages(result)
    sent = [m for d, m in messages if d == "->" and "method" in m and "id" in m]
    ids = [m["id"] for m in sent]
    reused = {i for i in ids if ids.count(i) > 1}
    assert len(reused) == 1
    (rid,) = reused
    first = next(m for m in sent if m["id"] == rid)
    assert first["method"] == "tools/call"  # the original, still running
    results = [m["result"] for d, m in messages if d == "<-" and m.get("id") == rid]
    # The reuse (ping / server/discover) was served as a request of its own.
    assert any("content" not in r for r in results), results


def _empty_listen_held_open(result: CheckResult) -> None:
    """A listen asking for nothing was acknowledged and never answered: the
    checker ended it (a cancel, or closing its stream)."""
    messages = _messages(result)
    (listen,) = [m for d, m in messages if d == "->" and m.get("method") == "subscriptions/listen"]
    assert listen["params"]["notifications"] == {}
    acks = [
        m
        for d, m in messages
        if d == "<-"
        and m.get("method") == "notifications/subscriptions/acknowledged"
        and m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen["id"]
    ]
    assert acks
    assert not [m for d, m in messages if d == "<-" and m.get("id") == listen["id"]]
    ended = [f.text for f in result.frames if f.direction in ("->", "--")][-1]
    assert str(listen["id"]) in ended, ended


def _alive_after_end_of_input(result: CheckResult) -> None:
    """Its input closed with a call in flight, the server never exited."""
    notes = [f.text for f in result.frames if f.direction == "--"]
    closed = max(i for i, text in enumerate(notes) if text == "stdin closed")
    assert not [text for text in notes[closed:] if text.startswith("the server exited")]
    sent = [m for d, m in _messages(result) if d == "->" and m.get("method") == "tools/call"]
    assert sent


def _alive_after_parent_death(result: CheckResult) -> None:
    """Its parent SIGKILLed with a call in flight, the server never exited."""
    notes = [f.text for f in result.frames if f.direction == "--"]
    assert "sent SIGKILL" in notes
    assert not [text for text in notes if "exited after its parent died" in text]
    assert [m for d, m in _messages(result) if d == "->" and m.get("method") == "tools/call"]


def _unknown_version_served(result: CheckResult) -> None:
    messages = _messages(result)
    (request,) = [
        m
        for d, m in messages
        if d == "->"
        and m.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
        == "2099-01-01"
    ]
    answers = [m for d, m in messages if d == "<-" and m.get("id") == request["id"]]
    assert answers
    assert "result" in answers[0]


def _foreign_origin_served(result: CheckResult) -> None:
    texts = [f"{f.direction} {f.text}" for f in result.frames]
    sent = next(i for i, t in enumerate(texts) if "Origin: http://evil.example" in t)
    assert texts[sent].startswith("-> POST")
    assert texts[sent + 1].startswith("<- HTTP 200"), texts[sent + 1]


#: For each check that may FAIL against a peer, what the frames must show.
PROOFS: dict[str, Callable[[CheckResult], None]] = {
    "jsonrpc.parse-error": _unanswered_refusal,
    "jsonrpc.wrong-version": _unanswered_refusal,
    "jsonrpc.bad-ids": _unanswered_refusal,
    "jsonrpc.result-and-error": _unanswered_refusal,
    "handshake.second-initialize": _second_initialize_served,
    "cancel.duplicate-id": _duplicate_served,
    "listen.empty": _empty_listen_held_open,
    "shutdown.end-of-input": _alive_after_end_of_input,
    "shutdown.parent-death": _alive_after_parent_death,
    "modern.unknown-version": _unknown_version_served,
    "http.origin-host": _foreign_origin_served,
}


def _judge(report: Report, eras: tuple[str, ...], transport: str = "stdio") -> None:
    assert report.eras == eras
    assert set(outcomes(report)) == applicable(transport)
    for result in report.results:
        if result.outcome is Outcome.FAIL:
            assert result.check_id in PROOFS, f"an unexamined finding: {result.detail}"
            PROOFS[result.check_id](result)
        if result.outcome is Outcome.SKIP:
            assert result.detail
    # The rules every one of these servers keeps, checked to pass.
    passed = {c for (_, c), o in outcomes(report).items() if o is Outcome.PASS}
    kept = {"handshake.three-steps", "jsonrpc.unknown-method", "concurrency.burst"}
    assert kept <= passed


def _pinned(name: str, report: Report) -> dict[str, str]:
    """Compare the lifecycle checks' outcomes with ``peer_frames/NAME.json``
    (write it instead with ``TRIO_MCP_RECORD_PEERS=1``); the outcomes by
    ``era check``."""
    found = {
        f"{era} {check}": outcome.value
        for (era, check), outcome in outcomes(report).items()
        if check in LIFECYCLE
    }
    path = FRAMES / f"{name}.json"
    if RECORD:
        failures = [r.to_json() for r in report.results if r.outcome is Outcome.FAIL]
        FRAMES.mkdir(exist_ok=True)
        text = json.dumps({"server": name, "lifecycle": found, "failures": failures}, indent=1)
        path.write_text(text.replace(str(Path.home()), "~") + "\n")
    recorded = json.loads(path.read_text())
    assert found == recorded["lifecycle"]
    return found


def _stdio(argv: Sequence[str]) -> StdioTarget:
    return StdioTarget(tuple(argv))


async def _over_http(argv: list[str]) -> Report:
    async with (
        http_server(argv, from_stdout=True) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        return await run_checks(HttpTarget(url, client), OPTIONS)


def _v1() -> Path:
    assert shutil.which("node"), "node is needed for the TypeScript SDK tests"
    return npm_install(NODE_CACHE_V1, V1_PACKAGES, [HERE / "ts_v1_check_server.mjs"])


def _v2() -> Path:
    assert shutil.which("node"), "node is needed for the TypeScript SDK tests"
    return npm_install(NODE_CACHE_V2, V2_PACKAGES, sorted(INTEROP.glob("ts_v2_*.mjs")))


PYTHON_SERVER = [sys.executable, str(INTEROP / "sdk_server.py"), "sleep"]


@pytest.mark.spec("BP-07", "SB-15")
async def test_check_reports_on_an_official_python_sdk_server() -> None:
    report = await run_checks(_stdio(PYTHON_SERVER), OPTIONS)
    _judge(report, ("legacy", "modern"))
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("legacy", "jsonrpc.parse-error") in failed
    pinned = _pinned("python-sdk-2.3.0-stdio", report)
    assert pinned["modern listen.empty"] == "FAIL"
    assert pinned["legacy shutdown.parent-death"] == "PASS"


@pytest.mark.spec("HT-02", "SB-15")
async def test_check_reports_on_an_official_python_sdk_server_over_http() -> None:
    report = await _over_http([*PYTHON_SERVER, "http"])
    _judge(report, ("legacy", "modern"), "http")
    pinned = _pinned("python-sdk-2.3.0-http", report)
    assert pinned["modern listen.empty"] == "FAIL"
    assert pinned["legacy cancel.duplicate-id"] == "FAIL"


@pytest.mark.spec("BP-07", "SI-11")
async def test_check_reports_on_a_typescript_sdk_v1_server() -> None:
    cache = _v1()
    report = await run_checks(
        _stdio(["node", str(cache / "ts_v1_check_server.mjs"), "stdio"]), OPTIONS
    )
    _judge(report, ("legacy",))
    assert all(r.outcome is Outcome.SKIP for r in report.results if r.era == "modern")
    pinned = _pinned("ts-sdk-1.32.2-stdio", report)
    # It does not end on end of input while a call runs, nor when its parent dies.
    assert pinned["legacy shutdown.end-of-input"] == "FAIL"
    assert pinned["legacy shutdown.parent-death"] == "FAIL"


@pytest.mark.spec("HT-02", "BP-05")
async def test_check_reports_on_a_typescript_sdk_v1_server_over_http() -> None:
    cache = _v1()
    report = await _over_http(["node", str(cache / "ts_v1_check_server.mjs"), "http"])
    _judge(report, ("legacy",), "http")
    pinned = _pinned("ts-sdk-1.32.2-http", report)
    assert pinned["legacy cancel.duplicate-id"] == "FAIL"


@pytest.mark.spec("BP-05", "SB-15")
async def test_check_reports_on_a_typescript_sdk_v2_server() -> None:
    cache = _v2()
    report = await run_checks(_stdio(["node", str(cache / "ts_v2_server.mjs"), "stdio"]), OPTIONS)
    _judge(report, ("legacy", "modern"))
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("modern", "cancel.duplicate-id") in failed
    pinned = _pinned("ts-sdk-2.4.0-stdio", report)
    assert pinned["modern listen.empty"] == "FAIL"


@pytest.mark.spec("HT-02", "HM-13")
async def test_check_reports_on_a_typescript_sdk_v2_server_over_http() -> None:
    cache = _v2()
    report = await _over_http(["node", str(cache / "ts_v2_server.mjs"), "http", "stateless"])
    _judge(report, ("legacy", "modern"), "http")
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("legacy", "http.origin-host") in failed
    pinned = _pinned("ts-sdk-2.4.0-http", report)
    assert pinned["modern cancel.before-first-event"] == "PASS"


@pytest.mark.parametrize("path", sorted(FRAMES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_peer_failures_are_shown_by_their_frames(path: Path) -> None:
    recorded = json.loads(path.read_text())
    assert recorded["failures"], "every peer fails some check"
    for failure in recorded["failures"]:
        result = CheckResult(
            check_id=failure["id"],
            title=failure["title"],
            rows=tuple(failure["rows"]),
            transport=failure["transport"],
            era=failure["era"],
            outcome=Outcome(failure["outcome"]),
            detail=failure["detail"],
            seconds=failure["seconds"],
            frames=tuple(
                FrameRecord(f["at"], f["direction"], f["text"]) for f in failure["frames"]
            ),
        )
        assert result.check_id in PROOFS, f"an unexamined finding: {result.detail}"
        PROOFS[result.check_id](result)
