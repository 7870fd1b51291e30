"""``trio-mcp check``'s command line: the report forms, the exit status, the
selection by id, and argument errors (one line, status 2)."""

from __future__ import annotations

import io
import json
import select
import subprocess
import sys
from pathlib import Path

import pytest
from check_helpers import NOT_HUNG, URL_LINE, example

from trio_mcp._check import CheckResult, Outcome, Report
from trio_mcp._check._report import write_text
from trio_mcp._cli._main import main

FAULTY = str(Path(__file__).resolve().parent / "faulty_server.py")


def test_json_report_of_a_passing_run_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["check", "--json", "--only", "jsonrpc,cancel.stray-cancels", "--", *example("paper_trail")]
    )
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert report["eras"] == ["legacy", "modern"]
    assert report["summary"] == {"pass": 14, "fail": 0, "skip": 0}
    ids = {r["id"] for r in report["results"]}
    assert ids == {
        "jsonrpc.parse-error",
        "jsonrpc.wrong-version",
        "jsonrpc.bad-ids",
        "jsonrpc.result-and-error",
        "jsonrpc.unknown-method",
        "jsonrpc.notifications",
        "cancel.stray-cancels",
    }
    assert all(r["rows"] and r["frames"] for r in report["results"])


@pytest.mark.spec("BP-07")
def test_a_failure_is_shown_with_its_frames_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["check", "--era", "legacy", "--timeout", "1", "--only", "jsonrpc.parse-error"]
    status = main([*argv, "--", sys.executable, FAULTY, "drops-malformed"])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL  legacy  jsonrpc.parse-error" in out
    assert "Failures, with the frames that show them:" in out
    assert '-> {"jsonrpc": "2.0", "id": 1, "method": ' in out  # the malformed frame sent
    assert "1 checks: 0 passed, 1 failed, 0 skipped in " in out
    assert out.rstrip().endswith(": FAILED")
    assert "\x1b[" not in out  # no colour: stdout is not a terminal


def test_markdown_report_and_skip(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "check",
        "--markdown",
        "--era",
        "modern",
        "--only",
        "modern",
        "--skip",
        "modern.era-by-first-message",
    ]
    status = main([*argv, "--", *example("paper_trail")])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("## `trio-mcp check` report: `")
    assert "| result | era | check | spec rows | detail |" in out
    rows = [line for line in out.splitlines() if line.startswith("| PASS |")]
    assert [row.split("`")[1] for row in rows] == [
        "modern.discover",
        "modern.meta-required",
        "modern.unknown-version",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "check needs either the server command after -- or --url URL"),
        (["check", "--url", "http://127.0.0.1:1/mcp", "--", "x"], "check needs either"),
        (["check", "--slow-args", "{", "--", "x"], "the tool arguments are not JSON"),
        (["check", "--progress-args", "[1]", "--", "x"], "must be a JSON object"),
        (["check", "--only", "jsonrpc,nope.never", "--", "x"], "no such check or area: nope.never"),
    ],
)
def test_bad_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = int(str(exit_.code))
    assert status == 2
    assert message in capsys.readouterr().err


def test_a_command_that_is_not_a_server_fails_the_era_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(
        ["check", "--json", "--timeout", "1", "--", sys.executable, "-c", "print('hello')"]
    )
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    assert report["eras"] == []
    [result] = report["results"]
    assert result["id"] == "era"
    assert result["outcome"] == "FAIL"


@pytest.mark.spec("HT-31")
def test_url_checks_a_running_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    server = subprocess.Popen(
        [*example("paper_trail"), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    try:
        ready, _, _ = select.select([server.stderr], [], [], NOT_HUNG)
        assert ready, "the server printed no URL"
        url = server.stderr.readline().split(URL_LINE)[1].split()[0]
        status = main(["check", "--json", "--only", "http,jsonrpc.unknown-method", "--url", url])
    finally:
        server.terminate()
        server.wait(NOT_HUNG)
        server.stderr.close()
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert report["transport"] == "http"
    assert {(r["era"], r["id"]) for r in report["results"]} == {
        ("legacy", "jsonrpc.unknown-method"),
        ("legacy", "http.session"),
        ("legacy", "http.origin-host"),
        ("legacy", "http.content-types"),
        ("legacy", "http.notification"),
        ("legacy", "http.delete"),
        ("modern", "jsonrpc.unknown-method"),
        ("modern", "http.origin-host"),
        ("modern", "http.content-types"),
        ("modern", "http.notification"),
        ("modern", "http.modern-headers"),
    }


def test_tools_named_on_the_command_line_are_used(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "check",
        "--json",
        "--era",
        "legacy",
        "--only",
        "progress,concurrency,limits",
        "--slow-tool",
        "sleep",
        "--slow-args",
        '{"seconds": 20}',
        "--progress-tool",
        "prepare_report",
        "--progress-args",
        '{"steps": 2}',
        "--echo-tool",
        "return_order",
    ]
    status = main([*argv, "--", *example("paper_trail")])
    details = {r["id"]: r["detail"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert status == 0
    assert details["progress.token"].startswith("2 progress notification(s) from prepare_report")
    assert details["concurrency.answer-while-slow"] == "ping answered while sleep ran"
    assert "calls of return_order in one write" in details["concurrency.burst"]
    assert "argument to return_order" in details["limits.large-argument"]


def test_colour_only_when_asked_or_on_a_terminal() -> None:
    result = CheckResult("a.b", "t", ("BP-01",), "stdio", "legacy", Outcome.FAIL, "bad", 0.1)
    report = Report("server", "stdio", ("legacy",), (result,), 0.1)
    plain, painted = io.StringIO(), io.StringIO()
    write_text(report, plain)  # a StringIO is not a terminal
    write_text(report, painted, colour=True)
    assert "\x1b[" not in plain.getvalue()
    assert "\x1b[31mFAIL\x1b[0m" in painted.getvalue()
    assert (
        plain.getvalue()
        .rstrip()
        .endswith("1 checks: 0 passed, 1 failed, 0 skipped in 0.1s: FAILED")
    )
