"""A folder named ``trio_mcp`` beside a script does not shadow the installed package.

A script's own directory comes first on ``sys.path``; a folder there named
``trio_mcp`` without an ``__init__.py`` (an empty folder, or a clone of this
repository, whose package is under ``src/``) is only a namespace portion, and
the installed package, a regular one, wins over it. Before the ``src/`` layout
the editable install's finder came after that folder, and ``from trio_mcp
import Server`` failed with "cannot import name 'Server' from 'trio_mcp'
(unknown location)".

Each case runs this environment's interpreter (the venv's, with the package
installed as the scripts install it) in a temporary directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import trio_mcp

SCRIPT = """
import trio_mcp
from trio_mcp import Server
print(trio_mcp.__file__)
print(Server("x").name)
"""


def _clone_like(folder: Path) -> None:
    """What a clone of this repository looks like at its top."""
    (folder / "src" / "trio_mcp").mkdir(parents=True)
    (folder / "src" / "trio_mcp" / "__init__.py").write_text("raise ImportError('the clone')\n")
    (folder / "pyproject.toml").write_text("[project]\nname = 'trio-mcp'\n")
    (folder / "README.md").write_text("a clone\n")


@pytest.mark.parametrize("shape", ["empty", "clone"])
@pytest.mark.parametrize("how", ["script", "command"])
def test_a_trio_mcp_folder_beside_a_script_does_not_shadow_the_package(
    shape: str, how: str, tmp_path: Path
) -> None:
    folder = tmp_path / "trio_mcp"
    folder.mkdir()
    if shape == "clone":
        _clone_like(folder)
    script = tmp_path / "myserver.py"
    script.write_text(SCRIPT)
    # "script": the script's directory is sys.path[0]; "command": python -c
    # from that directory puts the current directory there instead.
    argv = [str(script)] if how == "script" else ["-c", SCRIPT]
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found, name = done.stdout.splitlines()
    assert Path(found) == Path(trio_mcp.__file__)
    assert not Path(found).is_relative_to(tmp_path)
    assert name == "x"
