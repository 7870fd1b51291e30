"""The ``trio-mcp`` command (also ``python -m trio_mcp``).

Subcommands: ``demo`` runs a narrated client/server session.
"""

from __future__ import annotations

import argparse
import sys

import trio


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``trio-mcp`` console script."""
    parser = argparse.ArgumentParser(prog="trio-mcp", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run a narrated client/server session (the lifecycle)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        trio.run(run_demo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
