"""The ``trio-mcp`` command: trace, call and demo against real stdio servers."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from trio_mcp._cli._call import run_call
from trio_mcp._cli._demo import run_demo
from trio_mcp._cli._trace import run_trace

ROOT = Path(__file__).resolve().parent.parent
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
#: The CLI passes the safe environment on; inherit ours so the child finds trio_mcp.
SERVER = [sys.executable, PAPER_TRAIL]


@pytest.mark.spec("SI-01")
async def test_trace_prints_frames_requests_and_the_exit_step() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_trace(SERVER, out=out, inherit_env=True)
    text = out.getvalue()
    assert status == 0, text
    assert '-> {"jsonrpc":"2.0","id":1,"method":"initialize"' in text
    assert '<- {"jsonrpc":"2.0","id":2,"result":{"tools":' in text
    assert "\x1b[" not in text  # no colour when not a terminal
    assert "tools/list" in text
    assert "ping" in text
    assert "exited after stdin was closed (status 0)" in text


async def test_trace_json_lines() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        await run_trace(SERVER, out=out, as_json=True, inherit_env=True)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    frames = [line for line in lines if line["type"] == "frame"]
    requests = [line for line in lines if line["type"] == "request"]
    assert frames[0]["direction"] == "out"
    assert frames[0]["message"]["method"] == "initialize"
    methods = [r["method"] for r in requests]
    assert methods[:2] == ["initialize", "tools/list"]
    assert methods[-1] == "ping"
    assert all(r["state"] == "completed" for r in requests)
    assert lines[-1] == {"type": "exit", "step": "STDIN_CLOSED", "returncode": 0}


async def test_trace_reports_a_server_that_fails_to_start() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_trace([sys.executable, "-c", "raise SystemExit(4)"], out=out)
    assert status == 1
    assert "exited with status 4" in out.getvalue()


async def test_call_prints_result_and_progress() -> None:
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_call(
            SERVER,
            "prepare_report",
            {"steps": 2},
            out=out,
            err=err,
            inherit_env=True,
            handle_signals=False,
        )
    assert status == 0
    assert out.getvalue() == "report ready (2 steps, 3 orders)\n"
    assert "progress [###############...............] 1/2 step 1/2" in err.getvalue()


async def test_call_tool_error_exits_1() -> None:
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_call(
            SERVER,
            "order_status",
            {"order_id": "PT-0000"},
            out=out,
            err=err,
            inherit_env=True,
            handle_signals=False,
        )
    assert status == 1
    assert out.getvalue() == "no order PT-0000\n"


@pytest.mark.spec("CN-01")
async def test_call_ctrl_c_cancels_the_call_and_tells_the_server() -> None:
    # The real command, so SIGINT reaches it the way a terminal sends it.
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "trio_mcp",
            "call",
            "--inherit-env",
            "--",
            *SERVER,
            "prepare_report",
            '{"steps": 1000}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert process.stderr is not None
        with trio.fail_after(30):
            seen = b""
            while b"progress" not in seen:  # the call is under way
                chunk = await process.stderr.receive_some()
                assert chunk, seen
                seen += chunk
            os.kill(process.pid, signal.SIGINT)
            rest = b""
            while chunk := await process.stderr.receive_some():
                rest += chunk
            assert await process.wait() == 130
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()
    assert b"cancelled (the server was told)" in rest


async def test_demo_narrates_the_whole_lifecycle() -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out)
    text = out.getvalue()
    for step in (
        "1. Handshake",
        "2. Discovery",
        "3. A tool call",
        "4. A long call",
        "5. A call cancelled",
        "6. A call that times out",
        "7. Ping",
        "8. Shutdown",
    ):
        assert step in text
    assert "progress 3/3: step 3/3" in text
    assert '"method":"notifications/cancelled"' in text
    assert '"reason":"the user pressed stop"' in text
    assert "server stderr: sleep: handler cancelled after" in text
    assert "server handler stopped: True" in text
    assert "responses that arrived for cancelled requests: 0" in text
    assert "RequestTimeout: tools/call timed out after 1s without progress" in text
    assert "exited after stdin was closed" in text


def run_demo_command(cwd: Path, import_root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m trio_mcp demo`` run in *cwd*, importing trio_mcp from *import_root*."""
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(import_root)},
    )


def test_scripts_demo_command_runs() -> None:
    proc = run_demo_command(ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "8. Shutdown" in proc.stdout


def test_demo_finds_its_server_outside_the_checkout(tmp_path: Path) -> None:
    # As installed from the wheel: the package alone on the path (no examples/
    # beside it) and the working directory elsewhere. The demo's server must
    # come from the package itself.
    site = tmp_path / "site-packages"
    shutil.copytree(
        ROOT / "trio_mcp", site / "trio_mcp", ignore=shutil.ignore_patterns("__pycache__")
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_demo_command(elsewhere, import_root=site)
    assert proc.returncode == 0, proc.stderr
    assert f"{sys.executable} -m trio_mcp.examples.paper_trail" in proc.stdout
    assert "8. Shutdown" in proc.stdout


async def test_demo_runs_the_server_script_given_with_server() -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out, server=Path(PAPER_TRAIL))
    text = out.getvalue()
    assert f"0. Spawn the server: {sys.executable} {PAPER_TRAIL} " in text
    assert "exited after stdin was closed" in text
