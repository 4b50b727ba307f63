from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        from completeness.web.throttle import Rate
        from sources.alerts.schedules import ensure_schedules
        from sources.pages.selectors.choices import connect_receivers

        for name in (
            "API_RATE_PER_ADDRESS",
            "API_RATE_PER_TOKEN",
            "API_FAILED_TOKENS_PER_ADDRESS",
            "PASSWORD_RESET_RATE_PER_ADDRESS",
        ):
            try:
                Rate.parse(getattr(settings, name))
            except ValueError as exc:
                raise ImproperlyConfigured(f"{name}: {exc}") from None

        from django.core.checks import register

        from sources.ops.site_url import site_url_names_this_service
        from sources.ops.static_current import collected_static_files_are_current

        register(site_url_names_this_service)
        register(collected_static_files_are_current)
        connect_receivers()
        post_migrate.connect(ensure_schedules, sender=self, dispatch_uid="sources.ensure_schedules")
        # Registers the jobs by name with sources.queue, which refuses to enqueue an unknown one.
        import sources.jobs  # noqa: F401
