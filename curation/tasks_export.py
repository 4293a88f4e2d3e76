"""The export Celery task (routed to the ``export`` queue by settings: ``curation.tasks.export*``).

Kept apart from ``curation/tasks.py``; ``CurationConfig.ready()`` imports this module so the
worker registers it. Thin: takes an id, calls ``run_export``, retries transient errors only.
"""

from __future__ import annotations

import logging

from celery import shared_task

from curation.services.export import ExportError, run_export
from curation.task_policy import RETRY, TRANSIENT_ERRORS

log = logging.getLogger(__name__)


@shared_task(name="curation.tasks.export_dataset", bind=True, **RETRY)
def export_dataset(self, dataset_id: int) -> str:  # type: ignore[no-untyped-def]
    try:
        return run_export(dataset_id)
    except TRANSIENT_ERRORS:
        raise
    except ExportError as exc:
        log.warning("export %s rejected: %s", dataset_id, exc)
        return "failed"
    except Exception:  # the job row already holds the traceback (run_export marks it failed)
        log.exception("export %s failed", dataset_id)
        return "failed"


def enqueue_export(dataset_id: int) -> None:
    """Send the task once the current transaction commits (the row must be visible to the worker)."""
    from django.db import transaction

    transaction.on_commit(lambda: export_dataset.delay(dataset_id))
