from django.core.management.base import BaseCommand

from sources.services import retention


class Command(BaseCommand):
    help = (
        "Remove what the retention settings no longer keep (RETAIN_* in docs/operations.md) and print it; "
        "the daily job runs the same."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would be removed and change nothing")

    def handle(self, *, dry_run: bool, **options):
        result = retention.prune(dry_run=dry_run)
        for line in result.lines():
            self.stdout.write(line)
        self.stdout.write(f"{'dry run, nothing changed' if dry_run else 'done'} in {result.seconds:.1f} s")
