"""OpenTelemetry for trio_mcp: the semantic conventions it follows
(``_semconv``, pure), the middleware that emits spans and metrics and carries
trace context in ``_meta`` (``_middleware``, imported only when telemetry is
on), and the public switch (``_switch``)."""
