"""Trace context across SDKs, for real: the official Python SDK (``mcp``
2.3.0, which emits spans and injects trace context by default) and ours, each
in its own process with the OpenTelemetry SDK configured globally.

* its stdio client -> our server: our server span's parent is its client span;
* our client -> its stdio server, in both eras: its server span's parent is
  our client span.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from otel_sdk import read_spans
from test_processes import one, run_client

HERE = Path(__file__).resolve().parent


async def test_the_official_client_parents_our_server_span(tmp_path: Path) -> None:
    spans_file = tmp_path / "ours.jsonl"
    with trio.fail_after(60):
        done = await trio.run_process(
            [
                sys.executable,
                str(HERE / "sdk_traced_client.py"),
                str(HERE / "traced_server.py"),
                str(spans_file),
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    answer: dict[str, Any] = json.loads(done.stdout)
    assert answer["result"] == "hi"
    # Its client span is named its own way (not the conventions' name).
    theirs = one(answer["spans"], "MCP send tools/call echo", "CLIENT")
    ours = one(read_spans(spans_file), "tools/call echo", "SERVER")
    assert ours["trace_id"] == theirs["trace_id"]
    assert ours["parent_id"] == theirs["span_id"]
    assert ours["attributes"]["mcp.protocol.version"] == "2025-11-25"


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_our_client_parents_the_official_server_span(era: str, tmp_path: Path) -> None:
    spans_file = tmp_path / "theirs.jsonl"
    answer = await run_client(
        era, "stdio", str(HERE / "sdk_traced_server.py"), str(spans_file), "echo"
    )
    assert answer["result"] == "hi"
    ours = one(answer["spans"], "tools/call echo", "CLIENT")
    theirs = one(read_spans(spans_file), "tools/call echo", "SERVER")
    assert theirs["trace_id"] == ours["trace_id"]
    assert theirs["parent_id"] == ours["span_id"]
