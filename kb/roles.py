"""What a team member may do beyond reading: the two roles, as Django groups.

Anyone logged in may search, diagnose, vote and start drafts. A **reviewer** reviews and
publishes findings (what counts in diagnoses); a **validator** runs published fixes on
registered GPU hosts. Each role is a group of the same name holding its permissions, so
the admin shows and edits the same thing `manage.py users` grants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group, Permission

REVIEW_PERMISSION = "kb.change_finding"
VALIDATE_PERMISSION = "kb.add_validationrun"


@dataclass(frozen=True)
class Role:
    name: str
    group: str
    permissions: tuple[str, ...]
    means: str


ROLES = {
    role.name: role
    for role in (
        Role(
            "reviewer",
            "Reviewers",
            (REVIEW_PERMISSION,),
            "reviews drafts, publishes and retires findings, adds pastes to samples",
        ),
        Role(
            "validator",
            "Validators",
            (VALIDATE_PERMISSION,),
            "runs published fixes on registered GPU hosts, cancels runs",
        ),
    )
}


def group_of(role: Role) -> Group:
    """The role's group, created or brought back to the role's permissions."""
    group, _ = Group.objects.get_or_create(name=role.group)
    wanted = []
    for dotted in role.permissions:
        app_label, codename = dotted.split(".")
        wanted.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    group.permissions.set(wanted)
    return group


def grant(user: Any, role: Role) -> None:
    user.groups.add(group_of(role))


def revoke(user: Any, role: Role) -> None:
    user.groups.remove(*Group.objects.filter(name=role.group))


def roles_of(user: Any) -> list[str]:
    """The roles whose permissions the user holds (by group, own grant or as superuser)."""
    return [r.name for r in ROLES.values() if all(user.has_perm(p) for p in r.permissions)]
