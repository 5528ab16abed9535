"""Configuration: the schema and its checks (schema.py), a run's complete config (prepare.py), smoke mode."""
