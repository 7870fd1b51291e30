"""``trio-mcp check``: a black-box lifecycle, cancellation and robustness checker.

It holds any MCP server, stdio or Streamable HTTP, written with any SDK, to the
rules of the handshake era and of 2026-07-28: the opening, JSON-RPC envelopes,
cancellation, progress, concurrency, limits, shutdown and the HTTP rules. Each
check names the spec rows it tests and reports PASS, FAIL with the frames that
show it, or SKIP with the reason. The checker talks raw frames to the server
(never through :class:`trio_mcp.Client`), every server it spawns lives in its
own process group and is killed on every exit path, and every wait is bounded.

Spec: the rows each check names (``src/trio_mcp/_check/_checks/``).
"""

from ._definition import Check
from ._model import CheckResult, FrameRecord, Outcome
from ._probe import Options
from ._runner import Report, run_checks
from ._target import HttpTarget, StdioTarget

__all__ = [
    "Check",
    "CheckResult",
    "FrameRecord",
    "HttpTarget",
    "Options",
    "Outcome",
    "Report",
    "StdioTarget",
    "run_checks",
]
