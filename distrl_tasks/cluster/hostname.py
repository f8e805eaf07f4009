"""The hostname Airflow records for a task instance (``[core] hostname_callable``).

Two Celery workers on one machine share its FQDN, so a task instance's ``hostname`` could not
tell which worker ran it. The cluster launcher gives each worker ``DISTRL_WORKER_NAME`` and points
``hostname_callable`` here: the recorded name is then ``<worker>@<fqdn>`` (Celery's own naming).
"""

from __future__ import annotations

import os
import socket

WORKER_NAME_ENV = "DISTRL_WORKER_NAME"


def worker_hostname() -> str:
    """``<worker>@<fqdn>`` when ``$DISTRL_WORKER_NAME`` is set, else the FQDN (the default)."""
    fqdn = socket.getfqdn()
    name = os.environ.get(WORKER_NAME_ENV, "").strip()
    return f"{name}@{fqdn}" if name else fqdn
