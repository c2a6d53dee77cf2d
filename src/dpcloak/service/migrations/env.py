"""Alembic environment: migrate the connection handed over by ``Store.migrate`` (no alembic.ini needed)."""

from __future__ import annotations

from alembic import context

from dpcloak.service.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
