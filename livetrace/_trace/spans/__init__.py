"""Spans: intervals derived from the events' state transitions and ranges."""
