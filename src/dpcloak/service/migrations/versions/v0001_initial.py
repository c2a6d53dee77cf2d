"""Initial collector schema: deployments, sensors, reports, windows.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("deployment_id", sa.String(64), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "sensors",
        sa.Column("deployment_id", sa.String(64), sa.ForeignKey("deployments.deployment_id"), primary_key=True),
        sa.Column("sensor_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("position", sa.JSON, nullable=False),
    )
    op.create_table(
        "reports",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("deployment_id", sa.String(64), sa.ForeignKey("deployments.deployment_id"), nullable=False),
        sa.Column("sensor_id", sa.Integer, nullable=False),
        sa.Column("window", sa.BigInteger, nullable=False),
        sa.Column("report_id", sa.String(64), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.UniqueConstraint("deployment_id", "sensor_id", "window", name="uq_reports_sensor_window"),
        sa.UniqueConstraint("deployment_id", "report_id", name="uq_reports_report_id"),
    )
    op.create_table(
        "windows",
        sa.Column("deployment_id", sa.String(64), sa.ForeignKey("deployments.deployment_id"), primary_key=True),
        sa.Column("window", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("closed_at", sa.Float, nullable=False),
        sa.Column("source_map", sa.JSON, nullable=False),
        sa.Column("uncertainty", sa.Float, nullable=True),
        sa.Column("uncertainty_90", sa.Float, nullable=True),
        sa.Column("reporting", sa.JSON, nullable=False),
        sa.Column("missing", sa.Integer, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("epsilon_window", sa.Float, nullable=False),
        sa.Column("delta_window", sa.Float, nullable=False),
        sa.Column("epsilon_period", sa.Float, nullable=False),
        sa.Column("delta_period", sa.Float, nullable=False),
        sa.Column("releases_in_period", sa.Integer, nullable=False),
        sa.Column("converged", sa.Boolean, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for name in ("windows", "reports", "sensors", "deployments"):
        op.drop_table(name)
