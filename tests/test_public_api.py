"""The public namespaces: every exported name exists, and the sans-I/O layers stay trio-free."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

PUBLIC_MODULES = [
    "trio_mcp",
    "trio_mcp.lowlevel",
    "trio_mcp.tasks",
    "trio_mcp.bus",
    "trio_mcp.extensions",
    "trio_mcp.protocol",
    "trio_mcp.types",
    "trio_mcp.transports",
    "trio_mcp.testing",
    "trio_mcp.auth",
]

EXPORTS = [
    (module, name) for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__
]


@pytest.mark.parametrize(("module", "name"), EXPORTS, ids=[f"{m}.{n}" for m, n in EXPORTS])
def test_every_exported_name_is_importable(module: str, name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {module} import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_all_has_no_duplicates_and_only_strings(module: str) -> None:
    names = importlib.import_module(module).__all__
    assert names, module
    assert all(isinstance(name, str) for name in names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_star_import_gives_exactly_all(module: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    namespace.pop("__builtins__", None)
    assert set(namespace) == set(importlib.import_module(module).__all__)


#: The session kernel: in trio_mcp.lowlevel (as trio keeps its kernel in trio.lowlevel),
#: with the records of requests and who sent them.
KERNEL = {
    "Session",
    "open_session",
    "Dispatcher",
    "RequestContext",
    "SessionStatistics",
    "Transport",
    "DEFAULT",
    "SessionDefault",
    # who a session's requests come from (open_session(identity=...))
    "Caller",
    "Identity",
    "NowaitSendTransport",
    "NowaitReceiveTransport",
    "FlushingTransport",
    "BoundedTransport",
    "EraHints",
    "HeaderMirroringTransport",
    "OriginTransport",
    "FrameOrigin",
    "NetworkTransport",
    "Network",
    "RequestObserver",
    "FrameDirection",
    "SlowStepReporter",
    "RequestRecord",
    "RequestState",
    "CancelOrigin",
    "Direction",
    "Progress",
    "SessionState",
    # the records shown to people, and the frames shown beside them
    "request_table",
    "request_timeline",
    "FrameLog",
    "SeenFrame",
}

#: Tasks, for both roles: in trio_mcp.tasks (as trio has trio.to_thread).
TASKS = {
    # where a server's tasks run and are kept (Server(tasks=...))
    "TaskRunner",
    "TaskStore",
    "MemoryTaskStore",
    "RedisTaskStore",
    "TaskStoreError",
    "TaskStoreUnavailable",
    "MissingExtra",
    # what Client.call_tool(as_task=True) hands back: a task a request became
    "TaskHandle",
}

#: What an application uses to run a server or connect a client: at the top level.
ENTRY_POINTS = {
    "serve_session",
    "serve_stdio",
    "run_stdio",
    "http_app",
    "serve_http",
    "run_http",
    "serve_websocket",
    "open_stdio_client",
    "open_http_client",
    "open_websocket_client",
}


def test_the_top_level_is_the_application_api_and_lowlevel_the_kernel() -> None:
    top = set(importlib.import_module("trio_mcp").__all__)
    lowlevel = set(importlib.import_module("trio_mcp.lowlevel").__all__)
    assert lowlevel == KERNEL
    assert not top & KERNEL, "kernel names belong to trio_mcp.lowlevel"
    tasks = set(importlib.import_module("trio_mcp.tasks").__all__)
    assert tasks == TASKS
    assert not (top | lowlevel) & TASKS, "task names have one home: trio_mcp.tasks"
    extensions = set(importlib.import_module("trio_mcp.extensions").__all__)
    assert not (top | lowlevel | tasks) & extensions, (
        "extension points have one home: trio_mcp.extensions"
    )
    assert top >= ENTRY_POINTS
    assert {"Server", "Context", "ToolError", "Header", "Client", "open_client", "MCPError"} <= top
    assert len(top) <= 41, "the top level is what an application uses, not every layer"


def test_transports_export_channels_not_entry_points() -> None:
    transports = set(importlib.import_module("trio_mcp.transports").__all__)
    assert not transports & ENTRY_POINTS, "entry points that need a Server or Client live above"


def run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# ``src/trio_mcp/__init__.py`` imports lazily (PEP 562), so importing the sans-I/O
# layer through the package does not pull trio in.
@pytest.mark.parametrize("module", ["trio_mcp.protocol", "trio_mcp.types"])
def test_importing_sans_io_layer_in_fresh_interpreter_does_not_import_trio(module: str) -> None:
    proc = run_fresh(
        f"""
        import sys
        import {module}
        print(sorted(m for m in sys.modules if m == "trio" or m.startswith("trio.")))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["trio_mcp.protocol", "trio_mcp.types"])
def test_sans_io_layer_needs_no_trio(module: str) -> None:
    # The same check with the parent package's __init__ skipped: only the code of
    # the sans-I/O layer (and what it imports) runs.
    proc = run_fresh(
        f"""
        import importlib.util, sys, types
        spec = importlib.util.find_spec("trio_mcp")
        package = types.ModuleType("trio_mcp")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["trio_mcp"] = package
        import {module}
        assert {module}.__all__
        print(sorted(m for m in sys.modules if m == "trio" or m.startswith("trio.")))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
