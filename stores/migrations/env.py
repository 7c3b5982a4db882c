"""Alembic environment: runs on the connection handed over by ``stores.sql.migrate``."""

from alembic import context

from stores.sql.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through stores.sql.migrate(engine)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
