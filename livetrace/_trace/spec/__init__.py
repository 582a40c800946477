"""The trace format tables, the single source of codes and names."""
