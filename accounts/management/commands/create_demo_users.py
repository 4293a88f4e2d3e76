"""Create (or reset) one demo user per role and print the logins."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from accounts.roles import Role, grant


class Command(BaseCommand):
    help = "Create one demo user per role (annotator, verifier, researcher, admin) and print passwords."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", help="use this password for all demo users instead of random ones")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        rows = []
        for role in Role:
            password = options["password"] or secrets.token_urlsafe(9)
            user, _ = User.objects.get_or_create(username=role.value, defaults={"email": f"{role.value}@example.org"})
            user.set_password(password)
            user.is_staff = role == Role.ADMIN
            user.is_superuser = role == Role.ADMIN
            user.save()
            grant(user, role)
            rows.append((role.value, password))
        self.stdout.write("Demo logins (username / password):")
        for name, password in rows:
            self.stdout.write(f"  {name:<11} {password}")
