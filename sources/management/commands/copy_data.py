from django.core.management.base import BaseCommand, CommandError

from sources.services import copying


class Command(BaseCommand):
    help = (
        "Copy everything this installation holds (sources and their runs, settings, channels and "
        "notifications, tokens, users) into another, empty database, e.g. from the embedded SQLite to "
        "PostgreSQL: bin/manage copy_data --to postgres://user:password@host:5432/name. The target is "
        "migrated first. Stop the service and its workers before, then start it on the new DATABASE_URL."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, metavar="DATABASE_URL", help="the database to copy into")

    def handle(self, *, to: str, **options):
        try:
            result = copying.copy_to(to)
        except copying.CopyRefused as exc:
            raise CommandError(str(exc)) from None
        for line in result.lines():
            self.stdout.write(line)
        self.stdout.write("Now start the service with DATABASE_URL set to the new database.")
