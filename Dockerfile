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
# The processes run as a user of their own, not root: a hole in the web process or a dependency then
# owns neither the code nor the packages (root's, read-only to it), only VAR_DIR, where beat keeps its
# schedule and the file cache lives. A fixed uid, so a volume mounted there can be given to it.
RUN groupadd --system --gid 10001 completeness \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin completeness \
 && chown -R 10001:10001 "$VAR_DIR"
USER 10001:10001
EXPOSE 8000
CMD ["bin/process", "web"]
