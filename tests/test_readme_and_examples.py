"""The README's code, its CLI lines and the in-memory examples run as documented;
the architecture page's layout table lists every subpackage. (The README's task
example moved to docs/samples/tasks.py: tests/test_docs_samples.py runs it.)"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

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


def _readme_cli_lines() -> list[str]:
    shell = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    lines = [line.split("  #")[0].strip() for block in shell for line in block.splitlines()]
    return [line for line in lines if line.startswith(".venv/bin/trio-mcp ")]


@pytest.mark.parametrize("line", _readme_cli_lines())
def test_readme_cli_command_runs(line: str) -> None:
    # The README's .venv is this interpreter; the spawned server finds this
    # tree's trio_mcp through `python -m` run in the checkout, as on a clone.
    argv = shlex.split(line.replace(".venv/bin/trio-mcp", f"{sys.executable} -m trio_mcp"))
    argv = [sys.executable if arg == ".venv/bin/python" else arg for arg in argv]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_readme_cli_commands_are_found() -> None:
    assert [line.split()[1] for line in _readme_cli_lines()] == ["demo", "trace", "call", "check"]


ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"


def _layout_table_paths() -> set[str]:
    page = ARCHITECTURE.read_text()
    table = page[page.index("| path | what |") :].split("\n\n")[0]
    first_cells = [row.split("|")[1] for row in table.splitlines()[2:]]
    return {path for cell in first_cells for path in re.findall(r"`([^`]+)`", cell)}


def test_architecture_layout_table_has_every_subpackage() -> None:
    listed = _layout_table_paths()
    subpackages = sorted(
        f"src/trio_mcp/{init.parent.name}/"
        for init in (ROOT / "src" / "trio_mcp").glob("*/__init__.py")
    )
    assert subpackages, "no subpackage found"
    assert [path for path in subpackages if path not in listed] == []
