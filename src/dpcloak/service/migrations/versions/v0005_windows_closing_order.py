"""Index closed windows by (deployment, closed_at, window): the order in which they were closed.

The analyst API's incremental listing (``GET /api/v1/windows?since=<cursor>``) reads the windows
closed after a cursor through it, so a dashboard's poll costs the windows that are new, not the
history. Windows are small in number (one row per window), so creating it is quick.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_windows_closing_order", "windows", ["deployment_id", "closed_at", "window"])


def downgrade() -> None:
    op.drop_index("ix_windows_closing_order", table_name="windows")
