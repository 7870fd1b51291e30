"""The public switch: ``telemetry="native" | "propagation" | "off"`` on
:class:`~trio_mcp.Server` and the clients, and ``TRIO_MCP_TELEMETRY`` for
deployments; ``telemetry_capture=True`` (or ``TRIO_MCP_TELEMETRY_CAPTURE``)
to put tool arguments and results on spans. Imports OpenTelemetry only when
the answer is not ``off``."""

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
#: The environment variable read when ``telemetry_capture=`` is not given.
CAPTURE_VARIABLE = "TRIO_MCP_TELEMETRY_CAPTURE"
_YES = ("1", "true", "yes", "on")
_NO = ("", "0", "false", "no", "off")


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


def resolve_capture(capture: bool | None) -> bool:
    """Whether tool arguments and results go on spans: *capture* when given,
    else ``TRIO_MCP_TELEMETRY_CAPTURE`` (``1``, ``true``, ``yes``, ``on``;
    ``0``, ``false``, ``no``, ``off`` or unset: no).

    Raises:
        ValueError: the variable holds something else.
    """
    if capture is not None:
        return bool(capture)
    value = os.environ.get(CAPTURE_VARIABLE, "").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ValueError(f"{CAPTURE_VARIABLE} must be 1 or 0 (true or false), not {value!r}")


def telemetry_middleware(
    mode: str | None, role: Role, *, transport: object = None, capture: bool | None = None
) -> Telemetry | None:
    """The telemetry middleware for *role* in *mode* (see :func:`resolve`),
    or None when it is off; with *capture* (see :func:`resolve_capture`), its
    ``tools/call`` spans carry the arguments and the result.

    Raises:
        ValueError, MissingExtra: as :func:`resolve` and :func:`resolve_capture`.
    """
    resolved = resolve(mode)
    captured = resolve_capture(capture)
    if resolved == "off":
        return None
    from ._middleware import Telemetry

    return Telemetry(role, resolved, transport=transport, capture=captured)


def watching(telemetry: Telemetry | None, session: Any) -> AbstractAsyncContextManager[None]:
    """Around a session's life: its duration recorded by *telemetry* (see
    :meth:`Telemetry.watching`), or nothing when telemetry is off."""
    return nullcontext() if telemetry is None else telemetry.watching(session)
