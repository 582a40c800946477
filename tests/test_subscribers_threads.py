"""The fan-out's subscribers, read by the decoder's thread while trio's
thread subscribes and removes: a subscriber removed while the decoder's
thread goes through them must not make it skip the next one (a lossless
subscriber would miss an item, with no SubscriberGap to say so).

The race is made deterministic: the decoder's thread is paused where it
reads what the removed subscriber wants, and another thread removes it
then, as trio's can. Sans-IO: fast."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from livetrace import EventBatch
from livetrace._files import decode_batches
from livetrace._session.pipeline import Cutter
from livetrace._session.subscribers import Fanout, Subscription, What

TRACE = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"
pytestmark = pytest.mark.once  # the fan-out's plumbing: the same on either core


class RemovedMidway(Subscription):
    """A subscription that another thread removes from its fan-out the
    first time the fan-out reads what it wants (kept, as Subscription
    keeps it, in the object's attributes)."""

    armed = True

    @property
    def what(self) -> What:
        if self.armed:
            self.armed = False
            t = threading.Thread(target=self._fanout.remove, args=(self,))
            t.start()
            t.join()
        return self.__dict__["what"]  # type: ignore[no-any-return]  # set as a What

    @what.setter
    def what(self, value: What) -> None:
        self.__dict__["what"] = value


def fanout_with_one_removed_midway() -> tuple[Fanout, Subscription, Subscription]:
    """A fan-out of three subscribers, the middle one removed the first
    time it is read; the fan-out and the other two."""
    fan = Fanout()
    first = fan.subscribe(what="batches", lossless=True)
    removed = fan.subscribe(what="batches")
    last = fan.subscribe(what="batches", lossless=True)
    removed.__class__ = RemovedMidway  # the real subscription, from then on paused when read
    return fan, first, last


def test_removing_a_subscriber_midway_skips_none_of_the_others() -> None:
    fan, first, last = fanout_with_one_removed_midway()
    subs = fan.subscribers
    assert first in subs and last in subs
    assert last in fan.subscribers  # the removal is seen from then on


def test_removing_a_subscriber_midway_loses_no_item_for_the_others() -> None:
    batch = next(b for b in decode_batches(io.BytesIO(TRACE.read_bytes())) if isinstance(b, EventBatch))
    fan, first, last = fanout_with_one_removed_midway()
    got = {sub: item for sub, item, _ in fan.prepare(batch)}
    assert got.get(first) is batch and got.get(last) is batch


def test_a_unit_cut_while_a_subscriber_is_removed_is_for_all_the_others() -> None:
    fan, first, last = fanout_with_one_removed_midway()
    unit = Cutter(fan).flush(end=True)
    assert unit is not None and first in unit.subs and last in unit.subs
