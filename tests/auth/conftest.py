"""Fixtures of the authorization tests."""

from collections.abc import Iterator

import pytest
from log_scan import LogCapture, capture_all_logs


@pytest.fixture
def log_capture() -> Iterator[LogCapture]:
    """Every log record at DEBUG, for the scans of ``log_scan`` (see there)."""
    with capture_all_logs() as capture:
        yield capture
