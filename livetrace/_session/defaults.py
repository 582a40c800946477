"""A session's default limits and the bounds of its periods: constants
only, so that the command line's parser can show them in its help without
importing the session layer (trio, httpx)."""

from __future__ import annotations

# The longest a helper may stay silent. Helpers that know heartbeats send
# one after a second of nothing else; older ones send nothing while the
# runtime has nothing to hand over, so the default is generous.
IDLE_TIMEOUT = 30.0
# After the stop (ours, or the end of the duration) the helper flushes the
# tracer and drains its queue; this is how long the client waits on it for
# that, not counting time the client itself spends on what arrives.
STOP_TIMEOUT = 60.0
MAX_GENERATION_BYTES = 512 << 20
# The most the units on a session's pipeline (with a pool) may hold at once, as their events' columns
# count (docs/decoder.md, "Bounded memory").
MAX_PIPELINE_BYTES = 512 << 20
# The shortest generation period the helper accepts (its advance_ms), seconds.
MIN_ADVANCE = 0.1
# The shortest /debug/pprof/trace window a pprof session asks for, seconds.
MIN_WINDOW = 0.1
