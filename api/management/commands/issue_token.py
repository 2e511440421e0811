"""python manage.py issue_token USER --scopes read,write,publish,validate [--expires-in-days N]"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from api.models import ApiToken, Scope


class Command(BaseCommand):
    help = "Issue an API token for a user. The token is printed once; only its hash is kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--scopes", default="read", help="Comma-separated: read,write,publish,validate"
        )
        parser.add_argument("--expires-in-days", type=int, default=None)
        parser.add_argument("--name", default="", help="What will use it, e.g. slack-bot")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(
                f"No user {options['username']!r}: add it with "
                f"`manage.py users add {options['username']}` first."
            )
        scopes = parse_scopes(options["scopes"])
        days = options["expires_in_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=days) if days else None
        token, raw = ApiToken.issue(user, scopes, name=options["name"], expires_at=expires_at)
        self.stderr.write(
            f"Token {token.prefix}… for {user} with scopes {', '.join(scopes)}"
            + (f", expires {expires_at:%Y-%m-%d}" if expires_at else "")
            + ". Copy it now: it is not shown again."
        )
        self.stdout.write(raw)


def parse_scopes(text: str) -> list[str]:
    scopes = sorted({part.strip() for part in text.split(",") if part.strip()})
    unknown = set(scopes) - set(Scope.values)
    if unknown or not scopes:
        raise CommandError(f"Scopes must be among {', '.join(Scope.values)}; got {text!r}.")
    return scopes
