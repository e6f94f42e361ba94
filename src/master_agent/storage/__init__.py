"""Storage: the embedded server, the shared connection pool and the migrations runner."""

from master_agent.storage.database import Database, open_database
from master_agent.storage.embedded import embedded_server_uri
from master_agent.storage.migrations import apply_migrations, migrations_dir

__all__ = ["Database", "apply_migrations", "embedded_server_uri", "migrations_dir", "open_database"]
