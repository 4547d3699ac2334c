"""IDs are time-ordered within a process, even inside one millisecond: listings by ID
("the newest 1,000 refusals", keyset pages) keep the order things were made in, and a
test that makes two records back to back never depends on the randomness of the second."""

from __future__ import annotations

from datetime import datetime, timezone

from state import clock
from state.ids import new_id


def test_ids_made_in_one_millisecond_sort_in_the_order_they_were_made():
    made = [new_id("whr") for _ in range(20_000)]  # far more than one per millisecond
    assert made == sorted(made) and len(set(made)) == len(made)


def test_a_fixed_clock_still_gives_the_same_ids_on_every_run():
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    runs = []
    for _ in range(2):
        with clock.using(clock.Fixed(at)):
            runs.append([new_id("msg") for _ in range(5)])
    assert runs[0] == runs[1]
