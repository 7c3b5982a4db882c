"""SQL backends (SQLAlchemy 2; SQLite by default, PostgreSQL by URL; Alembic migrations)."""

from stores.sql.engine import make_engine, migrate
from stores.sql.inbox import SqlRunInbox
from stores.sql.jobs import SqlJobBoard, SqlJobQueue
from stores.sql.lexical import SqlLexicalIndex
from stores.sql.messages import SqlChatStates, SqlContextUsage, SqlMessageStore
from stores.sql.personas import SqlPersonaStore
from stores.sql.profiles import SqlProfileStore
from stores.sql.strength import SqlEventStrength

__all__ = [
    "SqlChatStates",
    "SqlContextUsage",
    "SqlEventStrength",
    "SqlMessageStore",
    "SqlJobBoard",
    "SqlJobQueue",
    "SqlLexicalIndex",
    "SqlPersonaStore",
    "SqlRunInbox",
    "SqlProfileStore",
    "make_engine",
    "migrate",
]
