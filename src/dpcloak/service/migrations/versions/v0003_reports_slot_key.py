"""Key reports by their slot (deployment, window, sensor) only, in window order.

Revision 0001 made reports unique on (deployment, sensor, window) and on (deployment, report id);
0002 added an index on (deployment, window, sensor). The two unique indexes were the main cost of
an insert: a window's reports land in every sensor's part of the first and at random places of the
second (report ids are random), so each commit rewrote most of both indexes' leaf pages — 18 µs
per report at 40,000 stored reports and 40 µs at 200,000 on SQLite, growing with the database.
One unique index on (deployment, window, sensor) gets appended to, window after window, and it is
the index closing a window reads through. The report id stays the idempotency key of its slot: the
MAC binds a report to its (sensor, window), so a replay always hits an occupied slot, where the
stored report id tells a retry (200) from a second reading (409).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reports", recreate="auto") as batch:
        batch.drop_index("ix_reports_window_sensor")
        batch.drop_constraint("uq_reports_sensor_window", type_="unique")
        batch.drop_constraint("uq_reports_report_id", type_="unique")
        batch.create_index("uq_reports_window_sensor", ["deployment_id", "window", "sensor_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("reports", recreate="auto") as batch:
        batch.drop_index("uq_reports_window_sensor")
        batch.create_unique_constraint("uq_reports_sensor_window", ["deployment_id", "sensor_id", "window"])
        batch.create_unique_constraint("uq_reports_report_id", ["deployment_id", "report_id"])
        batch.create_index("ix_reports_window_sensor", ["deployment_id", "window", "sensor_id"])
