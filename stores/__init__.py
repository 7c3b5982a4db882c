"""Store protocols (``base``) and their backends: SQL (SQLAlchemy), Chroma, hybrid."""
