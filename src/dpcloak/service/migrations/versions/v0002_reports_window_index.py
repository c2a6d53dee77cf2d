"""Index reports by (deployment, window, sensor): closing a window reads only its own rows.

Without it, a window's reports and the per-sensor count over the budget period were read by scanning
every report of the deployment (the unique index leads with the sensor), a cost growing with the database.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_reports_window_sensor", "reports", ["deployment_id", "window", "sensor_id"])


def downgrade() -> None:
    op.drop_index("ix_reports_window_sensor", table_name="reports")
