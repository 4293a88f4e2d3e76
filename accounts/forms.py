"""The login form: Django's, with the lockout of ``accounts.login_guard`` said on the form."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from accounts.login_guard import locked_for, lockout_message


class LoginForm(AuthenticationForm):
    error_messages = {**AuthenticationForm.error_messages, "invalid_login": "Wrong username or password."}

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username and (wait := locked_for(username)):
            raise ValidationError(lockout_message(wait), code="locked")
        return super().clean()
