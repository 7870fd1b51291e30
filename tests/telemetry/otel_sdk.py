"""The OpenTelemetry SDK with its in-memory exporters, as the telemetry tests
(and the processes they start) read spans and metrics with it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Sdk:
    """A tracer provider and a meter provider whose data stays in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def install(self) -> Sdk:
        """Make these the global providers (once per process)."""
        trace.set_tracer_provider(self.tracer_provider)
        metrics.set_meter_provider(self.meter_provider)
        return self

    def spans(self) -> list[dict[str, Any]]:
        return [span_row(span) for span in self.exporter.get_finished_spans()]

    def points(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Every metric's data points: ``(attributes, value)``; a histogram's
        value is its count of measurements."""
        found: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "count", None)
                        if value is None:
                            value = getattr(point, "value", None)
                        found.setdefault(metric.name, []).append(
                            (dict(point.attributes or {}), value)
                        )
        return found


def span_row(span: ReadableSpan) -> dict[str, Any]:
    """A finished span as JSON: ids in hex, as a test compares them."""
    context = span.context
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_id": None if span.parent is None else format(span.parent.span_id, "016x"),
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": event.name, "attributes": dict(event.attributes or {})}
            for event in span.events
        ],
        "status": span.status.status_code.name,
        "description": span.status.description,
        "links": [format(link.context.span_id, "016x") for link in span.links],
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
    }


def write_spans(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def read_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]
