"""Views derived from spans: what a trace looks like summed up rather than
event by event. ``pprof``: Go's pprof-like trace profiles."""
