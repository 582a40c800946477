"""The agent's budget on its own CPU and memory, and how it keeps to it.

Every ``PERIOD`` seconds it measures its own CPU time (user and system, all
threads) and resident memory. Over budget (``cpu_per_process`` of a core
for each traced process, ``memory`` in all), it doubles :meth:`stretch`, the
factor on every sampled policy's period, up to ``MAX_STRETCH``: it samples
less, and says so in its own records (``budget_cut``); a continuous policy
turns to sampled windows while it is over (policies.py). Well under budget
again, it halves the factor (``budget_restored``).
"""

from __future__ import annotations

from collections.abc import Callable

import psutil
import trio

from livetrace._agent import config

__all__ = ["Budget"]

PERIOD = 5.0
MAX_STRETCH = 64.0
# Back to a shorter period only well under budget, so the factor does not flap.
RESTORE_BELOW = 0.5


class Budget:
    def __init__(self, budget: config.Budget, note: Callable[[str, int, str], None]) -> None:
        self.budget = budget
        self._note = note
        self._pids: set[int] = set()
        self._stretch = 1.0
        self._me = psutil.Process()
        self.cpu = 0.0  # the last period's share of one core
        self.rss = 0

    def add(self, pid: int) -> None:
        self._pids.add(pid)

    def remove(self, pid: int) -> None:
        self._pids.discard(pid)

    def stretch(self) -> float:
        return self._stretch

    def headroom(self) -> float:
        """The share of a core still within budget at the last measure (negative: over)."""
        return self.budget.cpu_per_process * max(1, len(self._pids)) - self.cpu

    def check(self, cpu: float, rss: int) -> None:
        """One period's measures (cpu: a share of one core)."""
        self.cpu, self.rss = cpu, rss
        allowed = self.budget.cpu_per_process * max(1, len(self._pids))
        over = cpu > allowed or rss > self.budget.memory
        what = (
            f"CPU {cpu:.1%} of a core (budget {allowed:.1%}), "
            f"memory {rss >> 20} MiB (budget {self.budget.memory >> 20} MiB)"
        )
        if over and self._stretch < MAX_STRETCH:
            self._stretch *= 2
            self._note("budget_cut", int(self._stretch), f"{what}: sampled periods x{self._stretch:g}")
        elif (
            not over
            and self._stretch > 1
            and cpu < allowed * RESTORE_BELOW
            and rss < self.budget.memory * RESTORE_BELOW
        ):
            self._stretch /= 2
            self._note("budget_restored", int(self._stretch), f"{what}: sampled periods x{self._stretch:g}")

    async def run(self) -> None:
        last = sum(self._me.cpu_times()[:2])
        at = trio.current_time()
        while True:
            await trio.sleep(PERIOD)
            used = sum(self._me.cpu_times()[:2])
            now = trio.current_time()
            self.check((used - last) / max(now - at, 1e-3), self._me.memory_info().rss)
            last, at = used, now
