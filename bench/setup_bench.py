"""Set up what bench/all.py measures besides this checkout's trio_mcp.

1. The TypeScript SDK, current line: ``@modelcontextprotocol/server`` and
   ``@modelcontextprotocol/client`` 2.4.0, the Node HTTP adapter
   ``@modelcontextprotocol/node`` 2.1.2 and zod 4, installed with npm into the
   cache directory the interop tests use (``~/.cache/trio_mcp/ts-sdk-v2``,
   override with ``TRIO_MCP_NODE_CACHE_V2``), with a copy of
   ``bench/ts/ts_bench.mjs`` next to them (node resolves packages from the
   script's directory).
2. Node 22 to run it: ``TRIO_MCP_BENCH_NODE`` if set, else the one the
   conformance setup installs (``~/.cache/trio_mcp/conformance/node22``), else
   ``node`` on PATH.
3. A virtualenv with trio_mcp installed from a wheel of this checkout, not
   editable (``~/.cache/trio_mcp/bench-venv``, override with
   ``TRIO_MCP_BENCH_VENV``): an editable install's import hook adds tens of
   milliseconds to every interpreter start, which the start-up rows would count.
   The wheel is rebuilt and reinstalled (without touching its dependencies) on
   every run, so the rows measure the code as it is now.

Run: ``python bench/setup_bench.py`` (bench/all.py runs it first anyway);
prints what it found. Needs npm and pip to reach their registries once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TS_SCRIPT = HERE / "ts" / "ts_bench.mjs"
TS_PACKAGES: dict[str, str | None] = {
    "@modelcontextprotocol/server": "2.4.0",
    "@modelcontextprotocol/client": "2.4.0",
    "@modelcontextprotocol/node": "2.1.2",
    "zod": "4.6.7",
}
CACHE = Path.home() / ".cache" / "trio_mcp"
NODE_CACHE = Path(os.environ.get("TRIO_MCP_NODE_CACHE_V2", CACHE / "ts-sdk-v2"))
VENV = Path(os.environ.get("TRIO_MCP_BENCH_VENV", CACHE / "bench-venv"))
CONFORMANCE_NODE = CACHE / "conformance" / "node22" / "node_modules" / ".bin" / "node"


def ts_cache() -> Path:
    """Install the TypeScript SDK (once) and copy the bench script; return the directory."""
    sys.path.insert(0, str(ROOT / "tests" / "interop"))
    from npm_cache import npm_install

    return npm_install(NODE_CACHE, TS_PACKAGES, [TS_SCRIPT])


def node() -> tuple[str, str]:
    """The node binary to run the TypeScript subjects with, and its version."""
    candidates = [
        os.environ.get("TRIO_MCP_BENCH_NODE"),
        str(CONFORMANCE_NODE),
        shutil.which("node"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            version = subprocess.run(
                [candidate, "--version"], capture_output=True, text=True, check=True
            ).stdout.strip()
            return candidate, version
    raise SystemExit("no node found: set TRIO_MCP_BENCH_NODE to a Node 22 binary")


def bench_python() -> str:
    """The bench virtualenv's python, with this checkout installed from a fresh wheel."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".dependencies-installed"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    first = not stamp.exists()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", out, str(ROOT)],
            check=True,
            capture_output=True,
        )
        (wheel,) = Path(out).glob("trio_mcp-*.whl")
        # The first install resolves the dependencies; later ones replace only trio_mcp.
        extra = [] if first else ["--force-reinstall", "--no-deps"]
        proc = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *extra,
                str(wheel),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"installing the wheel into {VENV} failed:\n{proc.stderr}")
        stamp.touch()
    return str(python)


def main() -> None:
    cache = ts_cache()
    binary, version = node()
    python = bench_python()
    print(f"TypeScript SDK: {cache} (node {version}: {binary})")
    print(f"trio_mcp, non-editable: {python}")


if __name__ == "__main__":
    main()
