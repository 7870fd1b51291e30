"""Run the official MCP conformance harness against trio_mcp; print a table.

Used by ``scripts/conformance`` (see ``--help``). It runs *legs*: a pinned
harness version, and for the 0.2 harnesses one of their frozen requirement
sets (``--requirements 2025-11-25``, ``--requirements 2026-07-28``: exactly the
scenarios a spec revision requires, frozen at its release, run at that
revision's wire version). For each leg it

1. installs, once, Node 22 (the npm package ``node``; the harness needs
   Node >= 22) and the harness with its TypeScript SDK pinned, from the npm
   registry only, into a cache directory outside the repository;
2. starts ``examples/conformance_server.py --port 0`` and runs the leg's server
   scenarios against it in one harness run;
3. runs the leg's client scenarios one at a time (the harness's parallel mode
   is timing-sensitive on small machines) with ``examples/conformance_client.py``.
   A requirement set's client scenario is run as the harness's own
   ``--requirements`` run does it: ``--scenario NAME --spec-version REV
   --force``, so its mock server speaks REV and the client is told REV in
   ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (without ``--spec-version`` the harness
   would run a scenario that predates 2026-07-28 at the 2025-11-25 wire);
4. scores each scenario as the harness's ``--expected-failures`` mode does (a
   FAILURE or WARNING check fails it; for client scenarios so does a non-zero
   harness exit, i.e. a client that failed or timed out) and compares with
   the leg's ``conformance/expected-failures-<leg>.yml``: an unexpected
   failure, or a listed scenario that passes (a stale entry), makes the run
   fail; so does an entry that names no scenario the leg scores.

The scenarios a requirement set lists as "Run and reported, but never scored"
(``extension``: the ``tasks-*`` and some OAuth ones; ``pending``;
``added-after-release``) are run and shown in their own section of the table;
they never belong in the ``server:``/``client:`` lists. Those trio_mcp holds
itself to anyway are listed under ``held_server:``/``held_client:`` of the same
file (the tasks extension's ``tasks-*``): one of those that fails fails the
run, and an entry that names no unscored scenario of the leg is refused. The
other unscored ones never fail the run.

Exit status: 0 when every scored scenario did what the expected-failures file
says, 1 otherwise, 2 on a setup problem (install, server start, a bad
expected-failures file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_VERSION = "22.23.3"
SDK_VERSION = "1.32.2"


@dataclass(frozen=True)
class Leg:
    """One scored run: a harness version, and maybe one of its requirement sets."""

    harness: str
    #: A frozen requirement set of the harness (``list --requirements``); None:
    #: every server scenario (``--suite all``) and every client scenario.
    requirements: str | None = None

    @property
    def name(self) -> str:
        return self.harness if self.requirements is None else f"{self.harness}/{self.requirements}"

    @property
    def slug(self) -> str:
        return self.name.replace("/", "-")

    @property
    def expected_path(self) -> Path:
        return ROOT / "conformance" / f"expected-failures-{self.slug}.yml"

    def scenario_args(self) -> list[str]:
        """What runs one scenario as this leg's harness run would (the wire of
        the requirement set's revision)."""
        if self.requirements is None:
            return []
        return ["--spec-version", self.requirements, "--force"]


#: The pinned legs. 0.2.0-alpha.12's ``--spec-version 2025-11-25`` run of
#: before is gone: its scenarios are exactly those of the 2025-11-25
#: requirement set (scored or not), run at the same wire.
LEGS = (
    Leg("0.1.16"),
    Leg("0.2.0-alpha.12", "2025-11-25"),
    Leg("0.2.0-alpha.12", "2026-07-28"),
)


@dataclass
class Plan:
    """What a leg runs: scenario names by mode, and the reasons of the unscored ones."""

    server: list[str] = field(default_factory=list)
    client: list[str] = field(default_factory=list)
    #: ``(mode, scenario)`` -> why it is never scored (extension, pending, ...).
    unscored: dict[tuple[str, str], str] = field(default_factory=dict)

    def scenarios(self, mode: str) -> list[str]:
        return self.server if mode == "server" else self.client

    def scored(self, mode: str) -> list[str]:
        return [s for s in self.scenarios(mode) if (mode, s) not in self.unscored]


@dataclass
class Outcome:
    mode: str
    scenario: str
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float | None = None
    expected_failure: bool = False
    #: Why the leg never scores it (None: scored).
    unscored: str | None = None
    #: Unscored, but listed under ``held_<mode>:``: it must pass all the same.
    held: bool = False

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        if self.unscored is not None and not self.held:
            return "pass" if self.passed else "fail"
        if self.passed:
            return "STALE" if self.expected_failure else "PASS"
        return "xfail" if self.expected_failure else "FAIL"

    @property
    def ok(self) -> bool:
        """Whether it did what the leg expects (an unscored one always does,
        unless it is held: then it must pass)."""
        if self.unscored is not None:
            return self.passed or not self.held
        return self.passed != self.expected_failure


class SetupError(Exception):
    pass


# ------------------------------------------------------------------ install


def run(cmd: list[str], cwd: Path, what: str) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SetupError(f"{what} failed ({' '.join(cmd)}):\n{result.stdout}{result.stderr}")


def npm_install(directory: Path, packages: list[str], what: str) -> None:
    """``npm install`` exact *packages* into *directory*, once (a stamp file
    remembers what was installed)."""
    stamp = directory / ".trio_mcp-installed"
    wanted = " ".join(packages)
    if stamp.is_file() and stamp.read_text() == wanted:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SetupError("npm is not on PATH (the harness is installed from the npm registry)")
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / "package.json").is_file():
        (directory / "package.json").write_text('{"name": "trio-mcp-conformance", "private": true}')
    print(f"installing {what} into {directory} ...", file=sys.stderr)
    run([npm, "install", "--no-audit", "--no-fund", "--save-exact", *packages], directory, what)
    stamp.write_text(wanted)


def node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "-p", "process.versions.node"], capture_output=True, text=True, check=True
        ).stdout
        return int(out.split(".")[0])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def install(home: Path, version: str) -> tuple[str, Path]:
    """Node >= 22 and the harness *version*; returns (node binary, CLI path)."""
    node = shutil.which("node")
    if node is None or node_major(node) < 22:
        npm_install(home / "node22", [f"node@{NODE_VERSION}"], f"Node {NODE_VERSION}")
        node = str(home / "node22" / "node_modules" / ".bin" / "node")
    if node_major(node) < 22:
        raise SetupError(f"{node} is not Node >= 22")
    harness_dir = home / f"harness-{version}"
    npm_install(
        harness_dir,
        [
            f"@modelcontextprotocol/conformance@{version}",
            f"@modelcontextprotocol/sdk@{SDK_VERSION}",
        ],
        f"conformance harness {version}",
    )
    cli = harness_dir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist"
    cli = cli / "index.js"
    if not cli.is_file():
        raise SetupError(f"harness CLI missing: {cli}")
    return node, cli


def list_scenarios(node: str, cli: Path, mode: str, extra: tuple[str, ...] = ()) -> list[str]:
    out = subprocess.run(
        [node, str(cli), "list", f"--{mode}", *extra], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"^  - (\S+)", out, flags=re.MULTILINE)


def parse_requirements(text: str) -> Plan:
    """The scenarios of ``conformance list --requirements REV`` (harness 0.2):
    the server and client lists, then the "never scored" ones by reason, each
    tagged ``[server]`` or ``[client]``; they run too, after the scored ones.

    Raises:
        SetupError: the output has none of that (another harness's format).
    """
    plan = Plan()
    section: str | None = None
    reason = ""
    for line in text.splitlines():
        if line.startswith("Server scenarios"):
            section = "server"
        elif line.startswith("Client scenarios"):
            section = "client"
        elif line.startswith("Run and reported, but never scored"):
            section = "unscored"
        elif section == "unscored" and (m := re.match(r"^  (\S+) \(\d+\):$", line)):
            reason = m[1]
        elif section == "unscored" and (m := re.match(r"^    - (\S+) \[(server|client)\]$", line)):
            plan.unscored[(m[2], m[1])] = reason
            plan.scenarios(m[2]).append(m[1])
        elif section in ("server", "client") and (m := re.match(r"^  - (\S+)$", line)):
            plan.scenarios(section).append(m[1])
    if not plan.server and not plan.client:
        raise SetupError(f"no scenarios in the requirement-set listing:\n{text}")
    return plan


def plan_leg(node: str, cli: Path, leg: Leg) -> Plan:
    """What *leg* runs (read from the harness itself)."""
    if leg.requirements is None:
        return Plan(list_scenarios(node, cli, "server"), list_scenarios(node, cli, "client"))
    out = subprocess.run(
        [node, str(cli), "list", "--requirements", leg.requirements],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_requirements(out)


# ------------------------------------------------------------------ results


_TS = re.compile(r"^(?P<name>.+)-(?P<ts>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d+Z)$")


def read_checks(directory: Path, prefix: str = "") -> dict[str, list[dict[str, object]]]:
    """Newest ``checks.json`` per scenario under *directory* (names without *prefix*)."""
    newest: dict[str, tuple[str, Path]] = {}
    for path in directory.rglob("checks.json"):
        match = _TS.match(path.parent.name)
        if match is None:
            continue
        parent = path.parent.parent.relative_to(directory)
        name = match["name"]
        key = name if str(parent) == "." else f"{parent.as_posix()}/{name}"
        key = key.removeprefix(prefix)
        if key not in newest or match["ts"] > newest[key][0]:
            newest[key] = (match["ts"], path)
    result = {}
    for key, (_, path) in newest.items():
        try:
            result[key] = json.loads(path.read_text())
        except (OSError, ValueError):
            result[key] = []
    return result


def score(outcome: Outcome, checks: list[dict[str, object]] | None) -> None:
    if checks is None:
        outcome.problems.append("no checks.json (the scenario did not run)")
        return
    for status in ("SUCCESS", "FAILURE", "WARNING"):
        outcome.counts[status] = sum(1 for c in checks if c.get("status") == status)
    for check in checks:
        if check.get("status") in ("FAILURE", "WARNING"):
            message = check.get("errorMessage") or check.get("description")
            outcome.problems.append(f"{check.get('status')} {check.get('id')}: {message}")


def load_expected(path: Path) -> dict[str, set[str]]:
    """The ``server:``/``client:`` lists of a harness expected-failures YAML file
    (only that subset of YAML: keys, ``- item`` lines, ``[]``, comments)."""
    expected: dict[str, set[str]] = {
        "server": set(),
        "client": set(),
        "held_server": set(),
        "held_client": set(),
    }
    if not path.is_file():
        return expected
    section: str | None = None
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line.startswith((" ", "-")):
            key, _, rest = line.partition(":")
            section = key.strip()
            if section not in expected or rest.strip() not in ("", "[]"):
                raise SetupError(f"{path}: unsupported line {raw!r}")
        elif line.strip().startswith("- ") and section is not None:
            expected[section].add(line.strip()[2:].strip().strip("'\""))
        else:
            raise SetupError(f"{path}: unsupported line {raw!r}")
    return expected


def check_expected(path: Path, expected: dict[str, set[str]], plan: Plan) -> None:
    """Refuse an entry that names no scenario the leg scores (a typo, a renamed
    scenario, or an unscored one, which never fails and so is never expected to).

    Raises:
        SetupError: such an entry.
    """
    for mode in ("server", "client"):
        unknown = sorted(expected[mode] - set(plan.scored(mode)))
        if unknown:
            raise SetupError(
                f"{path}: {mode} entries that are no scored scenario of this leg: "
                + ", ".join(unknown)
            )
        unscored = {name for m, name in plan.unscored if m == mode}
        unknown = sorted(expected[f"held_{mode}"] - unscored)
        if unknown:
            raise SetupError(
                f"{path}: held_{mode} entries that are no unscored scenario of this leg: "
                + ", ".join(unknown)
            )


# ------------------------------------------------------------------- server


def start_server(log: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the fixture server on a free port; returns (process, MCP URL)."""
    cmd = [sys.executable, str(ROOT / "examples" / "conformance_server.py"), "--port", "0"]
    with log.open("w") as errors:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=ROOT)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30.0)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("listening on "):
        stop_server(proc)
        raise SetupError(f"the conformance server did not start (log: {log}): {line!r}")
    return proc, line.removeprefix("listening on ").strip()


def stop_server(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_server_suite(
    node: str, cli: Path, leg: Leg, plan: Plan, out: Path, only: list[str]
) -> list[Outcome]:
    out.mkdir(parents=True, exist_ok=True)
    scenarios = only or plan.server
    proc, url = start_server(out / "server.log")
    try:
        # One scenario: run just it; otherwise the leg's whole run (and report on *only*).
        if len(only) == 1:
            args = ["--scenario", only[0], *leg.scenario_args()]
        elif leg.requirements is not None:
            args = ["--requirements", leg.requirements]
        else:
            args = ["--suite", "all"]
        with (out / "harness.log").open("w") as log:
            subprocess.run(
                [node, str(cli), "server", "--url", url, "-o", str(out), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=600,
            )
    finally:
        stop_server(proc)
    results = read_checks(out, prefix="server-")
    outcomes = []
    for name in scenarios:
        outcome = Outcome("server", name, unscored=plan.unscored.get(("server", name)))
        score(outcome, results.get(name))
        outcomes.append(outcome)
    return outcomes


# ------------------------------------------------------------------- client


def run_client_scenarios(
    node: str, cli: Path, leg: Leg, plan: Plan, out: Path, only: list[str], timeout_ms: int
) -> list[Outcome]:
    out.mkdir(parents=True, exist_ok=True)
    client = ROOT / "examples" / "conformance_client.py"
    command = f"{sys.executable} {client}"
    if " " in sys.executable or " " in str(client):
        # The harness splits --command on single spaces.
        raise SetupError(f"paths with spaces are not supported by the harness: {command!r}")
    scenarios = only or plan.client
    outcomes = []
    for name in scenarios:
        start = time.monotonic()
        with (out / "harness.log").open("a") as log:
            rc = subprocess.run(
                [
                    node,
                    str(cli),
                    "client",
                    "--command",
                    command,
                    "--scenario",
                    name,
                    *leg.scenario_args(),
                    "--timeout",
                    str(timeout_ms),
                    "-o",
                    str(out),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=timeout_ms / 1000 + 60,
            ).returncode
        outcome = Outcome(
            "client",
            name,
            seconds=time.monotonic() - start,
            unscored=plan.unscored.get(("client", name)),
        )
        score(outcome, read_checks(out).get(name))
        if rc != 0 and outcome.passed:
            outcome.problems.append(f"harness exit code {rc} (client failed or timed out)")
        outcomes.append(outcome)
        print(f"  {leg.name} client {name:45} {outcome.seconds:5.1f}s", file=sys.stderr)
    return outcomes


# -------------------------------------------------------------------- main


WIDTH = 26


def report(leg: str, outcomes: list[Outcome], details: bool) -> None:
    """The leg's table: scored scenarios, then the unscored ones in their own section."""
    scored = [o for o in outcomes if o.unscored is None]
    unscored = [o for o in outcomes if o.unscored is not None]
    for o in scored:
        _row(leg, o, show=details or not o.expected_failure)
        if o.verdict == "STALE":
            print(f"{'':{WIDTH + 13}}- listed as an expected failure but passed: remove the entry")
    if unscored:
        print(f"{leg:{WIDTH}} run and reported, but never scored (they never fail the run):")
        for o in unscored:
            _row(leg, o, show=details, note=f"({o.unscored})")


def _row(leg: str, o: Outcome, *, show: bool, note: str = "") -> None:
    counts = " ".join(f"{k[0]}={v}" for k, v in o.counts.items())
    print(f"{leg:{WIDTH}} {o.mode:6} {o.verdict:5} {o.scenario:45} {counts} {note}".rstrip())
    if o.problems and show:
        for problem in o.problems[:5]:
            print(f"{'':{WIDTH + 13}}- {problem[:240]}")


def summarize(leg: str, outcomes: list[Outcome]) -> list[str]:
    lines = []
    for mode in ("server", "client"):
        mine = [o for o in outcomes if o.mode == mode and o.unscored is None]
        extra = [o for o in outcomes if o.mode == mode and o.unscored is not None]
        if not mine and not extra:
            continue
        passed = sum(o.passed for o in mine)
        xfail = sum(1 for o in mine if o.expected_failure and not o.passed)
        bad = sum(1 for o in mine if not o.ok)
        line = (
            f"{leg} {mode}: {passed}/{len(mine)} passed, "
            f"{xfail} expected failures, {bad} unexpected"
        )
        if extra:
            line += f"; unscored {sum(o.passed for o in extra)}/{len(extra)} passed"
            held = [o for o in extra if o.held]
            if held:
                line += f" (held to: {sum(o.passed for o in held)}/{len(held)})"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/conformance", description=__doc__.split("\n\n")[0]
    )
    legs = {leg.name: leg for leg in LEGS}
    parser.add_argument(
        "--leg",
        action="append",
        choices=sorted(legs),
        help="leg(s) to run (default: all pinned ones)",
    )
    parser.add_argument(
        "--harness",
        action="append",
        choices=sorted({leg.harness for leg in LEGS}),
        help="run every leg of this harness version (repeatable)",
    )
    parser.add_argument("--server-only", action="store_true")
    parser.add_argument("--client-only", action="store_true")
    parser.add_argument(
        "--scenario", action="append", default=[], help="run only this scenario (repeatable)"
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=Path(
            os.environ.get("CONFORMANCE_HOME", Path.home() / ".cache" / "trio_mcp" / "conformance")
        ),
        help="install directory (default: $CONFORMANCE_HOME or ~/.cache/trio_mcp/conformance)",
    )
    parser.add_argument("--out", type=Path, help="results directory (default: under --home)")
    parser.add_argument("--timeout-ms", type=int, default=30000, help="per client scenario")
    parser.add_argument("--install-only", action="store_true")
    parser.add_argument(
        "--details", action="store_true", help="show checks of xfail and unscored scenarios"
    )
    args = parser.parse_args(argv)

    chosen = [legs[name] for name in args.leg or ()]
    chosen += [leg for leg in LEGS if leg.harness in (args.harness or ()) and leg not in chosen]
    chosen = chosen or list(LEGS)
    out_root = args.out or args.home / "results" / time.strftime("%Y%m%d-%H%M%S")
    started = time.monotonic()
    all_ok = True
    summary = []
    try:
        for leg in chosen:
            leg_started = time.monotonic()
            node, cli = install(args.home, leg.harness)
            if args.install_only:
                print(f"harness {leg.harness}: {node} {cli}")
                continue
            plan = plan_leg(node, cli, leg)
            expected = load_expected(leg.expected_path)
            check_expected(leg.expected_path, expected, plan)
            outcomes: list[Outcome] = []
            if not args.client_only:
                only = [s for s in args.scenario if s in plan.server]
                if not args.scenario or only:
                    outcomes += run_server_suite(
                        node, cli, leg, plan, out_root / leg.slug / "server", only
                    )
            if not args.server_only:
                only = [s for s in args.scenario if s in plan.client]
                if not args.scenario or only:
                    outcomes += run_client_scenarios(
                        node,
                        cli,
                        leg,
                        plan,
                        out_root / leg.slug / "client",
                        only,
                        args.timeout_ms,
                    )
            for o in outcomes:
                o.expected_failure = o.scenario in expected[o.mode]
                o.held = o.scenario in expected[f"held_{o.mode}"]
            report(leg.name, outcomes, args.details)
            all_ok &= all(o.ok for o in outcomes)
            summary += summarize(leg.name, outcomes)
            if outcomes:
                summary.append(f"{leg.name}: {time.monotonic() - leg_started:.0f}s")
    except (SetupError, subprocess.SubprocessError) as exc:
        print(f"conformance: setup problem: {exc}", file=sys.stderr)
        return 2
    if args.install_only:
        return 0
    print()
    for line in summary:
        print(line)
    print(f"results: {out_root}  ({time.monotonic() - started:.0f}s)")
    print("conformance: OK" if all_ok else "conformance: FAILED (unexpected results above)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
