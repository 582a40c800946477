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
# count (docs/decoder.md, "Bounded memory"), unless given: this much a job, as much as one job's, never
# more than the cap below or an eighth of the memory this process may use. A pool keeps up with a busy
# service only with a generation a job on its line: on 16 cores one of 36 MB decodes to 450 MB, and
# 512 MiB in all made every view shed there, where 4 GiB at --jobs 7 shed nothing.
PIPELINE_BYTES_PER_JOB = 512 << 20
MAX_DEFAULT_PIPELINE_BYTES = 4 << 30
PIPELINE_MEMORY_SHARE = 8
# The size at which the helper closes a generation early, unless asked otherwise. The pool
# decodes a generation in one job, and on 16 cores one of half a second (36 MB of trace) took a
# job about 2 s to order and build spans from: more than the 2 s a live view may lag, and one at
# a time. Smaller ones cost no more per event (docs/decoder.md, "Generations of a bounded size").
GENERATION_BYTES = 8 << 20
# The sizes the helper accepts for it (its advance_bytes), lowest and highest.
GENERATION_BYTES_RANGE = (1 << 20, 1 << 30)
# The shortest generation period the helper accepts (its advance_ms), seconds.
MIN_ADVANCE = 0.1
# The shortest /debug/pprof/trace window a pprof session asks for, seconds.
MIN_WINDOW = 0.1
