"""``trio-mcp check`` against servers written with the official SDKs: the Python
SDK 2.x, the TypeScript SDK v1 (1.32.2) and v2 (2.4.0), over stdio, and the v2
over Streamable HTTP.

The checker must run to completion and report; each check that FAILs there is
shown to be a real fault by a second assertion, made here on the recorded
frames themselves (parsed independently of the checker's verdict). A FAIL for
which this file has no such assertion fails the test: a new finding must be
looked at before it is accepted.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from check_helpers import INTEROP, OPTIONS, applicable, http_server, outcomes
from npm_cache import npm_install

from trio_mcp._check import CheckResult, HttpTarget, Outcome, Report, StdioTarget, run_checks

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
            message = json.loads(frame.text)
        except ValueError:
            continue
        if isinstance(message, dict):
            found.append((frame.direction, message))
    return found


def _unanswered_refusal(result: CheckResult) -> None:
    """The frame the check sent last got no error back (no refusal at all)."""
    frames = [f for f in result.frames if f.direction in ("->", "<-")]
    last_sent = max(i for i, f in enumerate(frames) if f.direction == "->")
    after = [f.text for f in frames[last_sent + 1 :] if f.direction == "<-"]
    errors = [text for text in after if '"error"' in text]
    assert not errors, f"{result.check_id}: the server did answer {errors}"


def _second_initialize_served(result: CheckResult) -> None:
    """On a session in operation (a ping answered first), initialize got a result."""
    messages = _messages(result)
    sent = [m for d, m in messages if d == "->" and "id" in m]
    assert [m["method"] for m in sent] == ["ping", "initialize"]
    answers = {m["id"]: m for d, m in messages if d == "<-" and "id" in m}
    assert answers[sent[0]["id"]]["result"] == {}
    assert "protocolVersion" in answers[sent[1]["id"]]["result"]


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
    assert kept | ({"shutdown.end-of-input"} if transport == "stdio" else set()) <= passed


@pytest.mark.spec("BP-07")
async def test_check_reports_on_an_official_python_sdk_server() -> None:
    report = await run_checks(
        StdioTarget((sys.executable, str(INTEROP / "sdk_server.py"))), OPTIONS
    )
    _judge(report, ("legacy", "modern"))
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("legacy", "jsonrpc.parse-error") in failed


@pytest.mark.spec("BP-07")
async def test_check_reports_on_a_typescript_sdk_v1_server() -> None:
    assert shutil.which("node"), "node is needed for the TypeScript SDK tests"
    cache = npm_install(NODE_CACHE_V1, V1_PACKAGES, [INTEROP / "ts_server.mjs"])
    report = await run_checks(StdioTarget(("node", str(cache / "ts_server.mjs"))), OPTIONS)
    _judge(report, ("legacy",))
    assert all(r.outcome is Outcome.SKIP for r in report.results if r.era == "modern")


@pytest.mark.spec("BP-05")
async def test_check_reports_on_a_typescript_sdk_v2_server() -> None:
    assert shutil.which("node"), "node is needed for the TypeScript SDK tests"
    cache = npm_install(NODE_CACHE_V2, V2_PACKAGES, sorted(INTEROP.glob("ts_v2_*.mjs")))
    report = await run_checks(
        StdioTarget(("node", str(cache / "ts_v2_server.mjs"), "stdio")), OPTIONS
    )
    _judge(report, ("legacy", "modern"))
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("modern", "cancel.duplicate-id") in failed


@pytest.mark.spec("HT-02")
async def test_check_reports_on_a_typescript_sdk_v2_server_over_http() -> None:
    assert shutil.which("node"), "node is needed for the TypeScript SDK tests"
    cache = npm_install(NODE_CACHE_V2, V2_PACKAGES, sorted(INTEROP.glob("ts_v2_*.mjs")))
    argv = ["node", str(cache / "ts_v2_server.mjs"), "http", "stateless"]
    async with (
        http_server(argv, from_stdout=True) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        report = await run_checks(HttpTarget(url, client), OPTIONS)
    _judge(report, ("legacy", "modern"), "http")
    failed = {(r.era, r.check_id) for r in report.failed}
    assert ("legacy", "http.origin-host") in failed
