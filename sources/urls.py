from django.urls import path

from sources import converters  # noqa: F401  (converters registers source_slug)
from sources.pages import views

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
