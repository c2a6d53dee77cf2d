"""Security events: a sensor that sent two different authenticated reports for one slot, with both kept.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "security_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("deployment_id", sa.String(64), sa.ForeignKey("deployments.deployment_id"), nullable=False),
        sa.Column("sensor_id", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("window", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("stored", sa.JSON, nullable=False),
        sa.Column("received", sa.JSON, nullable=False),
        sa.Column("detected_at", sa.Float, nullable=False),
    )
    op.create_index("ix_security_events_sensor", "security_events", ["deployment_id", "sensor_id"])


def downgrade() -> None:
    op.drop_index("ix_security_events_sensor", "security_events")
    op.drop_table("security_events")
