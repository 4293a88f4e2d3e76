import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018  # import every view now, not on a worker's first request
# Full collections scan every tracked object: at start-up ~200k (modules, classes, the URLconf), and a
# collection took 0.2-0.7 s under load (one request in 10-20 at full size: docs/scale.md). Frozen
# objects are never scanned again; what requests create is collected as before.
gc.freeze()
