"""The ``trio-mcp`` command (also ``python -m trio_mcp``).

Subcommands:

* ``demo``: spawn the bundled example server and narrate a whole session;
* ``trace -- CMD ARGS...``: trace any stdio server's lifecycle, frame by frame;
* ``call -- CMD ARGS... TOOL JSON``: call one tool and print the result;
* ``check -- CMD ARGS...`` or ``check --url URL``: hold a server to the
  lifecycle, cancellation and robustness rules (exit 0 only if nothing failed);
  it calls only the tools you name and those annotated read-only.

``trace --url URL`` and ``call --url URL -- TOOL JSON`` talk to a Streamable
HTTP server instead; with ``--auth`` they authorize with OAuth: one URL is
printed to open in a browser, and the tokens are kept (mode 0600) in
``$XDG_CONFIG_HOME/trio-mcp/tokens.json`` for the next run.

Each takes ``--era auto|modern|legacy`` (default ``auto``: probe with
``server/discover``, fall back to the handshake) and says which era it got
and at which version. A user error, among them an era the server does not
speak, ends any of them with one line, ``trio-mcp: error: ...``, on stderr and
a non-zero status (2 for bad arguments, 130 for Ctrl+C).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import trio

from .._util import reraise_unwrapped
from ._errors import INTERRUPTED, USER_ERRORS, CommandError, describe, print_error

#: ``--era``'s choices (kept here, not imported, so that --help loads no client code).
ERA_CHOICES = ("auto", "modern", "legacy")

#: Exit status for arguments the command cannot use (argparse's own).
BAD_ARGUMENTS = 2


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before ``--``, the server command after it."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def build_parser() -> argparse.ArgumentParser:
    """The options of every subcommand (the server command after ``--`` is not parsed)."""
    parser = argparse.ArgumentParser(
        prog="trio-mcp",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="spawn the example server and narrate a session in each era"
    )
    demo.add_argument(
        "--server",
        type=Path,
        help="a server script to run instead (default: python -m trio_mcp.examples.paper_trail)",
    )
    demo.add_argument("--full", action="store_true", help="print frames whole")
    _add_html(demo)
    _add_era(demo, "auto: both eras the server speaks, one after the other")
    trace = commands.add_parser("trace", help="trace a stdio server: trace [--json] -- CMD ...")
    trace.add_argument("--json", action="store_true", help="write JSON lines")
    trace.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="bound on the whole trace (default 30 s; 330 s with --auth, the browser included)",
    )
    _add_env(trace)
    _add_url(trace)
    _add_era(trace)
    _add_html(trace)
    call = commands.add_parser("call", help="call one tool: call -- CMD ... TOOL JSON")
    call.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the server: to connect (probe and opening together), then "
        "for the call's answer or its next progress (default 60)",
    )
    _add_env(call)
    call.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="say the era on stderr (always said on a terminal)",
    )
    _add_url(call)
    _add_era(call)
    _add_check(commands)
    return parser


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="check a server's lifecycle: check -- CMD ... | check --url URL",
        usage="trio-mcp check [options] -- CMD [ARGS...]\n"
        "       trio-mcp check [options] --url URL",
        description="Hold an MCP server (stdio or Streamable HTTP, any SDK) to the "
        "lifecycle, cancellation and robustness rules; exit 0 only if no check failed. "
        "Some checks call tools (a slow one, one that reports progress, one that echoes). "
        "Safe by default: the checker calls only the tools named with --slow-tool, "
        "--progress-tool and --echo-tool, and those the server annotates readOnlyHint: true; "
        "a check that needs another tool is SKIP and says which option to set. "
        "--call-unannotated-tools lets it call any other tool too, with made-up arguments, "
        "except a tool annotated destructiveHint: true, which is called only when named. "
        "Results print as each check finishes; Ctrl+C prints what finished.",
        epilog="Check areas: handshake, modern, jsonrpc, cancel, progress, concurrency, "
        "limits, shutdown, http (each check id is AREA.NAME; --json lists them).",
    )
    check.add_argument("--url", help="a Streamable HTTP endpoint instead of a command")
    output = check.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="write the report as JSON")
    output.add_argument("--markdown", action="store_true", help="write a Markdown report")
    check.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID",
        help="run only these checks (ids or areas, comma-separated)",
    )
    check.add_argument(
        "--skip", action="append", default=[], metavar="ID", help="leave these checks out"
    )
    check.add_argument(
        "--era",
        choices=ERA_CHOICES,
        default="auto",
        help="auto (default): every era the server speaks; modern or legacy: that one only",
    )
    check.add_argument(
        "--slow-tool",
        metavar="NAME",
        help="a tool that takes long, called by the concurrency, cancel and shutdown checks",
    )
    check.add_argument(
        "--slow-args", metavar="JSON", help="its arguments, a JSON object (long enough: ~30 s)"
    )
    check.add_argument(
        "--progress-tool",
        metavar="NAME",
        help="a tool that reports progress, called by the progress and cancel checks",
    )
    check.add_argument(
        "--progress-args",
        metavar="JSON",
        help="its arguments, a JSON object (a run that reports progress within --timeout)",
    )
    check.add_argument(
        "--echo-tool",
        metavar="NAME",
        help="a tool whose answer holds its one string argument (called 64 times at once "
        "and with a 1 MiB argument)",
    )
    check.add_argument(
        "--call-unannotated-tools",
        action="store_true",
        help="RISKY: also call tools not annotated readOnlyHint: true, with made-up arguments "
        "(never one annotated destructiveHint: true unless it is named)",
    )
    check.add_argument("--timeout", type=float, default=10.0, help="bound on any one answer (s)")
    check.add_argument(
        "--exit-timeout", type=float, default=5.0, help="bound on the server's exit (s)"
    )


def _add_html(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the request timeline to FILE: one HTML page, nothing fetched",
    )


def _add_env(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable in the server's environment (repeatable). The server gets only "
        "HOME, LANG, PATH, SHELL, TERM and a few more of ours unless --inherit-env",
    )
    command.add_argument(
        "--inherit-env",
        action="store_true",
        help="pass our whole environment to the server (secrets included)",
    )


def parse_env(pairs: list[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` options as a dict, or a :class:`CommandError` (status 2)."""
    env: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise CommandError(f"--env takes NAME=VALUE, not {pair!r}", BAD_ARGUMENTS)
        env[name] = value
    return env


def _add_url(command: argparse.ArgumentParser) -> None:
    command.add_argument("--url", help="a Streamable HTTP server's URL instead of a command")
    command.add_argument(
        "--auth",
        action="store_true",
        help="authorize with OAuth (prints a URL to open; with --url)",
    )


def _add_era(command: argparse.ArgumentParser, auto: str | None = None) -> None:
    command.add_argument(
        "--era",
        choices=ERA_CHOICES,
        default="auto",
        help=auto
        or "auto (default): probe with server/discover, else the handshake; "
        "modern: 2026-07-28 only; legacy: the handshake era only",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``trio-mcp`` console script; returns the exit status.

    Cancellation: Ctrl+C cancels the command's work (``call`` tells the server
    first), shuts the server down, prints one line and returns 130.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    options, command = split_command(argv)
    parser = build_parser()
    args = parser.parse_args(options)

    # Each command's module is imported only when it runs, so that --help and
    # argument errors answer without loading the client stack.
    if args.command == "demo":
        from ._demo import run_demo

        async def demo() -> int:
            await run_demo(
                server=args.server,
                width=None if args.full else 110,
                era=args.era,
                html=args.html,
            )
            return 0

        return _run(demo)
    if getattr(args, "auth", False):
        # Before any registration or network call: a missing extra is one line.
        from ._auth import require_auth_extra

        try:
            require_auth_extra()
        except CommandError as exc:
            print_error(sys.stderr, str(exc))
            return exc.status
    if args.command == "check":
        return _check(parser, args, command)
    if args.auth and not args.url:
        parser.error("--auth needs --url")
    if args.env and args.url:
        parser.error("--env is for a server command, not --url")
    try:
        env = parse_env(args.env)
    except CommandError as exc:
        print_error(sys.stderr, str(exc))
        return exc.status
    if args.command == "trace":
        if not command and not args.url:
            parser.error("trace needs the server command after -- (or --url)")
        from ._trace import run_trace

        return _run(
            partial(
                run_trace,
                command,
                as_json=args.json,
                time_limit=args.timeout or (330.0 if args.auth else 30.0),
                inherit_env=args.inherit_env,
                env=env,
                era=args.era,
                url=args.url,
                auth=args.auth,
                html=args.html,
            )
        )
    if args.url and len(command) != 2:
        parser.error("call --url needs: -- TOOL JSON")
    if not args.url and len(command) < 3:
        parser.error("call needs: -- CMD [ARGS...] TOOL JSON")
    *server_command, tool, raw = command
    try:
        arguments = parse_arguments(raw)
    except CommandError as exc:
        print_error(sys.stderr, str(exc))
        return exc.status
    from ._call import run_call

    return _run(
        partial(
            run_call,
            server_command,
            tool,
            arguments,
            progress_idle_timeout=args.timeout,
            inherit_env=args.inherit_env,
            env=env,
            era=args.era,
            verbose=args.verbose,
            url=args.url,
            auth=args.auth,
        )
    )


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace, command: list[str]) -> int:
    if bool(command) == bool(args.url):
        parser.error("check needs either the server command after -- or --url URL")
    try:
        slow_args = parse_arguments(args.slow_args) if args.slow_args else None
        progress_args = parse_arguments(args.progress_args) if args.progress_args else None
    except CommandError as exc:
        print_error(sys.stderr, str(exc))
        return exc.status
    from .._check import Options
    from .._check._checks import ALL_CHECKS
    from ._check import run_check

    only = [n for item in args.only for n in item.split(",") if n]
    skip = [n for item in args.skip for n in item.split(",") if n]
    known = {c.id for c in ALL_CHECKS} | {c.id.split(".")[0] for c in ALL_CHECKS}
    unknown = sorted(set(only + skip) - known)
    if unknown:
        print_error(sys.stderr, f"no such check or area: {', '.join(unknown)}")
        return BAD_ARGUMENTS

    options = Options(
        slow_tool=args.slow_tool,
        slow_args=slow_args,
        progress_tool=args.progress_tool,
        progress_args=progress_args,
        echo_tool=args.echo_tool,
        call_unannotated_tools=args.call_unannotated_tools,
        timeout=args.timeout,
        exit_timeout=args.exit_timeout,
    )
    eras = ("legacy", "modern") if args.era == "auto" else (args.era,)
    return _run(
        partial(
            run_check,
            command,
            url=args.url,
            options=options,
            only=only,
            skip=skip,
            eras=eras,
            output="json" if args.json else "markdown" if args.markdown else "text",
        )
    )


def parse_arguments(raw: str) -> dict[str, Any]:
    """The tool arguments of ``call``: a JSON object, or a :class:`CommandError`."""
    try:
        arguments = json.loads(raw)
    except ValueError as exc:
        raise CommandError(f"the tool arguments are not JSON: {exc}", BAD_ARGUMENTS) from None
    if not isinstance(arguments, dict):
        raise CommandError("the tool arguments must be a JSON object", BAD_ARGUMENTS)
    return arguments


def _run(async_fn: Callable[[], Awaitable[int]]) -> int:
    """Run one command under Trio: its status, or one error line for a user error."""
    try:
        try:
            return trio.run(async_fn)
        except BaseExceptionGroup as group:
            # A nursery wraps the one error of its body; several errors (or
            # none of the expected kinds) stay a group and show a traceback.
            reraise_unwrapped(group)
    except CommandError as exc:
        print_error(sys.stderr, str(exc))
        return exc.status
    except KeyboardInterrupt:
        print_error(sys.stderr, "interrupted (Ctrl+C)")
        return INTERRUPTED
    except USER_ERRORS as exc:
        print_error(sys.stderr, describe(exc))
        return 1
