"""Role checks for views (decorator, mixin) and for the REST API (permission classes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission

from accounts.roles import STAFF_ROLES, Role, has_role

ViewFunc = Callable[..., HttpResponse]


def role_required(*roles: str) -> Callable[[ViewFunc], ViewFunc]:
    """Login required, then one of ``roles`` (admin always passes) or 403."""

    def decorator(view: ViewFunc) -> ViewFunc:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise PermissionDenied("Your role does not give access to this page.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


staff_required = role_required(*STAFF_ROLES)
admin_required = role_required(Role.ADMIN)


class HasRole(BasePermission):
    """DRF permission: subclass and set ``roles``."""

    roles: tuple[str, ...] = ()

    def has_permission(self, request: Any, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and has_role(request.user, *self.roles))


class IsStaffRole(HasRole):
    roles = tuple(STAFF_ROLES)


class IsAnnotator(HasRole):
    roles = (Role.ANNOTATOR, Role.VERIFIER, Role.RESEARCHER)


class IsResearcher(HasRole):
    roles = (Role.RESEARCHER,)


class IsAdminRole(HasRole):
    roles = (Role.ADMIN,)
