"""Whether a call lets the GIL go of its own accord: another thread runs
Python while it runs. The switch interval is made long, so that the caller
never has to let the GIL go: the other thread runs only where the call
lets it go. Tried a few times: a loaded machine may not run that thread
during any one call."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable


def lets_the_gil_go(call: Callable[[], object], tries: int = 20) -> bool:
    ran, stop = [0], threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ran[0] += 1
            time.sleep(0)  # lets the GIL go, for the call's return

    interval = sys.getswitchinterval()
    spinner = threading.Thread(target=spin)
    spinner.start()
    sys.setswitchinterval(60)
    try:
        for _ in range(tries):
            before = ran[0]
            call()
            if ran[0] != before:
                return True
        return False
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        spinner.join()
