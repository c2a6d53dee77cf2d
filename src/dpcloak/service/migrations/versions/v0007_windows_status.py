"""Windows record how their map was obtained: its status, misfit, residual and the residual the noise allows.

A map is ``fit`` (within the noise of the readings), ``least-residual`` (no map of the model comes within
the noise: the model does not explain the readings, and no uncertainty is stated), ``empty`` or
``private counts``; ``misfit`` is the share of the readings' energy the map leaves unexplained, ``residual``
the distance from the map's readings to the private readings and ``radius`` the distance the noise allows
(reading units). Nullable columns added with ``ALTER TABLE … ADD COLUMN``: no row is rewritten, so the
upgrade takes the same time on any history. Windows closed before it read as of unknown status.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = (("status", sa.String(32)), ("misfit", sa.Float), ("residual", sa.Float), ("radius", sa.Float))


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("windows", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("windows") as batch:
        for name, _ in COLUMNS:
            batch.drop_column(name)
