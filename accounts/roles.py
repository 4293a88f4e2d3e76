"""Roles are Django groups. Admin (or a superuser) passes every role check.

- annotator: labels sentence pairs in labeling jobs;
- verifier: in-house annotator: corrects paragraph alignments, verifies aggregated labels;
- researcher: reads corpora and metrics, creates jobs, retrains and promotes models;
- admin: everything, including imports, exports and people.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db import models

from config.cached_sql import CachedQuery, concrete_attnames, instance


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    VERIFIER = "verifier", "Verifier"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Admin"


# Roles that may read corpora, documents and alignments (everyone but a crowd annotator).
STAFF_ROLES = (Role.VERIFIER, Role.RESEARCHER, Role.ADMIN)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_role_cache", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        if user.is_superuser:  # type: ignore[attr-defined]
            cached.add(Role.ADMIN.value)
        user._role_cache = cached  # type: ignore[union-attr,attr-defined]
    return cached


_USER_WITH_ROLES = CachedQuery(  # every request of a logged-in user: compiled once (config.cached_sql)
    lambda pk: get_user_model()._default_manager.filter(pk=pk).values_list(
        *concrete_attnames(get_user_model()), "groups__name"
    ),
    pk=int,
)


def user_with_roles(user_id: int | str) -> Any:
    """The user ``user_id`` with its roles read in the same statement (a LEFT JOIN on its groups,
    one row per group), so ``user_roles`` needs no query of its own: the session's user costs one
    statement per request, and a role granted or revoked still counts from the next request."""
    try:
        pk = int(user_id)
    except (TypeError, ValueError):
        return None
    if not 0 < pk < 2**31:  # no such user (the ids of the user table are 32-bit)
        return None
    rows = _USER_WITH_ROLES.rows(pk=pk)
    if not rows:
        return None
    user = instance(get_user_model(), rows[0][:-1])
    roles = {row[-1] for row in rows if row[-1] is not None}
    if user.is_superuser:  # type: ignore[attr-defined]
        roles.add(Role.ADMIN.value)
    user._role_cache = roles  # type: ignore[attr-defined]
    return user


def has_role(user: AbstractBaseUser | AnonymousUser, *roles: str) -> bool:
    """True when the user holds one of ``roles``, or is an admin."""
    held = user_roles(user)
    return Role.ADMIN.value in held or any(str(role) in held for role in roles)


def ensure_role_groups(using: str = "default", apps: Any = None, **_: Any) -> None:
    """Every role's group, created when missing: the ``post_migrate`` receiver (``AccountsConfig.ready``). The
    migration ``accounts.0001_roles`` creates them once; ``manage.py flush`` (and a test database's flush between
    transactional tests) empties the table afterwards and sends ``post_migrate`` again, as Django does to recreate
    its content types and permissions. ``apps``: the migrated state's models (none: auth not migrated)."""
    try:
        group_model = apps.get_model("auth", "Group") if apps is not None else Group
    except LookupError:
        return
    for role in Role:
        group_model.objects.using(using).get_or_create(name=role.value)


def grant(user: AbstractBaseUser, role: Role) -> None:
    """Give ``user`` a role. The admin role also opens the Django admin (staff + superuser)."""
    group, _ = Group.objects.get_or_create(name=role.value)
    user.groups.add(group)  # type: ignore[attr-defined]
    if role == Role.ADMIN and not (user.is_staff and user.is_superuser):  # type: ignore[attr-defined]
        user.is_staff = user.is_superuser = True  # type: ignore[attr-defined]
        user.save(update_fields=["is_staff", "is_superuser"])  # type: ignore[misc]
    if hasattr(user, "_role_cache"):
        del user._role_cache
