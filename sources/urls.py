from django.urls import path, register_converter

from sources import views


class SourceSlug:
    """A report's slug (completeness.report.SLUG_PATTERN allows dots, Django's `slug` does not) and
    the SlugField's (capitals, a leading dash or underscore): every source has a page."""

    regex = r"[-A-Za-z0-9_.]{1,100}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(SourceSlug, "source_slug")

urlpatterns = [
    path("", views.overview, name="overview"),
    path("sources/<source_slug:slug>/", views.source_detail, name="source"),
    path("sources/<source_slug:slug>/pause", views.pause_source, name="source-pause"),
    path("sources/<source_slug:slug>/resume", views.resume_source, name="source-resume"),
    path("sources/<source_slug:slug>/rules", views.switch_rule_mode, name="source-rule-mode"),
    path("sources/<source_slug:slug>/settings", views.update_settings, name="source-settings"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/accept-baseline", views.accept_baseline, name="run-accept-baseline"),
    path("proxies/", views.proxy_overview, name="proxies"),
]
