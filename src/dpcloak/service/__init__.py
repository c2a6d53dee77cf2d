"""The deployed system (Gilbert & McMillan §1, flow 5): sensor nodes, an untrusted collector, recovery over time.

Modules: :mod:`~dpcloak.service.config` (the deployment and its keys), :mod:`~dpcloak.service.auth`
(report MACs), :mod:`~dpcloak.service.node` and :mod:`~dpcloak.service.ledger` (the sensor side),
:mod:`~dpcloak.service.collector`, :mod:`~dpcloak.service.app` (routers and dependencies),
:mod:`~dpcloak.service.http_ingest` (the ingest hot path), :mod:`~dpcloak.service.problems` (error answers),
:mod:`~dpcloak.service.settings`, :mod:`~dpcloak.service.store`, :mod:`~dpcloak.service.windows` (the collector
side), :mod:`~dpcloak.service.demo`. The web stack comes with the ``service`` extra: ``pip install "dpcloak[service]"``.
"""

from __future__ import annotations

import importlib.util

from dpcloak.errors import MissingExtraError

__all__ = ["require_service_extra"]

_MODULES = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "httpx")


def require_service_extra() -> None:
    """Raise :class:`~dpcloak.errors.MissingExtraError` naming the extra if the service stack is missing.

    Examples
    --------
    With ``pip install 'dpcloak[service]'`` it returns quietly:

    >>> require_service_extra() is None
    True
    """
    missing = [m for m in _MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(f"the service needs {', '.join(missing)}: pip install \"dpcloak[service]\"")
