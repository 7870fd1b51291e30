"""``trio-mcp check`` accepts a server that declares extensions it does not
know, in both eras: every check passes or is skipped for a reason of its own
(a slow tool it may not call), and none fails."""

from __future__ import annotations

import sys
from pathlib import Path

from check_helpers import OPTIONS, applicable, outcomes

from trio_mcp._check import Outcome, StdioTarget, run_checks

SERVER = str(Path(__file__).resolve().parent / "extension_server.py")


async def test_unknown_extensions_fail_no_check() -> None:
    report = await run_checks(StdioTarget((sys.executable, SERVER)), OPTIONS)
    assert report.eras == ("legacy", "modern")
    assert set(outcomes(report)) == applicable("stdio")
    failed = [r for r in report.results if r.outcome not in (Outcome.PASS, Outcome.SKIP)]
    assert failed == []
    assert not report.failed
    passed = {r.check_id for r in report.results if r.outcome is Outcome.PASS}
    assert {"handshake.three-steps", "modern.discover", "modern.era-by-first-message"} <= passed
