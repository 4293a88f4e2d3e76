from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts and roles"

    def ready(self) -> None:
        from django.apps import apps
        from django.db.models.signals import post_migrate

        from accounts import login_guard  # noqa: F401  (connects the failed-login counter to auth's signals)
        from accounts.roles import ensure_role_groups

        # the role groups again after a flush; sent for auth (whose table they live in): Django sends post_migrate only
        # for apps with a models module, which this one has not
        post_migrate.connect(ensure_role_groups, sender=apps.get_app_config("auth"))
