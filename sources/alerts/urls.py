from django.urls import path

from sources import converters  # noqa: F401  (registers source_slug, which may hold a dot)
from sources.alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.alerts_page, name="alerts"),
    path("acknowledge/<source_slug:slug>/", views.acknowledge, name="acknowledge"),
    path("channels/", views.channels_page, name="channels"),
    path("channels/<int:pk>/", views.channel_page, name="channel"),
    path("channels/<int:pk>/test/", views.channel_test, name="channel-test"),
    path("channels/<int:pk>/resend/", views.channel_resend, name="channel-resend"),
]
