"""npm packages for the interop tests, installed once into a cache directory.

The TypeScript SDK peers (v1 ``@modelcontextprotocol/sdk``, v2
``@modelcontextprotocol/server`` / ``client`` / ``node``) live in cache
directories outside the tree; node resolves them from the script's directory,
so the tests copy their ``.mjs`` scripts there too. An install that cannot
happen fails the test (never a skip): the peers are part of what is tested.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

#: Bound on one ``npm install`` (a cold cache on a slow network).
NPM_INSTALL_TIMEOUT = 300.0


def installed_version(cache: Path, package: str) -> str | None:
    """The version of *package* installed under ``cache/node_modules``, or None."""
    manifest = cache / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    version = json.loads(manifest.read_text()).get("version")
    return version if isinstance(version, str) else None


def _satisfied(installed: str | None, wanted: str | None) -> bool:
    return installed is not None and (wanted is None or installed == wanted)


def npm_install(cache: Path, packages: dict[str, str | None], scripts: Iterable[Path]) -> Path:
    """Make sure *cache* holds *packages* (name → exact version, or None for any
    version) and a copy of each of *scripts*; return *cache*.

    Runs ``npm install`` (bounded by :data:`NPM_INSTALL_TIMEOUT`) only when a
    package is missing or at another version, and fails loudly when npm is
    absent or the install fails.
    """
    wanted = [
        name if version is None else f"{name}@{version}"
        for name, version in packages.items()
        if not _satisfied(installed_version(cache, name), version)
    ]
    if wanted:
        npm = shutil.which("npm")
        assert npm, f"npm is needed to install {', '.join(wanted)} for this test"
        cache.mkdir(parents=True, exist_ok=True)
        manifest = cache / "package.json"
        if not manifest.exists():
            manifest.write_text('{"name":"trio-mcp-interop","private":true}')
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", *wanted],
            cwd=cache,
            capture_output=True,
            text=True,
            timeout=NPM_INSTALL_TIMEOUT,
            check=False,
        )
        assert proc.returncode == 0, f"npm install failed:\n{proc.stdout}\n{proc.stderr}"
    for script in scripts:
        shutil.copy(script, cache / script.name)
    return cache
