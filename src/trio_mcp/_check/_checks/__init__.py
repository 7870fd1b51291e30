"""Every check, one module per area, in the order they run.

Spec: see each module.
"""

from __future__ import annotations

from .._definition import Check
from . import (
    cancellation,
    concurrency,
    handshake,
    http,
    jsonrpc,
    limits,
    listen,
    modern,
    progress,
    shutdown,
)

#: Every check, in run order: the opening, the envelope, then the lifecycle;
#: progress before cancellation (it measures the progress tool), and the
#: stdout check last (it reads every stdio connection of the run).
ALL_CHECKS: tuple[Check, ...] = (
    *handshake.CHECKS,
    *modern.CHECKS,
    *listen.CHECKS,
    *jsonrpc.CHECKS,
    *progress.CHECKS,
    *cancellation.CHECKS,
    *concurrency.CHECKS,
    *limits.CHECKS,
    *http.CHECKS,
    *shutdown.CHECKS,
)
