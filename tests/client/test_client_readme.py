"""The README's host-side script runs as documented, against a real stdio server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


# The README's server is spawned with the safe default environment, which
# leaves PYTHONPATH out: let it through, so that the server imports this
# checkout's trio_mcp rather than whichever one the interpreter has installed.
CHECKOUT_SERVER = (
    "from trio_mcp.transports import _stdio_client\n"
    "_stdio_client.SAFE_ENVIRONMENT += ('PYTHONPATH',)\n"
)


def test_readme_host_script_runs() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    host = [b for b in blocks if "open_stdio_client" in b and "sampling=" in b]
    assert len(host) == 1, "the README lost its host-side script"
    assert len(host[0].splitlines()) < 30
    proc = subprocess.run(
        [sys.executable, "-c", CHECKOUT_SERVER + host[0]],
        capture_output=True,
        text=True,
        timeout=60,  # bounded; the child server is shut down by open_stdio_client
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "paper-trail 2026-07-28"  # era="auto" finds a 2026-07-28 server
    assert any(line.startswith("prepare_report: ") for line in lines)
    assert "progress 1" in lines
    assert "progress 2" in lines
    assert lines[-1] == "report ready (2 steps, 3 orders)"
