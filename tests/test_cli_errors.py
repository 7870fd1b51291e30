"""The ``trio-mcp`` command never ends in a traceback for a user error.

Each user error (a server that cannot start, exits at once or does not speak
MCP, does not speak the era asked for with ``--era``, bad tool arguments, an
unknown tool, a timeout, Ctrl+C, a missing ``--server`` file) ends the
command with exactly one ``trio-mcp: error: ...`` line on stderr and a
non-zero status; a bug keeps its traceback. ``main()`` runs in-process
(stderr read at the file descriptor, where the CLI and the spawned servers
write), Ctrl+C through a real process.
"""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

import trio_mcp._cli._trace
from trio_mcp._cli._main import main

ROOT = Path(__file__).resolve().parent.parent
PAPER_TRAIL = str(ROOT / "examples" / "paper_trail.py")
#: --inherit-env, so the spawned example server finds this tree's trio_mcp.
PAPER_TRAIL_CALL = ["call", "--inherit-env", "--", sys.executable, PAPER_TRAIL]
#: Paper Trail in one era only (see those scripts).
MODERN_ONLY = str(ROOT / "tests" / "paper_trail_modern_only.py")
LEGACY_ONLY = str(ROOT / "tests" / "paper_trail_legacy_only.py")
#: What --era modern against a handshake-only server, and --era legacy
#: against a 2026-07-28-only one, end with.
NOT_MODERN = (
    "the server does not speak 2026-07-28 (--era modern): server/discover was answered "
    "with error -32601: Method not found: server/discover; try --era auto or --era legacy"
)
NOT_LEGACY = (
    "the server does not speak the handshake era (--era legacy): it speaks only "
    "2026-07-28; try --era auto or --era modern"
)
#: A server that exits at once, without a word.
EXITS_AT_ONCE = [sys.executable, "-c", "pass"]
#: A program that is not an MCP server: it echoes what it reads.
ECHO = [sys.executable, "-c", "import sys\nfor line in sys.stdin: print(line, end='', flush=True)"]
#: A program that reads everything and never answers.
SILENT = [sys.executable, "-c", "import sys; sys.stdin.read()"]


def only_error_line(capfd: pytest.CaptureFixture[str]) -> str:
    """The one line on stderr, checked to be the CLI's error line."""
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("trio-mcp: error: "), lines
    return lines[0].removeprefix("trio-mcp: error: ")


@pytest.mark.parametrize("command", ["call", "trace"])
def test_a_missing_server_command(command: str, capfd: pytest.CaptureFixture[str]) -> None:
    extra = ["some_tool", "{}"] if command == "call" else []
    status = main([command, "--", "trio-mcp-no-such-server", *extra])
    assert status == 1
    assert only_error_line(capfd) == (
        "cannot run trio-mcp-no-such-server: No such file or directory"
    )


@pytest.mark.parametrize("command", ["call", "trace"])
def test_a_server_command_that_is_not_executable(
    command: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('not executable')\n")
    script.chmod(0o644)
    extra = ["some_tool", "{}"] if command == "call" else []
    status = main([command, "--", str(script), *extra])
    assert status == 1
    assert only_error_line(capfd) == f"cannot run {script}: Permission denied"


@pytest.mark.parametrize("command", ["call", "trace"])
def test_a_server_that_exits_at_once(command: str, capfd: pytest.CaptureFixture[str]) -> None:
    extra = ["some_tool", "{}"] if command == "call" else []
    status = main([command, "--", *EXITS_AT_ONCE, *extra])
    assert status == 1
    assert only_error_line(capfd) == (
        "the server exited with status 0 before answering (it wrote nothing to stderr)"
    )


@pytest.mark.parametrize("command", ["call", "trace"])
def test_a_program_that_is_not_an_mcp_server(
    command: str, capfd: pytest.CaptureFixture[str]
) -> None:
    # The echo sends our initialize request back: a request, not a result.
    extra = ["some_tool", "{}"] if command == "call" else []
    status = main([command, "--", *ECHO, *extra])
    assert status == 1
    assert only_error_line(capfd) == "Method not found: initialize (code -32601)"


@pytest.mark.spec("SI-14")
@pytest.mark.parametrize("command", ["call", "trace", "demo"])
@pytest.mark.parametrize(
    ("era", "server", "message"),
    [("modern", LEGACY_ONLY, NOT_MODERN), ("legacy", MODERN_ONLY, NOT_LEGACY)],
)
def test_an_era_the_server_does_not_speak(
    command: str, era: str, server: str, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    if command == "demo":
        argv = ["demo", "--era", era, "--server", server]
    else:
        extra = ["order_status", '{"order_id": "PT-1042"}'] if command == "call" else []
        argv = [command, "--era", era, "--inherit-env", "--", sys.executable, server, *extra]
    status = main(argv)
    assert status == 1
    assert only_error_line(capfd) == message


@pytest.mark.parametrize("command", ["call", "trace", "demo"])
def test_an_unknown_era_is_an_argument_error(
    command: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--era", "2026", "--", *EXITS_AT_ONCE])
    assert exit_.value.code == 2
    assert "argument --era: invalid choice: '2026' (choose from" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{bad", "the tool arguments are not JSON: Expecting property name enclosed in double"),
        ("[1, 2]", "the tool arguments must be a JSON object"),
    ],
)
def test_call_with_tool_arguments_that_are_not_a_json_object(
    raw: str, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    status = main([*PAPER_TRAIL_CALL, "order_status", raw])
    assert status == 2
    assert only_error_line(capfd).startswith(message)


def test_call_an_unknown_tool(capfd: pytest.CaptureFixture[str]) -> None:
    status = main([*PAPER_TRAIL_CALL, "no_such_tool", "{}"])
    assert status == 1
    assert only_error_line(capfd) == "Unknown tool: no_such_tool (code -32602)"


def test_call_that_times_out(capfd: pytest.CaptureFixture[str]) -> None:
    # --timeout bounds connecting too: long enough for the server to start.
    status = main(["call", "--timeout", "5", *PAPER_TRAIL_CALL[1:], "sleep", '{"seconds": 30}'])
    assert status == 1
    # The paper trail server logs its cancelled handler on stderr (forwarded,
    # prefixed with the server's name): that line is the server's, not ours.
    lines = [line for line in capfd.readouterr().err.splitlines() if not line.startswith("[python")]
    assert lines == ["trio-mcp: error: tools/call timed out after 5s without progress"]


def test_trace_that_times_out(capfd: pytest.CaptureFixture[str]) -> None:
    status = main(["trace", "--timeout", "0.2", "--", *SILENT])
    assert status == 1
    # The probe had half the bound, initialize the rest: neither was answered.
    assert only_error_line(capfd) == (
        "the server did not answer `server/discover` or `initialize` within 0.2 s (--timeout)"
    )


def test_demo_with_a_missing_server_file(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no_such_server.py"
    status = main(["demo", "--server", str(missing)])
    assert status == 1
    assert only_error_line(capfd) == f"the demo server {missing} does not exist (--server)"
    assert capfd.readouterr().out == ""  # nothing was spawned


def test_demo_with_a_server_that_exits_at_once(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "quits.py"
    script.write_text("raise SystemExit(3)\n")
    status = main(["demo", "--server", str(script)])
    assert status == 1
    assert only_error_line(capfd) == (
        "the server exited with status 3 before answering (it wrote nothing to stderr)"
    )


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("a bug in trio_mcp")

    monkeypatch.setattr(trio_mcp._cli._trace, "run_trace", broken)
    with pytest.raises(RuntimeError, match="a bug in trio_mcp"):
        main(["trace", "--", *EXITS_AT_ONCE])


async def interrupted(
    argv: list[str], ready: bytes, stdout: list[str] | None = None
) -> tuple[int, str, str]:
    """Run ``python -m trio_mcp *argv*`` and press Ctrl+C once *ready* shows on
    its stdout or stderr: the exit status, all of stderr, and stderr from the
    moment of the interrupt on (and all of stdout appended to *stdout*)."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-u", "-m", "trio_mcp", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        # As in a terminal's foreground job: a test run started in the
        # background of a non-interactive shell (``scripts/test &``) ignores
        # SIGINT and SIGQUIT, the program would inherit that, and Python then
        # installs no KeyboardInterrupt handler: Ctrl+C would do nothing.
        preexec_fn=_default_interrupt,
    )
    output = {"out": b"", "err": b""}
    mark: int | None = None
    signals: list[str] = []

    async def collect(stream: trio.abc.ReceiveStream, key: str) -> None:
        nonlocal mark
        while chunk := await stream.receive_some():
            output[key] += chunk
            if mark is None and ready in output[key]:
                mark = len(output["err"])
                signals.append(_signal_state(process.pid))
                os.kill(process.pid, signal.SIGINT)

    assert process.stdout is not None
    assert process.stderr is not None
    try:
        with trio.move_on_after(30) as waited:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, process.stdout, "out")
                nursery.start_soon(collect, process.stderr, "err")
            status = await process.wait()
        assert not waited.cancelled_caught, (
            f"still running 30 s after Ctrl+C (its signal state then: {signals}): {output}"
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdout.aclose()
        await process.stderr.aclose()
    assert mark is not None, output
    if stdout is not None:
        stdout.append(output["out"].decode())
    return status, output["err"].decode(), output["err"][mark:].decode()


def _default_interrupt() -> None:
    """In the child, before exec: SIGINT and SIGQUIT back to their defaults."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _signal_state(pid: int) -> str:
    """The signal lines of /proc/PID/status (blocked, ignored, caught), for a
    failure message: a Ctrl+C that does nothing is most often an inherited
    ignore or block."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"unreadable: {exc}"
    return " ".join(line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


async def test_ctrl_c_during_a_trace() -> None:
    server = [
        sys.executable,
        "-c",
        "import sys; print('ready', file=sys.stderr, flush=True); sys.stdin.read()",
    ]
    status, err, after = await interrupted(["trace", "--", *server], b"] ready")
    assert status == 130, err
    assert "Traceback" not in err
    assert after.splitlines()[-1:] == ["trio-mcp: error: interrupted (Ctrl+C)"]


async def test_ctrl_c_during_the_demo() -> None:
    status, err, after = await interrupted(["demo"], b"1. Handshake")
    assert status == 130, err
    assert "Traceback" not in err
    assert after.splitlines() == ["trio-mcp: error: interrupted (Ctrl+C)"]


async def test_ctrl_c_during_a_check_prints_the_checks_that_finished() -> None:
    # The handshake checks (each on a connection of its own) finish in
    # moments; the parse-error check waits 60 s for the answer this server
    # never sends. Ctrl+C comes once the first result is printed: results
    # stream as checks finish, and the interrupt keeps them.
    faulty = str(ROOT / "tests" / "check" / "faulty_server.py")
    argv = ["check", "--era", "legacy", "--timeout", "60", "--only", "handshake,jsonrpc"]
    out: list[str] = []
    status, err, after = await interrupted(
        [*argv, "--", sys.executable, faulty, "drops-malformed"], b"PASS  legacy  handshake.", out
    )
    assert status == 130, err
    assert "Traceback" not in err
    [printed] = out
    passed = [line for line in printed.splitlines() if line.startswith("  PASS  legacy  ")]
    assert passed
    summary = printed.splitlines()[-1]
    assert re.fullmatch(
        r"interrupted \(Ctrl\+C\): (\d+) checks finished: \1 passed, 0 failed, 0 skipped "
        r"in [\d.]+s",
        summary,
    ), summary
    assert summary.split()[2] == str(len(passed))
    assert after.splitlines()[-1] == (
        f"trio-mcp: error: interrupted (Ctrl+C): the report holds the {len(passed)} checks "
        "that finished"
    )


def test_call_timeout_bounds_connecting_to_a_silent_server(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # A real process that reads everything and never answers, and a real
    # short bound: the command ends soon after it (it took 10 s of probe and
    # 60 s of initialize before), saying what was not answered.
    started = time.monotonic()
    status = main(["call", "--timeout", "2", "--", *SILENT, "tool", "{}"])
    elapsed = time.monotonic() - started
    assert status == 1
    # The probe had half the bound, initialize the rest.
    assert only_error_line(capfd) == (
        "the server did not answer `server/discover` or `initialize` within 2 s (--timeout)"
    )
    assert 2 <= elapsed < 15


async def test_trace_says_a_silent_server_never_answered() -> None:
    from trio_mcp._cli._trace import run_trace

    out, err = io.StringIO(), io.StringIO()
    status = await run_trace(SILENT, out=out, err=err, time_limit=1, era="legacy")
    assert status == 1
    message = "the server did not answer `initialize` within 1 s (--timeout)"
    assert err.getvalue().splitlines() == [f"trio-mcp: error: {message}"]
    assert f"== failed: {message}" in out.getvalue()
    assert "TooSlowError" not in out.getvalue()


def test_a_server_that_fails_on_start_is_spawned_once_and_said_in_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "syntax_error.py"
    script.write_text("def oops(x)\n    return x\n")
    status = main(["call", "--", sys.executable, str(script), "oops", '{"x": 1}'])
    assert status == 1
    lines = capfd.readouterr().err.splitlines()
    # The server's own traceback, forwarded once, from one process.
    forwarded = [line for line in lines if line.startswith("[")]
    assert len({line.split("]")[0] for line in forwarded}) == 1, forwarded
    assert sum("SyntaxError" in line for line in forwarded) == 1
    assert lines[-1] == (
        "trio-mcp: error: the server exited with status 1 before answering "
        "(its last stderr line: SyntaxError: expected ':')"
    )
    assert "BrokenResourceError" not in "\n".join(lines)


def test_call_env_sets_variables_in_the_server_environment(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "env_server.py"
    script.write_text(
        "import os\n"
        "from trio_mcp import Server, run_stdio\n"
        "server = Server('env')\n"
        "@server.tool()\n"
        "async def getenv(name: str) -> str:\n"
        "    return repr(os.environ.get(name))\n"
        "run_stdio(server)\n"
    )
    src = str(ROOT / "src")
    argv = ["call", "--env", f"PYTHONPATH={src}", "--env", "GREETING=a=b c", "--env", "EMPTY="]
    status = main([*argv, "--", sys.executable, str(script), "getenv", '{"name": "GREETING"}'])
    assert status == 0
    assert capfd.readouterr().out == "'a=b c'\n"
    status = main([*argv, "--", sys.executable, str(script), "getenv", '{"name": "EMPTY"}'])
    assert capfd.readouterr().out == "''\n"
    # Not passed on without --env (or --inherit-env).
    os.environ["TRIO_MCP_TEST_SECRET"] = "hidden"
    try:
        status = main(
            [
                "call",
                "--env",
                f"PYTHONPATH={src}",
                "--",
                sys.executable,
                str(script),
                "getenv",
                '{"name": "TRIO_MCP_TEST_SECRET"}',
            ]
        )
    finally:
        del os.environ["TRIO_MCP_TEST_SECRET"]
    assert capfd.readouterr().out == "None\n"


@pytest.mark.parametrize("pair", ["NOEQUALS", "=value"])
def test_call_env_needs_name_equals_value(pair: str, capfd: pytest.CaptureFixture[str]) -> None:
    status = main(["call", "--env", pair, "--", *SILENT, "tool", "{}"])
    assert status == 2
    assert only_error_line(capfd) == f"--env takes NAME=VALUE, not {pair!r}"


def test_call_help_documents_env(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["call", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--env NAME=VALUE" in text
    assert "set a variable in the server's environment (repeatable)" in text
    assert "--inherit-env" in text
    assert "to connect (probe and opening together)" in text


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_refused_connection_is_one_sentence_without_a_json_rpc_code(
    capfd: pytest.CaptureFixture[str],
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    status = main(["call", "--url", url, "--", "some_tool", "{}"])
    assert status == 1
    assert only_error_line(capfd) == f"cannot connect to {url}: connection refused"


def test_a_url_without_a_scheme_is_said_in_words(capfd: pytest.CaptureFixture[str]) -> None:
    status = main(["call", "--url", "127.0.0.1:9/mcp", "--", "some_tool", "{}"])
    assert status == 1
    assert only_error_line(capfd) == (
        "cannot connect to 127.0.0.1:9/mcp: the URL must start with http:// or https://"
    )


def test_trace_marks_what_the_client_made_up_apart_from_frames_received(
    capfd: pytest.CaptureFixture[str],
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    status = main(["trace", "--url", url])
    assert status == 1
    captured = capfd.readouterr()
    lines = captured.out.splitlines()
    # Nothing was received: no frame is shown as coming from the server.
    assert not [line for line in lines if " <- " in line], lines
    local = [line.split("!! local: ", 1)[1] for line in lines if "!! local: " in line]
    assert local == [
        f"server/discover: cannot connect to {url}: connection refused",
        f"cannot connect to {url}: connection refused",
    ]
    assert f"== failed: cannot connect to {url}: connection refused" in lines
    assert "Error(" not in captured.out + captured.err
    assert captured.err.splitlines() == [
        f"trio-mcp: error: cannot connect to {url}: connection refused"
    ]


def test_spec_ids_stay_on_the_exception_and_show_with_verbose() -> None:
    from trio_mcp import RPCError
    from trio_mcp._cli._errors import describe

    lost = RPCError(
        -32000,
        "tools/call: the server's response stream ended before the answer; "
        "the request may have run and is not sent again (HM-14)",
        {"local": True},
    )
    assert describe(lost) == (
        "tools/call: the server's response stream ended before the answer; "
        "the request may have run and is not sent again"
    )
    assert describe(lost, verbose=True).endswith("is not sent again (HM-14)")
    assert "(HM-14)" in str(lost)
    # An error the server sent keeps its JSON-RPC code.
    assert describe(RPCError(-32602, "Unknown tool: x")) == "Unknown tool: x (code -32602)"


def test_a_server_that_exits_during_a_call_is_said_in_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(
        "import os, sys\n"
        "from trio_mcp import Server, run_stdio\n"
        "server = Server('crasher')\n"
        "@server.tool()\n"
        "async def crash() -> str:\n"
        "    print('about to crash: disk on fire', file=sys.stderr, flush=True)\n"
        "    os._exit(3)\n"
        "run_stdio(server)\n"
    )
    status = main(["call", "--", sys.executable, str(script), "crash", "{}"])
    assert status == 1
    lines = capfd.readouterr().err.splitlines()
    assert lines[-1] == (
        "trio-mcp: error: the server exited with status 3 "
        "(its last stderr line: about to crash: disk on fire)"
    )
