"""django-q2's schedules for the periodic jobs of settings.PERIODIC_JOBS (Celery's beat reads it too)."""

from __future__ import annotations

import math

from django.conf import settings


def ensure_schedules(using: str = "default", **kwargs) -> list[str]:
    """Idempotent (runs after every migrate): one schedule per periodic job, every minute at most, in
    the database migrated (`copy_data` migrates another beside the service's own)."""
    if settings.TASK_ENGINE != "django_q":
        return []
    from django_q.models import Schedule

    names = []
    for name, setting in settings.PERIODIC_JOBS.items():
        # django-q2 schedules count in whole minutes.
        minutes = max(1, math.ceil(getattr(settings, setting) / 60))
        Schedule.objects.using(using).update_or_create(
            name=f"completeness.{name}",
            defaults=dict(func=f"sources.jobs.{name}", schedule_type=Schedule.MINUTES, minutes=minutes, repeats=-1),
        )
        names.append(name)
    return names
