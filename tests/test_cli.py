"""The ``trio-mcp`` command: trace, call and demo against real stdio servers, in each era.

The servers: the bundled dual-era Paper Trail (``examples/paper_trail.py``),
and the same tools restricted to 2026-07-28 (``tests/paper_trail_modern_only.py``)
or to the handshake era (``tests/paper_trail_legacy_only.py``). ``--era auto``
works with all three; an explicit era the server does not speak is a one-line
error (``tests/test_cli_errors.py``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp._cli import _era, _main
from trio_mcp._cli._call import run_call
from trio_mcp._cli._demo import run_demo
from trio_mcp._cli._trace import print_records, record_row, run_trace
from trio_mcp._client._connect import forget_eras
from trio_mcp._records import call_rounds
from trio_mcp.testing import open_memory_client

ROOT = Path(__file__).resolve().parent.parent
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
MODERN_ONLY = ROOT / "tests" / "paper_trail_modern_only.py"
LEGACY_ONLY = ROOT / "tests" / "paper_trail_legacy_only.py"
#: The CLI passes the safe environment on; inherit ours so the child finds trio_mcp.
SERVER = [sys.executable, PAPER_TRAIL]
#: Each server by the eras it speaks.
SERVERS = {
    "dual": SERVER,
    "modern-only": [sys.executable, str(MODERN_ONLY)],
    "legacy-only": [sys.executable, str(LEGACY_ONLY)],
}
#: (server, --era) -> the era the command gets; absent: the command fails.
ERA_GOT = {
    ("dual", "auto"): "modern",
    ("dual", "modern"): "modern",
    ("dual", "legacy"): "legacy",
    ("modern-only", "auto"): "modern",
    ("modern-only", "modern"): "modern",
    ("legacy-only", "auto"): "legacy",
    ("legacy-only", "legacy"): "legacy",
}
VERSION = {"modern": "2026-07-28", "legacy": "2025-11-25"}
OPENING = {"modern": "server/discover", "legacy": "initialize"}


@pytest.fixture(autouse=True)
def _probe_afresh() -> None:
    """Every test probes its server: the client remembers a handshake-era
    command for the process (VR-12), which would make the first frame of a
    later test depend on the order the tests ran in."""
    forget_eras()


@pytest.mark.spec("SI-01")
async def test_trace_prints_frames_requests_and_the_exit_step() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_trace(SERVER, out=out, inherit_env=True)
    text = out.getvalue()
    assert status == 0, text
    # auto: the era probe is the first frame, and this server answers it.
    assert '-> {"jsonrpc":"2.0","id":1,"method":"server/discover"' in text
    assert '"method":"initialize"' not in text
    assert (
        "== era: modern (2026-07-28), --era auto: the server answered the server/discover probe"
        in text
    )
    assert '<- {"jsonrpc":"2.0","id":2,"result":{"tools":' in text
    assert "\x1b[" not in text  # no colour when not a terminal
    assert "tools/list" in text
    assert "== ping (2026-07-28: server/discover)" in text
    assert "exited after stdin was closed (status 0)" in text


async def test_trace_with_era_legacy_starts_with_initialize() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_trace(SERVER, out=out, inherit_env=True, era="legacy")
    text = out.getvalue()
    assert status == 0, text
    assert '-> {"jsonrpc":"2.0","id":1,"method":"initialize"' in text
    assert '"method":"server/discover"' not in text
    assert "== era: legacy (2025-11-25), --era legacy: as asked, initialize answered" in text
    assert "== initialized: paper-trail 1.0, protocol 2025-11-25" in text
    assert '-> {"jsonrpc":"2.0","id":3,"method":"ping"}' in text


def json_lines(text: str) -> dict[str, list[dict[str, Any]]]:
    """``trace --json`` output by line type."""
    lines: dict[str, list[dict[str, Any]]] = {}
    for line in text.splitlines():
        parsed = json.loads(line)
        lines.setdefault(parsed["type"], []).append(parsed)
    return lines


@pytest.mark.parametrize(
    ("era", "methods"),
    [
        # auto: the probe answered, then 2026-07-28's ping, itself a server/discover.
        ("auto", ["server/discover", "tools/list", "server/discover"]),
        ("legacy", ["initialize", "tools/list", "ping"]),
    ],
)
async def test_trace_json_lines(era: _era.EraOption, methods: list[str]) -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        await run_trace(SERVER, out=out, as_json=True, inherit_env=True, era=era)
    lines = json_lines(out.getvalue())
    frames, requests = lines["frame"], lines["request"]
    assert frames[0]["direction"] == "out"
    assert frames[0]["message"]["method"] == methods[0]
    got = "legacy" if era == "legacy" else "modern"
    how = (
        "as asked, initialize answered"
        if era == "legacy"
        else ("the server answered the server/discover probe")
    )
    assert lines["era"] == [
        {"type": "era", "era": got, "protocol_version": VERSION[got], "choice": era, "how": how}
    ]
    assert [r["method"] for r in requests] == methods
    assert all(r["state"] == "completed" for r in requests)
    assert all(r["round"] is None and not r["input_required"] for r in requests)
    assert out.getvalue().splitlines()[-1] == json.dumps(
        {"type": "exit", "step": "STDIN_CLOSED", "returncode": 0}
    )


@pytest.mark.spec("SI-14")
@pytest.mark.parametrize(("server", "era"), sorted(ERA_GOT))
async def test_trace_in_each_era_against_each_server(server: str, era: _era.EraOption) -> None:
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_trace(
            SERVERS[server], out=out, err=err, as_json=True, inherit_env=True, era=era
        )
    assert (status, err.getvalue()) == (0, "")
    got = ERA_GOT[server, era]
    lines = json_lines(out.getvalue())
    assert [(e["era"], e["protocol_version"]) for e in lines["era"]] == [(got, VERSION[got])]
    methods = [r["method"] for r in lines["request"]]
    # The session opened with its era's request; auto probed first, whatever it got.
    opening = (
        ["server/discover", OPENING[got]] if (era, got) == ("auto", "legacy") else [OPENING[got]]
    )
    assert methods[: len(opening)] == opening
    assert methods[len(opening)] == "tools/list"
    assert lines["exit"] == [{"type": "exit", "step": "STDIN_CLOSED", "returncode": 0}]


async def test_trace_says_when_auto_skipped_the_probe_of_a_known_handshake_server() -> None:
    # VR-12: a command found to be handshake-era is not probed again in this process.
    first, second = io.StringIO(), io.StringIO()
    with trio.fail_after(60):
        await run_trace(SERVERS["legacy-only"], out=first, inherit_env=True)
        await run_trace(SERVERS["legacy-only"], out=second, inherit_env=True)
    assert (
        "== era: legacy (2025-11-25), --era auto: the server/discover probe was refused "
        "(Method not found: server/discover), so initialize"
    ) in first.getvalue()
    assert (
        "== era: legacy (2025-11-25), --era auto: initialize without a probe "
        "(a handshake-era server, known or restarted)"
    ) in second.getvalue()
    assert '"method":"server/discover"' not in second.getvalue()


def two_question_server() -> trio_mcp.Server:
    """A server whose ``confirm`` tool asks twice: three rounds in 2026-07-28."""
    server = trio_mcp.Server("rounds", version="1.0")
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

    @server.tool()
    async def confirm(ctx: trio_mcp.Context) -> str:
        first = await ctx.elicit({"mode": "form", "message": "Sure?", "requestedSchema": form})
        second = await ctx.elicit({"mode": "form", "message": "Really?", "requestedSchema": form})
        return f"{first.action} {second.action} in round {ctx.round}"

    return server


async def say_yes(request: trio_mcp.FormElicitation) -> trio_mcp.types.ElicitResult:
    return trio_mcp.types.ElicitResult(action="accept", content={"ok": True})


async def test_the_request_table_tells_the_rounds_of_a_call_as_one_story() -> None:
    async with open_memory_client(
        two_question_server(), era="modern", elicitation=say_yes
    ) as client:
        start = trio.current_time()
        result = await client.call_tool("confirm", {})
        await client.call_tool("confirm", {})  # a second call: its own story
        records = client.session.requests()
    assert result.content[0].text == "accept accept in round 3"  # type: ignore[union-attr]
    calls = sorted((r for r in records if r.method == "tools/call"), key=lambda r: r.queued_at)
    ids = [r.id for r in calls]
    rounds = call_rounds(records)
    assert [(rounds[r.direction, r.id].number, rounds[r.direction, r.id].first) for r in calls] == [
        (1, ids[0]),
        (2, ids[0]),
        (3, ids[0]),
        (1, ids[3]),
        (2, ids[3]),
        (3, ids[3]),
    ]
    out = io.StringIO()
    print_records(out, "requests", records, start)
    rows = [line for line in out.getvalue().splitlines() if "tools/call" in line]
    assert rows[0].endswith(f"round 1 of call {ids[0]}: input required")
    assert f"{ids[1]}   + tools/call" in rows[1]
    assert rows[1].endswith(f"round 2 of call {ids[0]}: input required")
    assert rows[2].endswith(f"round 3 of call {ids[0]}: the answer")
    assert rows[3].endswith(f"round 1 of call {ids[3]}: input required")
    row = record_row(calls[2], start, rounds[calls[2].direction, calls[2].id])
    assert (row["round"], row["first_round"], row["follows"], row["input_required"]) == (
        3,
        ids[0],
        ids[1],
        False,
    )
    assert record_row(calls[0], start)["input_required"] is True


def test_the_era_choices_of_the_parser_are_the_clients() -> None:
    # _main keeps its own copy so that --help loads no client code.
    assert _main.ERA_CHOICES == _era.ERA_CHOICES


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


@pytest.mark.spec("SI-14")
@pytest.mark.parametrize(("server", "era"), sorted(ERA_GOT))
async def test_call_in_each_era_against_each_server(server: str, era: _era.EraOption) -> None:
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_call(
            SERVERS[server],
            "order_status",
            {"order_id": "PT-1042"},
            out=out,
            err=err,
            inherit_env=True,
            handle_signals=False,
            era=era,
            verbose=True,
        )
    got = ERA_GOT[server, era]
    assert status == 0
    assert out.getvalue() == "PT-1042: shipped, carrier Parcelforce, ETA 2 Dec 2026\n"
    assert err.getvalue().startswith(f"era: {got} ({VERSION[got]}), --era {era}: ")
    assert len(err.getvalue().splitlines()) == 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
async def test_call_says_the_era_on_a_terminal_only(terminal: bool) -> None:
    # stdout is the result alone; the era line is for a person at a terminal.
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    with trio.fail_after(30):
        status = await run_call(
            SERVER,
            "order_status",
            {"order_id": "PT-2001"},
            out=out,
            err=err,
            inherit_env=True,
            handle_signals=False,
        )
    assert status == 0
    assert out.getvalue() == "PT-2001: processing, carrier not assigned, ETA 5 Dec 2026\n"
    expected = (
        "era: modern (2026-07-28), --era auto: the server answered the server/discover probe\n"
    )
    assert err.getvalue() == (expected if terminal else "")


async def test_call_of_a_tool_that_asks_the_user_is_a_tool_error_without_a_handler() -> None:
    # The CLI declares no elicitation: return_order says so as a tool error.
    out, err = io.StringIO(), io.StringIO()
    with trio.fail_after(30):
        status = await run_call(
            SERVER,
            "return_order",
            {"order_id": "PT-1042"},
            out=out,
            err=err,
            inherit_env=True,
            handle_signals=False,
        )
    assert status == 1
    assert out.getvalue() == (
        "return_order asks the user to confirm: the client must declare the elicitation "
        "capability\n"
    )


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


HANDSHAKE_STEPS = (
    "0. Spawn the server",
    "1. Handshake",
    "2. Discovery",
    "3. A tool call",
    "4. A long call",
    "5. A call that asks the user",
    "6. A call cancelled",
    "7. A call that times out",
    "8. Ping",
    "9. Shutdown",
)
MODERN_STEPS = (
    "0. Spawn the same server again",
    "1. No handshake",
    "2. Discovery",
    "3. The same tool call",
    "4. A call that asks the user: an input-required round trip",
    "5. A call cancelled",
    "6. Shutdown",
)
PART_1 = "######## Part 1: the handshake era (--era legacy)"
PART_2 = "######## Part 2: 2026-07-28, no handshake (--era modern)"


def parts(text: str) -> tuple[str, str]:
    """The demo's two parts (an absent part is empty)."""
    before, _, modern = text.partition(PART_2)
    _, _, legacy = before.partition(PART_1)
    return legacy, modern


def check_handshake_part(legacy: str) -> None:
    """The handshake era's narration, as it was before 2026-07-28 joined."""
    for step in HANDSHAKE_STEPS:
        assert f"== {step}" in legacy, step
    assert "era: legacy (2025-11-25), --era legacy: as asked, initialize answered" in legacy
    assert '"method":"initialize"' in legacy
    assert '"method":"server/discover"' not in legacy
    assert "progress 3/3: step 3/3" in legacy
    # The question was a server request inside the one tools/call.
    assert '"method":"elicitation/create"' in legacy
    assert "result: PT-1042: return booked (asked in round 1, answered in round 1)" in legacy
    assert "server stderr: return_order: run 2" not in legacy
    assert '"method":"notifications/cancelled"' in legacy
    assert '"reason":"the user pressed stop"' in legacy
    assert "server stderr: sleep: handler cancelled after" in legacy
    assert "server handler stopped: True" in legacy
    assert "responses that arrived for cancelled requests: 0" in legacy
    assert "RequestTimeout: tools/call timed out after 1s without progress" in legacy
    assert "exited after stdin was closed" in legacy
    check_for_people(legacy)


def check_for_people(part: str) -> None:
    """Enums and statistics read by people: no reprs; the repeated tools/list explained."""
    assert "CancelOrigin." not in part
    assert "SessionStatistics(" not in part
    assert re.search(r"record \d+: cancelled, origin caller;", part)
    table = part.split("\n  client statistics\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert 3 <= len(table) <= 8, table
    assert re.search(r"\bstate\s+closed\b", table[0])
    assert any(re.search(r"\bcompleted\s+\d+\b", row) for row in table)
    assert re.search(
        r"\(the tools/list above, id \d+, was the client's own, sent as it connected", part
    )


def check_modern_part(modern: str) -> None:
    """2026-07-28: no handshake, the same call, the rounds, the cancel."""
    for step in MODERN_STEPS:
        assert f"== {step}" in modern, step
    assert "era: modern (2026-07-28), --era modern: as asked, server/discover answered" in modern
    assert '"method":"initialize"' not in modern
    assert "notifications/initialized" not in modern.split("no initialized notification")[1]
    assert "result: PT-1042: shipped, carrier Parcelforce, ETA 2 Dec 2026" in modern
    # The input-required round trip: two requests, the handler ran twice.
    assert '"resultType":"input_required"' in modern
    assert "server stderr: return_order: run 1 for PT-1042" in modern
    assert "server stderr: return_order: run 2 for PT-1042" in modern
    assert "result: PT-1042: return booked (asked in round 1, answered in round 2)" in modern
    first = re.search(
        r"request (\d+): round 1 of call \1: input required; "
        r"the server asked for \['elicitation-1'\]",
        modern,
    )
    assert first, modern
    call = first.group(1)
    assert re.search(
        rf"request \d+: round 2 of call {call}: the answer; sent inputResponses "
        r"\['elicitation-1'\]; requestState echoed untouched: True",
        modern,
    )
    assert re.search(rf"\+ tools/call .* round 2 of call {call}: the answer", modern)
    # The cancelled call: the caller's, the handler stopped, nothing sent after.
    cancelled = re.search(
        r"record (\d+): cancelled, origin caller; server handler stopped: True",
        modern,
    )
    assert cancelled, modern
    assert (
        f"frames the server sent for request {cancelled.group(1)} after the cancel: 0; "
        "late events on its record: 0"
    ) in modern
    assert "exited after stdin was closed" in modern
    check_for_people(modern)


async def test_demo_narrates_the_whole_lifecycle() -> None:
    # Both eras, one after the other (the name is the one spec_notes/ cites for SI-03).
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out)
    legacy, modern = parts(out.getvalue())
    check_handshake_part(legacy)
    check_modern_part(modern)
    assert "######## Both eras: the same order_status call, the same answer: True" in modern


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_demo_with_one_era_runs_that_part_only(era: _era.EraOption) -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out, era=era)
    legacy, modern = parts(out.getvalue())
    if era == "legacy":
        check_handshake_part(legacy)
        assert modern == ""
    else:
        assert PART_1 not in out.getvalue()
        check_modern_part(modern)
        assert "as in the handshake era" not in modern  # nothing to compare with
    assert "Both eras" not in out.getvalue()


@pytest.mark.spec("SI-14")
@pytest.mark.parametrize(
    ("server", "skipped"),
    [
        (
            MODERN_ONLY,
            "skipped: the server does not speak the handshake era (--era legacy): "
            "it speaks only 2026-07-28; try --era auto or --era modern",
        ),
        (
            LEGACY_ONLY,
            "skipped: the server does not speak 2026-07-28 (--era modern): server/discover "
            "was answered with error -32601: Method not found: server/discover; "
            "try --era auto or --era legacy",
        ),
    ],
)
async def test_demo_skips_the_era_a_server_does_not_speak(server: Path, skipped: str) -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out, server=server)
    legacy, modern = parts(out.getvalue())
    if server == MODERN_ONLY:
        assert skipped in legacy
        assert "== 1. Handshake" not in legacy
        check_modern_part(modern)
    else:
        check_handshake_part(legacy)
        assert skipped in modern
        assert "== 1. No handshake" not in modern
    assert "Both eras" not in out.getvalue()


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
    assert "== 9. Shutdown" in proc.stdout
    assert "== 6. Shutdown" in proc.stdout


def test_demo_finds_its_server_outside_the_checkout(tmp_path: Path) -> None:
    # As installed from the wheel: the package alone on the path (no examples/
    # beside it) and the working directory elsewhere. The demo's server must
    # come from the package itself.
    site = tmp_path / "site-packages"
    shutil.copytree(
        ROOT / "src" / "trio_mcp", site / "trio_mcp", ignore=shutil.ignore_patterns("__pycache__")
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_demo_command(elsewhere, import_root=site)
    assert proc.returncode == 0, proc.stderr
    assert f"{sys.executable} -m trio_mcp.examples.paper_trail" in proc.stdout
    assert "== 9. Shutdown" in proc.stdout
    assert "== 6. Shutdown" in proc.stdout


async def test_demo_runs_the_server_script_given_with_server() -> None:
    out = io.StringIO()
    with trio.fail_after(60):
        await run_demo(out, server=Path(PAPER_TRAIL))
    text = out.getvalue()
    assert f"0. Spawn the server: {sys.executable} {PAPER_TRAIL} " in text
    assert "exited after stdin was closed" in text
