"""What Celery tasks retry: transient database and broker trouble only, with backoff.

Shared by ``curation.tasks`` and ``curation.tasks_export``; this module imports nothing heavy,
so ``CurationConfig.ready()`` can register the export task cheaply.
"""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError
from django.db import OperationalError as DatabaseOperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    DatabaseOperationalError,
    InterfaceError,
    BrokerOperationalError,
    ConnectionError,
    TimeoutError,
)
# Results live on the Job / RunChunk / ExportedDataset rows; nothing goes to the result backend.
RETRY: dict[str, Any] = {
    "ignore_result": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "max_retries": 8,
    "retry_jitter": True,
}
