"""Logging filters: a refused request (403) is an expected answer, logged once as one line."""

from __future__ import annotations

import logging


class ForbiddenWithoutTraceback(logging.Filter):
    """Drop the traceback Django attaches to "Forbidden (Permission denied)" records (status 403)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
