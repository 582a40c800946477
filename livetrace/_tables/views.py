"""The prepared views: SQL over the tables that answers the common
questions (docs/sql.md shows each). DuckDB's dialect; plain text, so that
`livetrace sql` and :func:`livetrace.sql` create the same ones."""

from __future__ import annotations

# The blocking reasons Go's `-pprof=sync` counts (cmd/trace's pprof.go: a
# reason naming a channel, a select or a sync primitive), and `-pprof=net`.
_SYNC = "(reason LIKE '%chan%' OR reason LIKE '%sync%' OR reason LIKE '%select%')"

VIEWS: dict[str, str] = {
    # Each stack's frames, one row per frame, innermost (position 1) first.
    "stack_frames": """
        SELECT s.stack_id, s.position, f.frame_id, f.function, f.file, f.line, f.pc
        FROM (SELECT stack_id, unnest(frame_ids) AS frame_id, generate_subscripts(frame_ids, 1) AS position
              FROM stacks) s
        JOIN frames f USING (frame_id)
    """,
    # One row per goroutine of each capture: where it started (the
    # function of its creation's new stack: its goroutine group, as Go's
    # trace tool groups them), who created it, when it was first and last seen.
    "goroutines": """
        WITH created AS (
            SELECT capture, CAST(arg0 AS BIGINT) AS goroutine, min(time) AS created,
                   arg_min(goroutine, time) AS creator, arg_min(new_stack_id, time) AS start_stack_id
            FROM events WHERE event IN ('GoCreate', 'GoCreateBlocked', 'GoCreateSyscall')
            GROUP BY ALL),
        seen AS (
            SELECT capture, goroutine, min(start) AS first_seen, max("end") AS last_seen
            FROM goroutine_states GROUP BY ALL)
        SELECT seen.capture, seen.goroutine, coalesce(st.leaf, '') AS start_function,
               created.created, created.creator, created.start_stack_id, seen.first_seen, seen.last_seen
        FROM seen
        LEFT JOIN created USING (capture, goroutine)
        LEFT JOIN stacks st ON st.stack_id = created.start_stack_id
    """,
    # Scheduler latency (time runnable before running) per goroutine group.
    "sched_latency": """
        SELECT g.start_function, count(*) AS waits, sum(s.duration) AS total_ns,
               avg(s.duration) AS mean_ns, quantile_cont(s.duration, 0.5) AS p50_ns,
               quantile_cont(s.duration, 0.99) AS p99_ns, max(s.duration) AS max_ns
        FROM goroutine_states s JOIN goroutines g USING (capture, goroutine)
        WHERE s.state = 'runnable' AND NOT s.clipped_end
        GROUP BY ALL ORDER BY total_ns DESC
    """,
    # Time goroutines spent blocked, by reason and by where they blocked.
    "blocking": """
        SELECT s.reason, s.start_stack_id AS stack_id, coalesce(st.leaf, '') AS leaf, count(*) AS count,
               sum(s.duration) AS total_ns, max(s.duration) AS max_ns
        FROM goroutine_states s LEFT JOIN stacks st ON st.stack_id = s.start_stack_id
        WHERE s.state = 'blocked' AND NOT s.clipped_end
        GROUP BY ALL ORDER BY total_ns DESC
    """,
    # GC cycles and stop-the-world pauses, in time order.
    "gc_pauses": """
        SELECT capture, kind, reason, start, "end", duration, clipped_start, clipped_end
        FROM spans WHERE kind IN ('gc', 'stw') ORDER BY capture, start
    """,
    "slowest_regions": """
        SELECT * FROM regions WHERE NOT clipped_end ORDER BY duration DESC
    """,
    "slowest_tasks": """
        SELECT * FROM tasks WHERE NOT clipped_end ORDER BY duration DESC
    """,
    # Goroutines still blocked when their capture ended, by where they
    # blocked: many at one stack, blocked long, is the shape of a leak.
    "goroutine_leaks": """
        SELECT s.capture, s.reason, s.start_stack_id AS stack_id, coalesce(st.leaf, '') AS leaf,
               count(*) AS goroutines, min(s.duration) AS min_blocked_ns, max(s.duration) AS max_blocked_ns
        FROM goroutine_states s LEFT JOIN stacks st ON st.stack_id = s.start_stack_id
        WHERE s.state = 'blocked' AND s.clipped_end
        GROUP BY ALL ORDER BY goroutines DESC
    """,
    # The intervals Go's pprof-like profiles (`go tool trace -pprof=KIND`)
    # count, as Go counts them (livetrace/_views/pprof.py says what that
    # is): those of the profile's state, ended, clipped to their
    # goroutine's lifetime (from its first run, or the trace's start if it
    # never ran, to when it blocked forever, or its last interval's end).
    "pprof_intervals": f"""
        WITH life AS (
            SELECT capture, goroutine,
                   coalesce(min(start) FILTER (WHERE state = 'running'), 0) AS lo,
                   coalesce(max(start) FILTER (WHERE state = 'blocked' AND reason = 'forever'),
                            arg_max("end", start)) AS hi
            FROM goroutine_states GROUP BY ALL),
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
