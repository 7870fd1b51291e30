"""The ``trio-mcp`` command (also ``python -m trio_mcp``).

Subcommands:

* ``demo``: spawn the bundled example server and narrate a whole session;
* ``trace -- CMD ARGS...``: trace any stdio server's lifecycle, frame by frame;
* ``call -- CMD ARGS... TOOL JSON``: call one tool and print the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import trio


def _split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before ``--``, the server command after it."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``trio-mcp`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    options, command = _split_command(argv)
    parser = argparse.ArgumentParser(
        prog="trio-mcp",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="spawn the example server and narrate a session")
    demo.add_argument("--server", type=Path, help="the server script (default: paper_trail.py)")
    demo.add_argument("--full", action="store_true", help="print frames whole")
    trace = commands.add_parser("trace", help="trace a stdio server: trace [--json] -- CMD ...")
    trace.add_argument("--json", action="store_true", help="write JSON lines")
    trace.add_argument("--timeout", type=float, default=30.0, help="bound on the whole trace")
    trace.add_argument("--inherit-env", action="store_true", help="pass our whole environment")
    call = commands.add_parser("call", help="call one tool: call -- CMD ... TOOL JSON")
    call.add_argument(
        "--timeout", type=float, default=60.0, help="seconds without progress before giving up"
    )
    call.add_argument("--inherit-env", action="store_true", help="pass our whole environment")
    args = parser.parse_args(options)

    if args.command == "demo":
        from ._cli._demo import run_demo

        trio.run(partial(run_demo, server=args.server, width=None if args.full else 110))
        return 0
    if args.command == "trace":
        if not command:
            parser.error("trace needs the server command after --")
        from ._cli._trace import run_trace

        return trio.run(
            partial(
                run_trace,
                command,
                as_json=args.json,
                time_limit=args.timeout,
                inherit_env=args.inherit_env,
            )
        )
    if len(command) < 3:
        parser.error("call needs: -- CMD [ARGS...] TOOL JSON")
    *server_command, tool, raw = command
    try:
        arguments = json.loads(raw)
    except ValueError as exc:
        parser.error(f"the tool arguments are not JSON: {exc}")
    if not isinstance(arguments, dict):
        parser.error("the tool arguments must be a JSON object")
    from ._cli._call import run_call

    return trio.run(
        partial(
            run_call,
            server_command,
            tool,
            arguments,
            progress_idle_timeout=args.timeout,
            inherit_env=args.inherit_env,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
