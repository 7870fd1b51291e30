"""``trio-mcp check`` is safe by default: it calls only the tools the user names
and those annotated ``readOnlyHint: true``; ``--call-unannotated-tools`` adds
the others except those annotated ``destructiveHint: true``, called only when
named. Run black-box, through the command line, against ``unsafe_server.py``,
whose tools log each call to a file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trio_mcp._cli._main import main

UNSAFE = str(Path(__file__).resolve().parent / "unsafe_server.py")
#: The checks that call tools.
TOOL_CHECKS = "cancel,progress,concurrency,limits,shutdown.end-of-input"


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_by_default_neither_a_destructive_nor_an_unannotated_tool_is_called(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "calls.log"
    status = main(["check", "--json", "--timeout", "3", "--", sys.executable, UNSAFE, str(log)])
    report = json.loads(capsys.readouterr().out)
    assert _calls(log) == []
    assert status == 0, [r for r in report["results"] if r["outcome"] == "FAIL"]
    details = {(r["era"], r["id"]): (r["outcome"], r["detail"]) for r in report["results"]}
    for era in ("legacy", "modern"):
        for check in ("concurrency.answer-while-slow", "cancel.duplicate-id"):
            outcome, detail = details[(era, check)]
            assert outcome == "SKIP"
            assert "--slow-tool NAME --slow-args JSON" in detail
            assert "not called: wipe (destructive), touch_log" in detail
            assert "--call-unannotated-tools" in detail
        for check in ("progress.token", "cancel.cancelled-call"):
            outcome, detail = details[(era, check)]
            assert outcome == "SKIP"
            assert "--progress-tool NAME --progress-args JSON" in detail
        outcome, detail = details[(era, "concurrency.burst")]
        assert outcome == "PASS"
        assert "name one with --echo-tool NAME" in detail


def test_call_unannotated_tools_calls_them_but_never_a_destructive_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "calls.log"
    argv = ["check", "--json", "--timeout", "3", "--only", TOOL_CHECKS, "--call-unannotated-tools"]
    status = main([*argv, "--", sys.executable, UNSAFE, str(log)])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, [r for r in report["results"] if r["outcome"] == "FAIL"]
    calls = _calls(log)
    assert "touch_log" in calls  # picked as the echo tool
    assert "wipe" not in calls


def test_a_destructive_tool_is_called_when_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "calls.log"
    argv = ["check", "--json", "--era", "legacy", "--only", "limits", "--echo-tool", "wipe"]
    status = main([*argv, "--", sys.executable, UNSAFE, str(log)])
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert _calls(log) == ["wipe", "wipe"]  # found as the echo, then the 1 MiB argument
    [result] = report["results"]
    assert "argument to wipe answered" in result["detail"]


def test_help_says_what_the_checker_calls(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Safe by default" in text
    assert "readOnlyHint: true" in text
    assert "--call-unannotated-tools" in text
    assert "destructiveHint: true, which is called only when named" in text


HASTY = str(Path(__file__).resolve().parent / "hasty_server.py")


@pytest.mark.parametrize(
    ("options", "advice"),
    [
        (
            [],
            "(the checker picked count and guessed its arguments: name a tool with "
            "--progress-tool NAME --progress-args JSON)",
        ),
        (
            ["--progress-tool", "count"],
            "(the arguments were guessed: set them with --progress-args JSON)",
        ),
    ],
)
def test_a_skip_from_guessed_arguments_says_which_option_to_set(
    options: list[str], advice: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", "--json", "--era", "legacy", "--timeout", "1", *options]
    status = main([*argv, "--only", "cancel.cancelled-call", "--", sys.executable, HASTY])
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert status == 0
    assert result["outcome"] == "SKIP"
    assert result["detail"].startswith("count {")
    assert "answered before it reported progress; nothing to cancel" in result["detail"]
    assert result["detail"].endswith(advice), result["detail"]
