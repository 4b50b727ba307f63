# Celery's Django guide: the app is loaded with the project, so that @shared_task (sources/tasks.py)
# publishes with it in every process, the web server's included (completeness/celery.py).
from completeness.celery import app as celery_app

__all__ = ("celery_app",)
