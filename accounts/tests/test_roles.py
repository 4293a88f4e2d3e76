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


@pytest.mark.django_db(transaction=True)
def test_role_groups_come_back_after_a_flush():
    """``manage.py flush`` empties the groups the migration created; post_migrate creates them again (as it does
    Django's content types), so a flushed database, or a test after a transactional test's flush, has every role."""
    Group.objects.all().delete()
    call_command("flush", interactive=False, verbosity=0)
    assert set(Group.objects.values_list("name", flat=True)) == {r.value for r in Role}


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


@pytest.mark.django_db
def test_the_session_user_comes_with_its_roles_in_one_statement(client, make_user, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from accounts.roles import user_with_roles

    both = make_user("two-roles", "verifier")
    grant(both, Role.RESEARCHER)
    loaded = user_with_roles(both.pk)
    assert loaded is not None and loaded.pk == both.pk and loaded.get_username() == "two-roles"
    with django_assert_num_queries(0):  # read with the user
        assert user_roles(loaded) == {"verifier", "researcher"}
    plain = make_user("no-role")
    assert user_roles(user_with_roles(plain.pk)) == set()  # a user in no group still loads (LEFT JOIN)
    assert user_with_roles(10**9) is None
    for odd in ("", "abc", "-1", 0, 2**40):  # a session id that names no user (not an error)
        assert user_with_roles(odd) is None
    assert user_with_roles(str(both.pk)).pk == both.pk  # sessions hold the id as a string
    root = get_user_model().objects.create_superuser("root2", "r@example.org", "pw-for-tests-1")
    assert user_roles(user_with_roles(root.pk)) == {"admin"}

    client.force_login(both)
    url = reverse("pipeline:job_start")  # researchers only
    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    user_reads = [q["sql"] for q in captured.captured_queries if '"auth_user"' in q["sql"] or '"auth_group"' in q["sql"]]
    assert len(user_reads) == 1 and "auth_user_groups" in user_reads[0]  # one statement: user and roles
    both.groups.remove(Group.objects.get(name="researcher"))  # a revoked role counts from the next request
    assert client.get(url).status_code == 403
    get_user_model().objects.filter(pk=both.pk).update(is_active=False)  # an inactive user is logged out
    assert client.get(url).status_code == 302
