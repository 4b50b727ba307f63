from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        from sources.alerts.schedules import ensure_schedules

        post_migrate.connect(ensure_schedules, sender=self, dispatch_uid="sources.ensure_schedules")
