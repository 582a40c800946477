"""Traces as tables: Arrow tables built from the core's columns, one schema
for every trace format (docs/sql.md)."""
