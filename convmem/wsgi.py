"""WSGI entry point (``gunicorn convmem.wsgi``; ``runserver`` uses it too)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")

from convmem.chunked import ChunkedBodyMiddleware

application = ChunkedBodyMiddleware(get_wsgi_application())
