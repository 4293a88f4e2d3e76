"""Request parameters through forms and serializers: the one owner of reading query strings.

Every view reads its query parameters (and any POST field it reads by hand) through a small
Django form with :func:`query`, every API view through a DRF serializer with :func:`api_query`.
A bad value (``abc`` or ``1.5`` for an id, ``²`` which ``str.isdigit`` accepts, an id past
PostgreSQL's bigint, NaN or infinity for a number, an over-long text) is refused with a 400
naming the parameter, never a 500 from the database. NUL bytes anywhere in a request are
refused even earlier, by ``config.middleware.RejectHostileInput``.

It lives on the lowest floor so that every app's views can use it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import BadRequest
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

MAX_ID = 2**63 - 1  # PostgreSQL bigint, the type of every primary key
MAX_TEXT = 1000  # a query-string value longer than this is refused (search terms, ids, choices)
ID_BOUNDS: dict[str, Any] = {"required": False, "min_value": 1, "max_value": MAX_ID}  # every optional id parameter


class IdField(forms.IntegerField):
    """An optional primary key: a positive ASCII-decimal integer that fits a bigint."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**ID_BOUNDS, **kwargs})


class TextField(forms.CharField):
    """An optional, stripped, bounded text (Django's CharField already refuses NUL)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", MAX_TEXT)
        super().__init__(**kwargs)


class BadParameter(BadRequest):
    """A 400 whose message names each bad parameter (``config.views.bad_request`` shows it)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in errors.items()))


def query(form_class: type[forms.Form], data: QueryDict) -> dict[str, Any]:
    """The cleaned parameters, or :class:`BadParameter` naming every bad one."""
    form = form_class(data)
    if not form.is_valid():
        raise BadParameter({name: [str(m) for m in msgs] for name, msgs in form.errors.items()})
    return form.cleaned_data


class ApiIdField(serializers.IntegerField):
    """The API's optional primary-key filter (same bounds as :class:`IdField`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**ID_BOUNDS, **kwargs})


def api_query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:  # type: ignore[type-arg]
    """The cleaned query parameters of an API request; a DRF 400 naming the fields otherwise."""
    # a plain dict, not the QueryDict: DRF reads "" in form-like data as "absent", so ``?page=``
    # or ``?corpus=`` would pass although "" is no integer (and the schema says integer)
    body = serializer_class(data={name: request.query_params.get(name) for name in request.query_params})
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


class StrictPageNumberPagination(PageNumberPagination):
    """DRF's page-number pagination, except that a ``page`` that is not a positive integer is a
    400 naming it (DRF would serve page 1 for ``page=`` and 404 for ``page=abc``); a page past
    the end stays a 404."""

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw not in self.last_page_strings:
            api_query(PageParams, request)
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
        return parameters


class PageParams(serializers.Serializer):  # type: ignore[type-arg]
    page = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)


class _ListedChoices(forms.models.ModelChoiceIterator):
    """The choices read by one plain SELECT: Django's iterator uses ``QuerySet.iterator()``, a
    server-side cursor on PostgreSQL (DECLARE ... WITH HOLD, FETCH, CLOSE: three round trips
    and a materialised result) for what is a handful of corpora, models or runs."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        for obj in self.queryset.all():
            yield self.choice(obj)


class ModelChoiceField(forms.ModelChoiceField):  # type: ignore[type-arg]
    """``forms.ModelChoiceField`` whose choices cost one ordinary query (see ``_ListedChoices``)."""

    iterator = _ListedChoices
