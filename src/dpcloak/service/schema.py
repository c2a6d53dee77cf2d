"""The collector's tables (SQLAlchemy Core), the single source of the schema.

``reports`` has one unique index, on its slot (deployment, window, sensor): one reading per sensor per
window. It is appended to in window order (cheap to insert into, whatever the database's size), and
closing a window reads only that window's rows (and the period's) through it. The report id is the
idempotency key a sensor reuses on every retry of the report in its slot (the MAC binds a report to its
slot, so a replay always meets an occupied one). ``windows`` holds one row per closed window: the
recovered map and what it was computed from. ``security_events`` keeps the evidence when one sensor
sent two different authenticated reports for one slot (both reports; the sensor is refused from then
on). The Alembic migration ``0001`` creates the tables, ``0002`` adds a window index, ``0003`` replaces
the earlier unique keys by the slot index, ``0004`` adds the security events, ``0005`` indexes the
windows in closing order (what the analyst API's incremental listing reads) and ``0006`` adds the windows'
``outliers`` column (``ALTER TABLE … ADD COLUMN``: no row rewritten), ``0007`` the map's ``status``,
``misfit``, ``residual`` and allowed ``radius`` (the same way) and ``0008`` adds ``collector_state`` (per
deployment, the window below which every window holding reports is closed: what a restart reads reports
from, instead of the whole history); a test compares the result with these.
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
)

__all__ = ["metadata", "deployments", "sensors", "reports", "windows", "security_events", "collector_state",
           "WINDOW_INDEX"]

WINDOW_INDEX = "uq_reports_window_sensor"
"""The unique index on reports (deployment, window, sensor): the slot key, which closing a window reads through."""

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
    # the slot key; what closing a window reads: its reports, and per-sensor counts over a range of windows
    Index(WINDOW_INDEX, "deployment_id", "window", "sensor_id", unique=True),
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
    Column("outliers", JSON, nullable=True),  # the sensors flagged as outlying (NULL in windows closed before 0006)
    # how the map was obtained and how far it is from the readings (NULL in windows closed before 0007)
    Column("status", String(32), nullable=True),
    Column("misfit", Float, nullable=True),
    Column("residual", Float, nullable=True),
    Column("radius", Float, nullable=True),
    # closing order: the windows closed after a cursor, without reading the history (analyst API)
    Index("ix_windows_closing_order", "deployment_id", "closed_at", "window"),
)

security_events = Table(
    "security_events",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("deployment_id", String(64), ForeignKey("deployments.deployment_id"), nullable=False),
    Column("sensor_id", Integer, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("window", BigInteger, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("stored", JSON, nullable=False),  # the report kept in the slot
    Column("received", JSON, nullable=False),  # the conflicting report, with its MAC (verifiable evidence)
    Column("detected_at", Float, nullable=False),
    Index("ix_security_events_sensor", "deployment_id", "sensor_id"),
)

collector_state = Table(
    "collector_state",
    metadata,
    Column("deployment_id", String(64), ForeignKey("deployments.deployment_id"), primary_key=True),
    # every window before it that holds reports is closed: a restart counts the open windows' reports from here
    Column("closed_below", BigInteger, nullable=False),
)
