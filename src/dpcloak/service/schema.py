"""The collector's tables (SQLAlchemy Core), the single source of the schema.

``reports`` is unique on (deployment, sensor, window) — one reading per sensor per window — and on
(deployment, report id), the idempotency key a sensor reuses on every retry; it is indexed on
(deployment, window, sensor), so closing a window reads only that window's rows (and the period's).
``windows`` holds one row per closed window: the recovered map and what it was computed from. The Alembic migration
``0001`` creates the tables, ``0002`` adds the window index; a test compares the result with these.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = ["metadata", "deployments", "sensors", "reports", "windows", "WINDOW_INDEX"]

WINDOW_INDEX = "ix_reports_window_sensor"
"""The index on reports (deployment, window, sensor) that closing a window reads through."""

metadata = MetaData()

deployments = Table(
    "deployments",
    metadata,
    Column("deployment_id", String(64), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("config", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

sensors = Table(
    "sensors",
    metadata,
    Column("deployment_id", String(64), ForeignKey("deployments.deployment_id"), primary_key=True),
    Column("sensor_id", Integer, primary_key=True, autoincrement=False),
    Column("position", JSON, nullable=False),
)

reports = Table(
    "reports",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("deployment_id", String(64), ForeignKey("deployments.deployment_id"), nullable=False),
    Column("sensor_id", Integer, nullable=False),
    Column("window", BigInteger, nullable=False),
    Column("report_id", String(64), nullable=False),
    Column("value", Float, nullable=False),
    Column("received_at", Float, nullable=False),
    UniqueConstraint("deployment_id", "sensor_id", "window", name="uq_reports_sensor_window"),
    UniqueConstraint("deployment_id", "report_id", name="uq_reports_report_id"),
    # what closing a window reads: its reports, and per-sensor counts over a range of windows (migration 0002)
    Index(WINDOW_INDEX, "deployment_id", "window", "sensor_id"),
)

windows = Table(
    "windows",
    metadata,
    Column("deployment_id", String(64), ForeignKey("deployments.deployment_id"), primary_key=True),
    Column("window", BigInteger, primary_key=True, autoincrement=False),
    Column("closed_at", Float, nullable=False),
    Column("source_map", JSON, nullable=False),
    Column("uncertainty", Float, nullable=True),
    Column("uncertainty_90", Float, nullable=True),
    Column("reporting", JSON, nullable=False),
    Column("missing", Integer, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("epsilon_window", Float, nullable=False),
    Column("delta_window", Float, nullable=False),
    Column("epsilon_period", Float, nullable=False),
    Column("delta_period", Float, nullable=False),
    Column("releases_in_period", Integer, nullable=False),
    Column("converged", Boolean, nullable=False),
    Column("message", Text, nullable=False),
)
