"""Windows record the sensor flagged as an outlier (its reading left out of the map).

A nullable column added with ``ALTER TABLE … ADD COLUMN``: SQLite and PostgreSQL change only the
table's definition, no row is rewritten, so the upgrade takes the same time on any history. Windows
closed before it read as having no outlier.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("windows", sa.Column("outliers", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("windows") as batch:
        batch.drop_column("outliers")
