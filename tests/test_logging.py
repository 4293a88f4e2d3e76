"""A refused request is logged once, as one line without a traceback."""

from __future__ import annotations

import logging
import sys

import pytest
from django.urls import reverse


def _console_handlers(name: str) -> list[logging.Handler]:
    """Every handler a record of logger ``name`` reaches (walking propagation like logging does)."""
    found: list[logging.Handler] = []
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        found += [h for h in logger.handlers if type(h) is logging.StreamHandler]  # not pytest's capture handlers
        logger = logger.parent if logger.propagate else None
    return found


@pytest.mark.django_db
def test_403_is_logged_once_without_traceback(client_for, annotator, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    handlers = _console_handlers("django.request")
    assert len(handlers) == 1, handlers  # once, not through Django's handler and the root's
    seen: list[str] = []
    handler = handlers[0]
    monkeypatch.setattr(handler, "emit", lambda record: seen.append(handler.format(record)))
    assert client_for(annotator).get(reverse("pipeline:job_list")).status_code == 403
    assert len(seen) == 1 and seen[0].startswith("Forbidden (Permission denied): /jobs/"), seen
    assert "Traceback" not in seen[0]
    # other errors keep their traceback
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), sys.exc_info())
    record.status_code = 500
    assert handler.filter(record) and "Traceback" in handler.format(record)
