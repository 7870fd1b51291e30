"""Spans and metrics of one call, with no change to the server or the client:
configure the OpenTelemetry SDK (here with its in-memory exporters), and call."""

import trio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trio_mcp import Server
from trio_mcp.testing import open_memory_client

spans = InMemorySpanExporter()  # in production: an OTLP exporter, say
tracing = TracerProvider()
tracing.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(tracing)
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

server = Server("shop")  # telemetry="native" by default once the API is installed


@server.tool()
async def echo(text: str) -> str:
    return text


async def main() -> None:
    async with open_memory_client(server, era="modern") as client:
        await client.call_tool("echo", {"text": "hi"})


trio.run(main)

calls = [span for span in spans.get_finished_spans() if span.name == "tools/call echo"]
sent = next(span for span in calls if span.kind is trace.SpanKind.CLIENT)
served = next(span for span in calls if span.kind is trace.SpanKind.SERVER)
print("spans:", sent.kind.name, sent.name, "/", served.kind.name, served.name)
print("one trace:", sent.context.trace_id == served.context.trace_id)
print("the server span's parent is the client span:", served.parent.span_id == sent.context.span_id)
print("attributes:", dict(served.attributes))
data = reader.get_metrics_data().resource_metrics[0].scope_metrics[0]
print("metrics:", ", ".join(sorted(metric.name for metric in data.metrics)))
