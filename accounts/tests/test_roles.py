"""Roles: groups, has_role, the demo users command."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import AnonymousUser, Group
from django.core.management import call_command

from accounts.roles import Role, grant, has_role, user_roles


@pytest.mark.django_db
def test_role_groups_exist_after_migrate():
    assert set(Group.objects.values_list("name", flat=True)) >= {r.value for r in Role}


@pytest.mark.django_db
def test_has_role_and_admin_passes_everything(annotator, verifier, researcher, admin_user):
    assert has_role(annotator, Role.ANNOTATOR) and not has_role(annotator, Role.VERIFIER, Role.RESEARCHER)
    assert has_role(verifier, Role.VERIFIER) and not has_role(verifier, Role.RESEARCHER)
    assert has_role(researcher, Role.RESEARCHER) and not has_role(researcher, Role.ADMIN)
    assert all(has_role(admin_user, role) for role in Role)
    assert user_roles(AnonymousUser()) == set() and not has_role(AnonymousUser(), Role.ANNOTATOR)


@pytest.mark.django_db
def test_grant_clears_the_role_cache(make_user):
    user = make_user("later")
    assert not has_role(user, Role.RESEARCHER)
    grant(user, Role.RESEARCHER)
    assert has_role(user, Role.RESEARCHER)


@pytest.mark.django_db
def test_superuser_counts_as_admin():
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-123")
    assert has_role(user, Role.RESEARCHER) and Role.ADMIN.value in user_roles(user)


@pytest.mark.django_db
def test_create_demo_users_prints_one_login_per_role():
    out = io.StringIO()
    call_command("create_demo_users", stdout=out)
    lines = re.findall(r"^\s+(\w+)\s+(\S+)$", out.getvalue(), flags=re.MULTILINE)
    assert [name for name, _ in lines] == [r.value for r in Role]
    for name, password in lines:
        user = authenticate(username=name, password=password)
        assert user is not None, name
        assert has_role(user, Role(name))
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser
    assert not get_user_model().objects.get(username="annotator").is_staff
    # running it again resets the passwords, does not duplicate users
    call_command("create_demo_users", "--password", "same-pw-123", stdout=io.StringIO())
    assert get_user_model().objects.count() == 4
    assert authenticate(username="verifier", password="same-pw-123") is not None


@pytest.mark.django_db
def test_login_page_and_login(client, make_user):
    make_user("logme", "researcher", password="pw-logme-123")
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": "logme", "password": "pw-logme-123"})
    assert response.status_code == 302
    bad = client.post("/login/", {"username": "logme", "password": "wrong"})
    assert b"Wrong username or password." in bad.content
