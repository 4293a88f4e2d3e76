"""Every model of our apps is in the Django admin, and its list page opens for an admin."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.db.models import Model
from django.urls import reverse

OUR_APPS = ("accounts", "curation", "annotation")


def our_models() -> list[type[Model]]:
    return [m for app in OUR_APPS for m in apps.get_app_config(app).get_models()]


def test_every_model_is_registered() -> None:
    missing = [m.__name__ for m in our_models() if not admin.site.is_registered(m)]
    assert missing == []


@pytest.mark.django_db
def test_every_changelist_opens(admin_user, client_for) -> None:  # type: ignore[no-untyped-def]
    client = client_for(admin_user)
    for model in our_models():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = client.get(url)
        assert response.status_code == 200, f"{url} -> {response.status_code}"
