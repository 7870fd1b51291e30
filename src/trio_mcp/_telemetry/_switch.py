"""The public switch: ``telemetry="native" | "propagation" | "off"`` on
:class:`~trio_mcp.Server` and the clients, and ``TRIO_MCP_TELEMETRY`` for
deployments. Imports OpenTelemetry only when the answer is not ``off``."""

from __future__ import annotations

import functools
import importlib.util
import os
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from .._errors import MissingExtra
from ._semconv import Role

if TYPE_CHECKING:
    from ._middleware import Telemetry

TelemetryMode = Literal["native", "propagation", "off"]
#: The environment variable read when ``telemetry=`` is not given.
ENVIRONMENT_VARIABLE = "TRIO_MCP_TELEMETRY"
_MODES = ("native", "propagation", "off")


@functools.cache
def api_installed() -> bool:
    """Whether the OpenTelemetry API (the ``otel`` extra) can be imported."""
    return importlib.util.find_spec("opentelemetry") is not None and (
        importlib.util.find_spec("opentelemetry.trace") is not None
    )


def resolve(mode: str | None) -> TelemetryMode:
    """The mode in force: *mode* when given, else ``TRIO_MCP_TELEMETRY``, else
    ``native`` when the OpenTelemetry API is installed and ``off`` when not.

    Raises:
        ValueError: the mode (or the variable) is none of the three.
        MissingExtra: a mode other than ``off`` was asked for without the
            ``otel`` extra.
    """
    source = "telemetry"
    if mode is None:
        value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
        if not value:
            return "native" if api_installed() else "off"
        mode, source = value, ENVIRONMENT_VARIABLE
    if mode not in _MODES:
        raise ValueError(f"{source} must be native, propagation or off, not {mode!r}")
    if mode != "off" and not api_installed():
        raise MissingExtra(f"{source}={mode}", "otel")
    return mode  # type: ignore[return-value]


def telemetry_middleware(
    mode: str | None, role: Role, *, transport: object = None
) -> Telemetry | None:
    """The telemetry middleware for *role* in *mode* (see :func:`resolve`),
    or None when it is off."""
    resolved = resolve(mode)
    if resolved == "off":
        return None
    from ._middleware import Telemetry

    return Telemetry(role, resolved, transport=transport)


def watching(telemetry: Telemetry | None, session: Any) -> AbstractAsyncContextManager[None]:
    """Around a session's life: its duration recorded by *telemetry* (see
    :meth:`Telemetry.watching`), or nothing when telemetry is off."""
    return nullcontext() if telemetry is None else telemetry.watching(session)
