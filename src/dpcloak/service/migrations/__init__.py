"""Alembic migrations of the collector's schema (run by :func:`dpcloak.service.store.Store.migrate`)."""
