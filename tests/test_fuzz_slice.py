"""A short deterministic slice of the fuzzing campaign (bench/fuzz.py), on every run.

Fixed seeds, 200 frames per transport and side: every transport server side
(in-memory, stdio subprocess, Streamable HTTP in both eras and both response
modes, legacy HTTP+SSE, WebSocket) and a hostile server against the client
(in-memory, stdio, WebSocket, Streamable HTTP in both eras and modes). The
invariants (peer still answers, at most one response per id, none to an id never
sent, none after a cancel, RSS bound, no ERROR logged, no task left behind) are
the campaign's own; a failure prints the broken invariant and the saved case.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRANSPORTS = {
    "server memory",
    "server stdio",
    "server http-sse",
    "server http-json",
    "server http-modern-sse",
    "server http-modern-json",
    "server legacy-sse",
    "server websocket",
    "client memory",
    "client stdio",
    "client websocket",
    "client http-json",
    "client http-sse",
    "client http-modern-json",
    "client http-modern-sse",
}


def test_the_fuzz_slice_finds_no_failure(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fuzz.py"),
            "--frames",
            "200",
            "--seed",
            "17",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PYTHONPATH": str(ROOT / "src"),
            "PATH": "/usr/bin:/bin",
            "TRIO_MCP_FUZZ_SAVE": str(tmp_path),
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("seed 17\n")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(summary["results"]) == TRANSPORTS
    for name, result in summary["results"].items():
        assert result["problem"] is None, name
        assert result["frames"] == 200, name
