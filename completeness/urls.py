from django.contrib import admin
from django.urls import include, path

from sources.account_views import ThrottledPasswordResetView
from sources.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("alerts/", include("sources.alerts.urls")),
    # Before django.contrib.auth.urls, which has the same URL unthrottled.
    path("accounts/password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("sources.ops.urls")),
    path("", include("sources.urls")),
]
