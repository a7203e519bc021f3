import os

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

from base.buffered_wsgi import BufferedWsgi

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django's own ASGI handler (uvicorn config.asgi:application).
application = get_asgi_application()
# The production server's: Django's WSGI handler in APP_THREADS threads, handed each request only once its whole
# body has arrived (so slow senders hold no thread).
buffered = BufferedWsgi(
    get_wsgi_application(),
    threads=settings.APP_THREADS,
    body_timeout=settings.REQUEST_BODY_TIMEOUT,
    max_body=settings.REQUEST_BODY_MAX_BYTES,
)
