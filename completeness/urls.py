from django.contrib import admin
from django.urls import include, path

from sources.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("alerts/", include("sources.alerts.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("sources.ops.urls")),
    path("", include("sources.urls")),
]
