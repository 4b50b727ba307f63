"""bin/manage seed_demo: demo sources, 60 days of runs and the stories ops meet (a partial run that
replaced the snapshot, cards lost six runs in a row, a stub page, a pause, proxies cooling), posted
through the ingest path; a superuser login demo/demo (it signs in from this machine only). Running it again leaves existing demo sources alone."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from tqdm import tqdm

from sources.demo import seed
from sources.models import ApiToken, Run
from sources.services.tokens import create_token

TOKEN_NAME = "seed-demo"


class Command(BaseCommand):
    help = "Create demo sources with 60 days of runs (through the ingest path) and a demo/demo superuser login (from this machine only)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--sources", type=int, default=None, help="only the first N demo sources (tests)")
        parser.add_argument("--days", type=int, default=seed.DAYS, help="days of history (default 60)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(
        self, *args, sources: int | None = None, days: int = seed.DAYS, no_progress: bool = False, **options
    ) -> None:
        self._ensure_user()
        token = ApiToken.objects.filter(name=TOKEN_NAME, revoked_at__isnull=True, all_sources=True).first()
        if token is None:
            token, _ = create_token(TOKEN_NAME)
        # Runs end at most an hour ago and the newest is a few hours old: every demo source looks current.
        anchor = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=7)
        todo = [d for d in seed.demo_sources()[:sources] if not Run.objects.filter(source__slug=d.slug).exists()]
        if not todo:
            self.stdout.write("Demo data already present: nothing to do.")
            return
        plans = [(d, list(seed.reports_of(d, anchor, days))) for d in todo]
        total = sum(len(reports) for _, reports in plans)
        with tqdm(total=total, unit="run", desc="seed_demo", disable=no_progress, mininterval=0.5) as bar:
            for item, reports in plans:
                # One transaction per source: each report is still judged and stored by ingest, but the
                # database commits once per source instead of once per run (seconds instead of a minute).
                with transaction.atomic():
                    since = seed.received_at(reports[0]) if reports else timezone.now()
                    source = seed.ensure_source(item, since)
                    for report in reports:
                        seed.post(token, report, seed.received_at(report))
                        bar.update()
                if item.after is not None:
                    item.after(source)
        self.stdout.write(self.style.SUCCESS(f"Seeded {len(todo)} demo sources with {total} runs."))
        for item, _ in plans:
            if item.story:
                self.stdout.write(f"  /sources/{item.slug}/  {item.story}")

    def _ensure_user(self) -> None:
        User = get_user_model()
        # A superuser: the docs send the demo login to the admin (tokens, source settings), where a
        # staff user without permissions sees "You don't have permission to view or edit anything".
        user, created = User.objects.get_or_create(
            username=seed.DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(seed.DEMO_USERNAME)
            user.save()
        elif not (user.is_staff and user.is_superuser):
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
