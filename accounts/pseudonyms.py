"""Stable pseudonyms for people in exported data (dataset exports' judgments, evaluation
studies' ratings): the same user gets the same pseudonym in every export of this installation."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def pseudonym(user_id: int | None) -> str:
    """HMAC-SHA256 of the user id under SECRET_KEY, 10 hex digits (``ann_…``); empty for None."""
    if user_id is None:
        return ""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"annotator:{user_id}".encode(), hashlib.sha256).hexdigest()
    return f"ann_{digest[:10]}"
