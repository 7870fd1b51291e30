"""A reduced slice of the load and fault soaks (bench/soak.py, issue #17 §4), on every run.

Each test runs one soak subcommand as the script runs it (its own processes,
loopback, port 0) with small counts and a fixed seed, and checks its JSON
summary: every call answered, RSS growth within the bound, and after the
faults no session, handler, task or fd left on the server, no process left,
every pending call failed with a reason within the bound. The soak itself
exits 1 on any failure; these tests also pin the figures it reports, so a
soak that stopped checking would fail here too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def soak(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), *args, "--seed", "17", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("seed 17\n")
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["failures"] == []
    return summary


def test_http_sessions_every_call_answered_and_no_session_left() -> None:
    figures = soak("http-sessions", "--sessions", "50", "--calls", "2")["figures"]
    assert figures["calls answered"] == "100 / 100"
    assert figures["server sessions left"] == "0"


def test_modern_clients_every_call_answered() -> None:
    figures = soak("modern-clients", "--clients", "50", "--calls", "2")["figures"]
    assert figures["calls answered"] == "100 / 100"


def test_stdio_calls_all_answered_rss_flat() -> None:
    figures = soak("stdio-calls", "--calls", "5000")["figures"]
    assert figures["calls answered"].startswith("4992 / 4992")
    assert "server RSS 2nd-half slope" in figures
    assert "client RSS 2nd-half slope" in figures


def test_killed_http_clients_leave_nothing_on_the_server() -> None:
    figures = soak(
        "kill-clients",
        "--count",
        "8",
        "--parallel",
        "4",
        "--idle-timeout",
        "1",
        "--header-timeout",
        "1",
    )["figures"]
    assert figures["clients SIGKILLed mid-call"] == "8 / 8"
    for key in ("sessions", "slow", "tasks", "fds"):
        base, after = figures[f"server {key} baseline/after"].split(" / ")
        assert int(after) <= int(base), key


def test_killed_stdio_clients_leave_no_server_process() -> None:
    figures = soak("kill-clients", "--transport", "stdio", "--count", "4", "--parallel", "2")[
        "figures"
    ]
    assert figures["stdio servers left"] == "0 / 4"


def test_a_killed_server_fails_every_pending_call_promptly() -> None:
    figures = soak("kill-server", "--calls", "8", "--bound", "3")["figures"]
    for kind in ("stdio", "http legacy", "http modern"):
        assert figures[f"{kind}: calls failed"].startswith("8 / 8"), kind


def test_stalled_and_half_closed_peers_fail_pending_calls() -> None:
    figures = soak("stalls", "--timeout", "1")["figures"]
    assert "RequestTimeout" in figures["no-read: call"]
    assert "RequestTimeout" in figures["half-frame: call"]
    assert "SessionClosed" in figures["half-close: call"]
    for mode in ("no-read", "half-frame", "half-close"):
        assert figures[f"{mode}: process gone / tasks"].startswith("True"), mode
