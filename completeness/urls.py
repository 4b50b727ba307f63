from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path

from sources.api.endpoints import api
from sources.pages.account_views import LoginNamingTheDemo, ThrottledPasswordResetView


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    # Resolved per request: the hashed name exists only once collectstatic has run.
    return HttpResponseRedirect(static("completeness/favicon.svg"))


urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page links; no login, no 404 in every page's log.
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("alerts/", include("sources.alerts.urls")),
    # Before django.contrib.auth.urls, which has the same URL unthrottled.
    path("accounts/password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("accounts/login/", LoginNamingTheDemo.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("sources.ops.urls")),
    path("", include("sources.urls")),
]
