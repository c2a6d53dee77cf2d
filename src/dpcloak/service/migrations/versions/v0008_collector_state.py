"""The collector's state: per deployment, the window below which every window holding reports is closed.

A new two-column table (no existing row read or rewritten: the upgrade takes the same time on any
history). A restart counts the reports of windows not closed from that window on, through the slot
index, instead of reading every report of the history; without a row (a database of an earlier
version) it reads them all once, and the collector then writes the row.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "collector_state",
        sa.Column("deployment_id", sa.String(64), sa.ForeignKey("deployments.deployment_id"), primary_key=True),
        sa.Column("closed_below", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("collector_state")
