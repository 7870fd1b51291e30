"""Failures the fuzzing campaign (bench/fuzz.py) found, each kept as a test.

Each saved case under ``tests/fuzz_regressions/`` (the minimized frames, the
transport and side, the seed that found it, the broken invariant) is replayed
through the fuzzer's own target and invariants; the fix of each is also tested
directly here, on its own terms.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest
import trio
from http_helpers import init_body, make_server, post_headers, raw_client, running

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "tests" / "fuzz_regressions").glob("*.json"))
MODERN = "2026-07-28"


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_a_saved_fuzz_case_no_longer_fails(case: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fuzz.py"), "--replay", str(case)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(": ok")


def test_there_are_saved_cases() -> None:
    assert len(CASES) >= 2


@pytest.mark.spec("BP-18")
@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_batch_post_in_a_revision_without_batches_is_refused_not_left_hanging(
    json_response: bool,
) -> None:
    # Found by the fuzzer (server-http-json-4): the session answered the array
    # with one id-null error, and the POST's stream waited for the array's
    # request ids forever.
    app_options = {"json_response": json_response}
    async with running(make_server(), **app_options) as (url, _), raw_client(url) as http:
        answer = await http.post("/mcp", content=init_body(), headers=post_headers())
        session = answer.headers["mcp-session-id"]
        version = {"mcp-protocol-version": "2025-11-25"}
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        await http.post("/mcp", content=note, headers=post_headers(session, **version))
        batch = b'[{"jsonrpc":"2.0","id":18,"method":"ping"},{"jsonrpc":"2.0","id":"r","result":0}]'
        with trio.fail_after(10):
            response = await http.post(
                "/mcp", content=batch, headers=post_headers(session, **version)
            )
        assert response.status_code == 400
        error = response.json()
        assert (error["id"], error["error"]["code"]) == (None, -32600)
        assert "revision 2025-11-25 has no batches" in error["error"]["message"]
        ping = b'{"jsonrpc":"2.0","id":19,"method":"ping"}'
        response = await http.post("/mcp", content=ping, headers=post_headers(session, **version))
        assert response.status_code == 200


async def test_a_listen_in_json_response_mode_is_answered_on_a_stream() -> None:
    # Found by the fuzzer (server-http-modern-json-6): one JSON body for
    # subscriptions/listen never comes, so the POST hung; it is SSE instead.
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 23,
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
    }
    headers = post_headers(**{"mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"})
    async with (
        running(make_server(), json_response=True) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(10.0)) as http,
    ):
        with trio.fail_after(10):
            async with http.stream(
                "POST", "/mcp", content=orjson.dumps(body), headers=headers
            ) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
