import re

from django.core.management.base import BaseCommand, CommandError

from completeness.report import SLUG_PATTERN
from sources.services.tokens import create_token


class Command(BaseCommand):
    help = "Create an API token; the raw token is printed once, as the last line of the output."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--source",
            action="append",
            dest="sources",
            default=[],
            metavar="SLUG",
            help="limit the token to this source (repeatable); without it the token covers all sources",
        )
        parser.add_argument(
            "--may-configure",
            action="store_true",
            help=(
                "let the token also change its sources' settings and plan maintenance windows; without it "
                "the token posts reports, pauses, resumes and acknowledges, and is refused those with 403"
            ),
        )

    def handle(self, name: str, sources: list[str], may_configure: bool, **options):
        bad = [slug for slug in sources if not re.fullmatch(SLUG_PATTERN, slug)]
        if bad:
            raise CommandError(f"not a source slug: {', '.join(bad)}")
        token, raw = create_token(name, sources, may_configure=may_configure)
        self.stdout.write(
            f"Created token '{token.name}' for {token.scope}; it {token.powers}. It is shown once; store it now:"
        )
        self.stdout.write(raw)
