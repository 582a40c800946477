"""The event model every format decodes into: events, their batches, and the
tables (strings, stacks) they refer to."""
