"""The prepared views: SQL over the tables that answers the common
questions (docs/sql.md shows each). DuckDB's dialect; plain text, so that
`livetrace sql` and :func:`livetrace.sql` create the same ones."""

from __future__ import annotations

# The blocking reasons Go's `-pprof=sync` counts (cmd/trace's pprof.go: a
# reason naming a channel, a select or a sync primitive), and `-pprof=net`.
_SYNC = "(reason LIKE '%chan%' OR reason LIKE '%sync%' OR reason LIKE '%select%')"

# goroutine_units made from events and goroutine_states, a row per
# goroutine of a capture (its units as one): what the build makes per unit
# (livetrace/_tables/goroutines.py), for a dataset written before it did.
# It scans every event and every state, as the views did before; a test
# checks that the views give the same answers over either. So
# blocked_units and gc_spans.
GOROUTINE_UNITS = """
    WITH created AS (
        SELECT capture, CAST(arg0 AS BIGINT) AS goroutine, min(time) AS created,
               arg_min(goroutine, time) AS creator, arg_min(new_stack_id, time) AS create_stack_id
        FROM events WHERE event IN ('GoCreate', 'GoCreateBlocked', 'GoCreateSyscall')
        GROUP BY ALL),
    states AS (
        SELECT capture, goroutine, start, "end", state, reason,
               CASE state WHEN 'running' THEN end_stack_id WHEN 'runnable' THEN NULL ELSE start_stack_id END AS own
        FROM goroutine_states),
    seen AS (
        SELECT s.capture, s.goroutine, min(s.start) AS first_seen, max(s."end") AS last_seen,
               max(s.start) AS last_start, arg_max(s."end", s.start) AS last_end,
               min(s.start) FILTER (WHERE s.state = 'running') AS first_run,
               max(s.start) FILTER (WHERE s.state = 'blocked' AND s.reason = 'forever') AS forever,
               arg_min(s.own, s.start) FILTER (WHERE st.root <> '') AS own_stack_id,
               min(s.start) FILTER (WHERE st.root <> '') AS own_stack_start
        FROM states s LEFT JOIN stacks st ON st.stack_id = s.own
        GROUP BY ALL)
    SELECT capture, CAST(0 AS BIGINT) AS generation, goroutine, created, creator, create_stack_id,
           first_seen, last_seen, last_start, last_end, first_run, forever, own_stack_id, own_stack_start
    FROM seen FULL JOIN created USING (capture, goroutine)
"""

BLOCKED_UNITS = """
    SELECT capture, CAST(0 AS BIGINT) AS generation, reason, start_stack_id AS stack_id, clipped_end,
           count(*) AS intervals, sum(duration) AS total_ns, min(duration) AS min_ns, max(duration) AS max_ns
    FROM goroutine_states WHERE state = 'blocked' GROUP BY ALL
"""

GC_SPANS = """
    SELECT capture, kind, reason, start, "end", duration, clipped_start, clipped_end
    FROM spans WHERE kind IN ('gc', 'stw')
"""

# The tables made at build time for the views, each as SQL over the others:
# a dataset written before the build made them (schema version 1) has them so.
DERIVED: dict[str, str] = {"goroutine_units": GOROUTINE_UNITS, "blocked_units": BLOCKED_UNITS, "gc_spans": GC_SPANS}

VIEWS: dict[str, str] = {
    # Each stack's frames, one row per frame, innermost (position 1) first.
    "stack_frames": """
        SELECT s.stack_id, s.position, f.frame_id, f.function, f.file, f.line, f.pc
        FROM (SELECT stack_id, unnest(frame_ids) AS frame_id, generate_subscripts(frame_ids, 1) AS position
              FROM stacks) s
        JOIN frames f USING (frame_id)
    """,
    # One row per goroutine of each capture: its group (the function it
    # started in: the root frame of its creation's new stack, or, for one
    # created before the trace began, of the first stack it recorded itself,
    # as `top` names them), who created it, when it was first and last seen.
    # goroutine_units has each unit's part of these: here they add up. A
    # goroutine its capture leaves unnamed (it existed before a legacy
    # segment began, and ran and exited without recording a stack) keeps
    # the name the latest earlier capture of its session gave it, as `top`
    # names it by all its session has seen: goroutine ids are the process's.
    "goroutines": """
        WITH g AS (
            SELECT capture, goroutine, min(created) AS created, arg_min(creator, created) AS creator,
                   arg_min(create_stack_id, created) AS start_stack_id, min(first_seen) AS first_seen,
                   max(last_seen) AS last_seen, arg_min(own_stack_id, own_stack_start) AS own_stack_id
            FROM goroutine_units GROUP BY ALL),
        c AS (SELECT DISTINCT ON (capture) capture, coalesce(session, capture) AS session, trace_index FROM captures),
        named AS (
            SELECT g.*, last_value(nullif(coalesce(nullif(st.root, ''), own.root), '') IGNORE NULLS) OVER (
                       PARTITION BY coalesce(c.session, g.capture), g.goroutine
                       ORDER BY c.trace_index, g.capture ROWS UNBOUNDED PRECEDING) AS name
            FROM g
            LEFT JOIN c USING (capture)
            LEFT JOIN stacks st ON st.stack_id = g.start_stack_id
            LEFT JOIN stacks own ON own.stack_id = g.own_stack_id)
        SELECT capture, goroutine, coalesce(name, '') AS start_function, created, creator, start_stack_id,
               first_seen, last_seen
        FROM named
        WHERE first_seen IS NOT NULL
    """,
    # Scheduler latency (time runnable before running) per goroutine group.
    # (The groups made first: else DuckDB joins stacks per state row.)
    "sched_latency": """
        WITH g AS MATERIALIZED (SELECT capture, goroutine, start_function FROM goroutines)
        SELECT g.start_function, count(*) AS waits, sum(s.duration) AS total_ns,
               avg(s.duration) AS mean_ns, quantile_cont(s.duration, 0.5) AS p50_ns,
               quantile_cont(s.duration, 0.99) AS p99_ns, max(s.duration) AS max_ns
        FROM goroutine_states s JOIN g USING (capture, goroutine)
        WHERE s.state = 'runnable' AND NOT s.clipped_end
        GROUP BY ALL ORDER BY total_ns DESC
    """,
    # Time goroutines spent blocked, by reason and by where they blocked.
    # (blocked_units has each unit's sums; joined to stacks per group.)
    "blocking": """
        WITH b AS (
            SELECT reason, stack_id, CAST(sum(intervals) AS BIGINT) AS count, sum(total_ns) AS total_ns,
                   max(max_ns) AS max_ns
            FROM blocked_units WHERE NOT clipped_end GROUP BY ALL)
        SELECT b.reason, b.stack_id, coalesce(st.leaf, '') AS leaf, b.count, b.total_ns, b.max_ns
        FROM b LEFT JOIN stacks st USING (stack_id)
        ORDER BY total_ns DESC
    """,
    # GC cycles and stop-the-world pauses, in time order.
    "gc_pauses": """
        SELECT capture, kind, reason, start, "end", duration, clipped_start, clipped_end
        FROM gc_spans ORDER BY capture, start
    """,
    # Regions and tasks that ended while the trace ran, slowest first: not
    # those still open at its end, but a region its goroutine's exit ended
    # (clipped_end, ending at the exit), as `top` counts them.
    "slowest_regions": """
        SELECT r.* FROM regions r JOIN captures c USING (capture)
        WHERE NOT (r.clipped_end AND r."end" = c.end_time) ORDER BY r.duration DESC
    """,
    "slowest_tasks": """
        SELECT t.* FROM tasks t JOIN captures c USING (capture)
        WHERE NOT (t.clipped_end AND t."end" = c.end_time) ORDER BY t.duration DESC
    """,
    # Goroutines still blocked when their capture ended, by where they
    # blocked: many at one stack, blocked long, is the shape of a leak.
    "goroutine_leaks": """
        WITH b AS (
            SELECT capture, reason, stack_id, CAST(sum(intervals) AS BIGINT) AS goroutines,
                   min(min_ns) AS min_blocked_ns, max(max_ns) AS max_blocked_ns
            FROM blocked_units WHERE clipped_end GROUP BY ALL)
        SELECT b.capture, b.reason, b.stack_id, coalesce(st.leaf, '') AS leaf, b.goroutines, b.min_blocked_ns,
               b.max_blocked_ns
        FROM b LEFT JOIN stacks st USING (stack_id)
        ORDER BY goroutines DESC
    """,
    # The intervals Go's pprof-like profiles (`go tool trace -pprof=KIND`)
    # count, as Go counts them (livetrace/_views/pprof.py says what that
    # is): those of the profile's state, ended, clipped to their
    # goroutine's lifetime (from its first run, or the trace's start if it
    # never ran, to when it blocked forever, or its last interval's end:
    # goroutine_units has each unit's part of it).
    "pprof_intervals": f"""
        WITH life AS (
            SELECT capture, goroutine, coalesce(min(first_run), 0) AS lo,
                   coalesce(max(forever), arg_max(last_end, last_start)) AS hi
            FROM goroutine_units WHERE first_seen IS NOT NULL GROUP BY ALL),
        counted AS (
            SELECT CASE WHEN state = 'runnable' THEN 'sched'
                        WHEN state = 'syscall' THEN 'syscall'
                        WHEN state = 'blocked' AND reason = 'network' THEN 'net'
                        WHEN state = 'blocked' AND {_SYNC} THEN 'sync' END AS profile,
                   capture, goroutine, start, "end", start_stack_id
            FROM goroutine_states WHERE NOT clipped_end)
        SELECT c.profile, c.capture, c.goroutine, c.start_stack_id AS stack_id,
               least(l.hi, c."end") - greatest(l.lo, c.start) AS ns
        FROM counted c JOIN life l USING (capture, goroutine)
        WHERE c.profile IS NOT NULL AND least(l.hi, c."end") - greatest(l.lo, c.start) > 0
    """,
    # Per profile and stack: how many intervals and their total time.
    "pprof": """
        SELECT profile, stack_id, count(*) AS count, sum(ns) AS ns
        FROM pprof_intervals GROUP BY ALL ORDER BY profile, ns DESC
    """,
}
