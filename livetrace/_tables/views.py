"""The prepared views: SQL over the tables that answers the common
questions (docs/sql.md shows each). DuckDB's dialect; plain text, so that
`livetrace sql` and :func:`livetrace.sql` create the same ones."""

from __future__ import annotations

from livetrace._trace.spans.model import SPAN_KIND_NAMES
from livetrace._views.pprof import PROFILE_RULES

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

SCHED_UNITS = """
    SELECT capture, CAST(0 AS BIGINT) AS generation, goroutine, duration, count(*) AS waits
    FROM goroutine_states WHERE state = 'runnable' AND NOT clipped_end GROUP BY ALL
"""


def _profile_case() -> str:
    """The profile Go's `-pprof=KIND` counts a goroutine state in (NULL:
    none), in SQL: _views/pprof.py's PROFILE_RULES."""
    whens = []
    for name, rule in PROFILE_RULES.items():
        test = f"state = '{SPAN_KIND_NAMES[rule.state]}'"
        if rule.reason is not None:
            test += f" AND reason = '{rule.reason.decode()}'"
        elif rule.words:
            test += " AND (" + " OR ".join(f"reason LIKE '%{w.decode()}%'" for w in rule.words) + ")"
        whens.append(f"WHEN {test} THEN '{name}'")
    return f"CASE {' '.join(whens)} END"


_PROFILE = _profile_case()

# Every interval a row alone: what pprof (pprof_intervals) makes of a row
# alone is what it makes of the interval, so the answers are the same, and
# they read the states as they did before the build summed them (summing
# them here first, as the build does, took twice as long).
_COUNTED_STATES = f"""
    (SELECT * FROM (SELECT {_PROFILE} AS profile, capture, goroutine, start_stack_id AS stack_id, start, "end"
                    FROM goroutine_states WHERE NOT clipped_end AND "end" > start)
     WHERE profile IS NOT NULL)
"""
PPROF_UNITS = f"""
    SELECT capture, CAST(0 AS BIGINT) AS generation, goroutine, profile, stack_id, 1::BIGINT AS intervals,
           "end" - start AS total_ns, start AS first_start, "end" AS last_end
    FROM {_COUNTED_STATES}
"""
PPROF_INTERVAL_UNITS = f"""
    SELECT capture, CAST(0 AS BIGINT) AS generation, goroutine, profile, stack_id, "end" - start AS ns,
           1::BIGINT AS intervals, start AS first_start, "end" AS last_end
    FROM {_COUNTED_STATES}
"""

# The tables made at build time for the views, each as SQL over the others:
# a dataset written before the build made them (schema version 1, 3 for
# sched_units and pprof_units, 4 for pprof_interval_units) has them so.
DERIVED: dict[str, str] = {
    "goroutine_units": GOROUTINE_UNITS,
    "blocked_units": BLOCKED_UNITS,
    "gc_spans": GC_SPANS,
    "sched_units": SCHED_UNITS,
    "pprof_units": PPROF_UNITS,
    "pprof_interval_units": PPROF_INTERVAL_UNITS,
}

# A goroutine's lifetime, to which Go's profiles clip its intervals: from
# its first run (or 0, the trace's start, if it never ran) to when it
# blocked forever, or its latest interval's end (goroutine_units has each
# unit's part of it).
_LIFE = """
    SELECT capture, goroutine, coalesce(min(first_run), 0) AS lo,
           coalesce(max(forever), arg_max(last_end, last_start)) AS hi
    FROM goroutine_units WHERE first_seen IS NOT NULL GROUP BY ALL
"""


# sched_latency's quantiles, from the counts of each wait's duration: as
# DuckDB's quantile_cont(duration, q) computes them over every wait, to the
# bit. Between the waits at 0-based places floor(r) and ceil(r), r = (n -
# 1) * q, it interpolates lo * (1 - d) + hi * d (d = r - floor(r)), which
# its build fuses into one rounding: fma(lo, 1 - d, hi * d). SQL's doubles
# round lo * (1 - d) first, so the sum is taken exactly, in HUGEINT units
# of 2^-53 (every term is a multiple: d, 1 - d and hi * d are, for r >=
# 0.5), and the double nearest it chosen: the sum in doubles (`s`) or its
# neighbour towards the exact sum, ties to the even one. `n`: the group's
# waits; `upto`: its waits no longer than the row's duration.
_QUANTILES = {"p50_ns": "0.5", "p99_ns": "0.99"}
_UNIT = "CAST(9007199254740992 AS DOUBLE)"  # 2^53
_UP, _DOWN = "'inf'::DOUBLE", "'-inf'::DOUBLE"


def _units(x: str) -> str:
    return f"CAST({x} * {_UNIT} AS HUGEINT)"


def _quantile_steps() -> list[str]:
    """The select lists of the CTEs that take the quantiles, in order (each
    reads the columns of the one before: ``lo``, ``hi``, ``r`` per quantile
    come from the first, made by _quantile_bounds)."""
    steps: list[list[str]] = [[], [], [], []]
    for name in _QUANTILES:
        q = name.removesuffix("_ns")
        steps[0] += [
            f"CAST({q}_lo AS DOUBLE) AS {q}_a",
            f"1 - ({q}_r - floor({q}_r)) AS {q}_b",
            f"CAST({q}_hi AS DOUBLE) * ({q}_r - floor({q}_r)) AS {q}_c",
        ]
        steps[1] += [
            f"{q}_a * {q}_b + {q}_c AS {q}_s",
            f"CAST({q}_a AS HUGEINT) * {_units(f'{q}_b')} + {_units(f'{q}_c')} AS {q}_x",
        ]
        steps[2] += [f"nextafter({q}_s, CASE WHEN {q}_x > {_units(f'{q}_s')} THEN {_UP} ELSE {_DOWN} END) AS {q}_t"]
        near, far = f"abs({q}_x - {_units(f'{q}_s')})", f"abs({q}_x - {_units(f'{q}_t')})"
        ulp = f"({_units(f'nextafter({q}_s, {_UP})')} - {_units(f'{q}_s')})"
        steps[3] += [
            f"CASE WHEN floor({q}_r) = ceil({q}_r) THEN {q}_a WHEN {near} = 0 OR {near} < {far} THEN {q}_s "
            f"WHEN {far} < {near} THEN {q}_t WHEN ({_units(f'{q}_s')} // {ulp}) % 2 = 0 THEN {q}_s "
            f"ELSE {q}_t END AS {name}"
        ]
    return [", ".join(step) for step in steps]


def _quantile_bounds() -> str:
    out = []
    for name, q in _QUANTILES.items():
        p, r = name.removesuffix("_ns"), f"CAST(n - 1 AS DOUBLE) * CAST({q} AS DOUBLE)"
        out += [
            f"{r} AS {p}_r",
            f"min(duration) FILTER (WHERE upto > floor({r})) AS {p}_lo",
            f"min(duration) FILTER (WHERE upto > ceil({r})) AS {p}_hi",
        ]
    return ", ".join(out)


_STEPS = _quantile_steps()

# The goroutine_states rows of pprof's odd goroutines (none, mostly).
_ODD_STATES = "(FROM goroutine_states SEMI JOIN odd USING (capture, goroutine))"


def _clipped_in(states: str) -> str:
    """Each of these goroutine states that a profile counts, clipped to its
    goroutine's lifetime (a CTE ``life`` of _LIFE's rows): its profile,
    capture, goroutine, stack_id and ns."""
    return f"""
        SELECT {_PROFILE} AS profile, c.capture, c.goroutine, c.start_stack_id AS stack_id,
               least(l.hi, c."end") - greatest(l.lo, c.start) AS ns
        FROM {states} c JOIN life l USING (capture, goroutine)
        WHERE NOT c.clipped_end AND ns > 0 AND profile IS NOT NULL
    """


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
    # Scheduler latency (time runnable before running) per goroutine group:
    # sched_units' counts of each duration per goroutine added up per group
    # (the groups made first: else DuckDB joins stacks per row), and the
    # quantiles of those counts, which are exactly those of the waits.
    "sched_latency": f"""
        WITH g AS MATERIALIZED (SELECT capture, goroutine, start_function FROM goroutines),
        d AS (
            SELECT g.start_function, s.duration, sum(s.waits) AS waits
            FROM sched_units s JOIN g USING (capture, goroutine) GROUP BY ALL),
        w AS (
            SELECT *, sum(waits) OVER (PARTITION BY start_function ORDER BY duration) AS upto,
                   CAST(sum(waits) OVER (PARTITION BY start_function) AS BIGINT) AS n
            FROM d),
        s AS (
            SELECT start_function, n, sum(CAST(duration AS HUGEINT) * waits) AS total_ns, max(duration) AS max_ns,
                   {_quantile_bounds()}
            FROM w GROUP BY start_function, n),
        q1 AS (SELECT *, {_STEPS[0]} FROM s),
        q2 AS (SELECT *, {_STEPS[1]} FROM q1),
        q3 AS (SELECT *, {_STEPS[2]} FROM q2),
        q AS (SELECT *, {_STEPS[3]} FROM q3)
        SELECT start_function, n AS waits, total_ns, total_ns / n AS mean_ns, p50_ns, p99_ns, max_ns
        FROM q ORDER BY total_ns DESC
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
    # goroutine's lifetime (_LIFE); a row per goroutine, profile, stack and
    # (clipped) duration, with how many lasted so: a row per interval was
    # 113 M rows for a 1 GB set, whose fetching alone took longer than any
    # question over them (docs/sql.md, "Speed"). From pprof_interval_units,
    # as pprof reads pprof_units: a row whose intervals lie in their
    # goroutine's lifetime counts whole, an interval alone is clipped here,
    # and a goroutine with a row of several intervals that its lifetime
    # would clip is counted from its goroutine_states rows. Those are found
    # in pprof_units (fewer rows), whose rows of several intervals hold
    # those of pprof_interval_units: a goroutine pprof counts so, which is
    # every one that needs it here. The units' rows of a goroutine of many
    # generations are counted together here, so the rows are the same
    # whatever the units.
    "pprof_intervals": f"""
        WITH life AS MATERIALIZED ({_LIFE}),
        odd AS MATERIALIZED (
            SELECT DISTINCT p.capture, p.goroutine FROM pprof_units p JOIN life l USING (capture, goroutine)
            WHERE p.intervals > 1 AND NOT (l.lo <= p.first_start AND p.last_end <= l.hi)),
        u AS (
            SELECT p.profile, p.capture, p.goroutine, p.stack_id, p.ns, p.intervals,
                   l.lo <= p.first_start AND p.last_end <= l.hi AS whole,
                   least(l.hi, p.last_end) - greatest(l.lo, p.first_start) AS clipped
            FROM pprof_interval_units p JOIN life l USING (capture, goroutine)
            ANTI JOIN odd USING (capture, goroutine)),
        parts AS (
            SELECT CAST(profile AS VARCHAR) AS profile, capture, goroutine, stack_id,
                   CASE WHEN whole THEN ns ELSE clipped END AS ns,
                   CASE WHEN whole THEN intervals ELSE 1 END AS intervals
            FROM u WHERE whole OR clipped > 0
            UNION ALL
            SELECT *, 1 FROM ({_clipped_in(_ODD_STATES)}))
        SELECT profile, capture, goroutine, stack_id, ns, CAST(sum(intervals) AS BIGINT) AS intervals
        FROM parts GROUP BY ALL
    """,
    # Per profile and stack: how many intervals and their total time, as
    # pprof_intervals' rows add up (intervals, ns * intervals), from pprof_units' rows: a row whose
    # intervals lie in their goroutine's lifetime counts whole, an interval
    # alone is clipped here. A goroutine with a row of several intervals
    # that its lifetime would clip (none, as Go's runtime runs: a
    # goroutine's states follow one another, and none comes after a forever
    # block) is counted from its goroutine_states rows instead (else
    # unread: a join to nothing).
    "pprof": f"""
        WITH life AS MATERIALIZED ({_LIFE}),
        u AS NOT MATERIALIZED (
            SELECT p.profile, p.capture, p.goroutine, p.stack_id, p.intervals, p.total_ns,
                   coalesce(l.lo <= p.first_start AND p.last_end <= l.hi, false) AS whole,
                   least(l.hi, p.last_end) - greatest(l.lo, p.first_start) AS ns
            FROM pprof_units p JOIN life l USING (capture, goroutine)),
        odd AS MATERIALIZED (SELECT DISTINCT capture, goroutine FROM u WHERE NOT whole AND intervals > 1),
        parts AS (
            SELECT CAST(profile AS VARCHAR) AS profile, stack_id, CASE WHEN whole THEN intervals ELSE 1 END AS count,
                   CASE WHEN whole THEN total_ns ELSE ns END AS ns
            FROM u ANTI JOIN odd USING (capture, goroutine)
            WHERE whole OR ns > 0
            UNION ALL
            SELECT profile, stack_id, 1, ns FROM ({_clipped_in(_ODD_STATES)}))
        SELECT profile, stack_id, CAST(sum(count) AS BIGINT) AS count, sum(ns) AS ns
        FROM parts GROUP BY ALL ORDER BY profile, ns DESC
    """,
}
