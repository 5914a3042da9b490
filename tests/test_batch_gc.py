"""A batch runs with the objects alive at its start frozen out of the cyclic garbage collector
and a larger youngest generation; the collector's settings come back afterwards, also when the
batch fails and when batches overlap (harness/selfscore/runs.py, issue 44)."""
import asyncio
import gc

import pytest

from harness.selfscore import runs
from harness.selfscore.runs import BATCH_GC_THRESHOLD, batch_gc


def test_the_collector_leaves_the_heap_alone_during_a_batch_and_comes_back():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with batch_gc():
        assert gc.get_threshold() == (BATCH_GC_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > frozen
        with batch_gc():  # a second batch at once (the live app): the first one's settings stay
            assert gc.get_threshold()[0] == BATCH_GC_THRESHOLD
        assert gc.get_threshold()[0] == BATCH_GC_THRESHOLD and gc.get_freeze_count() > frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_a_failed_batch_gives_the_settings_back():
    before = gc.get_threshold()
    seen = []

    class Writer:
        def set_run_status(self, run_id, status, detail=None):
            seen.append(status)

    async def worker(row):
        assert gc.get_threshold()[0] == BATCH_GC_THRESHOLD
        raise RuntimeError("a bug")  # not an ordinary failure: the run stops, interrupted

    with pytest.raises(RuntimeError):
        asyncio.run(runs.run_all(Writer(), "r1", [{"id": 1}], 1, runs.Progress(total=1), worker))
    assert seen == ["interrupted"] and gc.get_threshold() == before and gc.get_freeze_count() == 0
