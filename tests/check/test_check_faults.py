"""A deliberately broken trio_mcp server (``faulty_server.py``: the real Paper
Trail with one fault switched on at a time) makes exactly the corresponding
check fail, and every other check pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from check_helpers import OPTIONS, applicable, outcomes

from trio_mcp._check import Outcome, StdioTarget, run_checks

FAULTY = str(Path(__file__).resolve().parent / "faulty_server.py")

#: Each fault and the checks it must fail (a parent's death reaches a stdio
#: server as the end of its input, so ignoring one ignores the other).
FAULTS = {
    "answers-after-cancel": {"cancel.cancelled-call"},
    "crosses-duplicate-ids": {"cancel.duplicate-id"},
    "ignores-eof": {"shutdown.end-of-input", "shutdown.parent-death"},
    "leaves-child-alive": {"shutdown.no-leftovers"},
    "drops-malformed": {"jsonrpc.parse-error"},
    "pads-ping": {"handshake.ping-first"},
}


@pytest.mark.spec("CN-05")
@pytest.mark.spec("BP-04")
@pytest.mark.spec("SI-11")
@pytest.mark.spec("SI-10")
@pytest.mark.spec("BP-07")
@pytest.mark.parametrize(("fault", "check_ids"), FAULTS.items())
async def test_one_fault_fails_exactly_its_check(fault: str, check_ids: set[str]) -> None:
    # The handshake era only: the faults sit below the session, in the
    # transport, so the other era would fail the same checks the same way.
    report = await run_checks(
        StdioTarget((sys.executable, FAULTY, fault)), OPTIONS, eras=("legacy",)
    )
    found = outcomes(report)
    assert set(found) == applicable("stdio", ("legacy",))
    failed = {check for (_, check), outcome in found.items() if outcome is Outcome.FAIL}
    assert failed == check_ids, [f"{r.check_id}: {r.detail}" for r in report.failed]
    others = {check: o for (_, check), o in found.items() if check not in check_ids}
    assert set(others.values()) == {Outcome.PASS}, others
    assert all(result.frames for result in report.failed), "a failure carries its frames"


@pytest.mark.spec("SB-15")
async def test_an_empty_listen_held_open_fails_listen_empty() -> None:
    report = await run_checks(
        StdioTarget((sys.executable, FAULTY, "holds-empty-listen")),
        OPTIONS,
        only=["listen"],
        eras=("modern",),
    )
    found = {check: o for (_, check), o in outcomes(report).items()}
    assert found == {
        "listen.empty": Outcome.FAIL,
        "listen.unsupported": Outcome.PASS,
        "listen.close": Outcome.PASS,
    }
    (result,) = report.failed
    assert "still open" in result.detail
    assert "draft" in result.detail
    # The frames show the empty listen sent and acknowledged with more than it asked.
    texts = [f.text for f in result.frames]
    assert any('"notifications":{}' in t for t in texts if "subscriptions/listen" in t)
    assert any('"toolsListChanged":true' in t for t in texts if "acknowledged" in t)


async def test_a_server_that_dies_in_one_check_is_started_again_for_the_next() -> None:
    report = await run_checks(
        StdioTarget((sys.executable, FAULTY, "exits-on-malformed")),
        OPTIONS,
        only=["jsonrpc"],
        eras=("legacy",),
    )
    found = {check: o for (_, check), o in outcomes(report).items()}
    assert found.pop("jsonrpc.parse-error") is Outcome.FAIL
    assert "the server's output ended" in report.failed[0].detail
    assert set(found.values()) == {Outcome.PASS}, report.failed
    assert len(found) == 5
