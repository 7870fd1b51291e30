"""The README's code and the in-memory examples run as documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


def test_readme_in_memory_example_runs() -> None:
    blocks = [b for b in _python_blocks(ROOT / "README.md") if "open_memory_client" in b]
    assert blocks, "the README lost its in-memory example"
    proc = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "text='5'" in proc.stdout  # add(2, 3)
    assert "RequestState.COMPLETED" in proc.stdout


def test_embed_in_trio_app_example_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "embed_in_trio_app.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 + 3 = " in proc.stdout
    assert "slow call cancelled by our deadline: True" in proc.stdout
    # The server saw the client's cancel: its record ends CANCELLED, origin PEER.
    assert re.search(r"server \d+ tools/call cancelled CancelOrigin.PEER", proc.stdout)
