from django.http import HttpRequest

from accounts.roles import Role, has_role


def roles(request: HttpRequest) -> dict[str, bool]:
    user = request.user
    return {
        "is_annotator": has_role(user, Role.ANNOTATOR),
        "is_verifier": has_role(user, Role.VERIFIER),
        "is_researcher": has_role(user, Role.RESEARCHER),
        "is_admin_role": has_role(user, Role.ADMIN),
        "is_staff_role": has_role(user, Role.VERIFIER, Role.RESEARCHER),
    }
