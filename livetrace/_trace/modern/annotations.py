"""The ordering rules of user annotations: tasks and regions are the program's own state, not the runtime's."""

from __future__ import annotations

from livetrace._trace.model.events import NO_TASK
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.state import (
    USER_GO,
    Ctx,
    GState,
    OrderingError,
    OrderState,
    check_ctx,
    code_name,
)


class AnnotationRules(OrderState):
    """User tasks (by id, across goroutines), regions (nested per goroutine),
    logs and labels."""

    def _task_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        tid = a[0]
        if tid in self.tasks:
            raise OrderingError(f"task ID conflict: {tid}")
        if a[1] == 0:  # the background task is no parent
            a[1] = NO_TASK
        name = gen.strings.get(a[2])
        if name is None:
            raise OrderingError(f"invalid string ID {a[2]} for {code} event")
        self.tasks[tid] = (name, a[1])
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _task_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        task = self.tasks.pop(a[0], None)
        extra = (task[1], gen.add_extra_string(task[0])) if task is not None else (NO_TASK, 0)
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen, extra)
        return ctx

    def _region(self, code: int, a: list[int], gen: Generation, ctx: Ctx) -> tuple[GState, tuple[int, bytes]]:
        check_ctx(ctx, USER_GO)
        name = gen.strings.get(a[1])
        if name is None:
            raise OrderingError(f"invalid string ID {a[1]} for {code} event")
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered Ev{code_name(code)} without known state for current goroutine {ctx[2]}")
        return s, (a[0], name)

    def _region_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s, r = self._region(code, a, gen, ctx)
        s.regions.append(r)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _region_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s, r = self._region(code, a, gen, ctx)
        # Regions that began before the trace did end without a begin.
        if s.regions:
            if s.regions[-1] != r:
                raise OrderingError(
                    f"misuse of region in goroutine {s.id}: region end {r} when the inner-most "
                    f"active region start event is {s.regions[-1]}"
                )
            s.regions.pop()
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _annotation(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx
