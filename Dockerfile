# The service image: web (gunicorn), Celery worker and beat, or the django-q2 cluster, by command.
FROM python:3.11-slim-bookworm
# USE_VENV=0: bin/process runs the Procfile lines with this Python, which has the packages (no virtualenv).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 VAR_DIR=/var/lib/completeness USE_VENV=0
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY completeness ./completeness
COPY sources ./sources
COPY templates ./templates
COPY manage.py Procfile gunicorn.conf.py ./
COPY bin/process ./bin/process
RUN pip install --no-cache-dir -c constraints.txt . \
 && SECRET_KEY=collectstatic-signs-nothing-and-is-thrown-away-when-the-image-is-built python manage.py collectstatic --no-input -v 0
EXPOSE 8000
CMD ["bin/process", "web"]
