"""Fast/reference parity on broken input.

For many mutations of valid .log bytes (bit flips, truncations, lying lengths / counts / offset
deltas, swapped ranges; CRCs recomputed or not) the compiled decoder and the reference decoder
must agree: FAILFAST yields the same Arrow rows and then raises the same error type at the same
file position with the same expected/found text (or neither raises); PERMISSIVE yields the same
rows and reports the same skipped ranges; ``granularity="batch"`` gives the same headers.
"""

from __future__ import annotations

import random
from pathlib import Path

import atheris_targets as harness
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("kafka_format.records.fast", reason="compiled decoder not built")

pytestmark = pytest.mark.property

LOG_SEEDS = harness.log_seeds([harness.SAMPLES])
assert_same = harness.assert_same_outcome


_MODES = [("FAILFAST", True, "record"), ("FAILFAST", False, "record"), ("PERMISSIVE", True, "record"),
          ("DROPMALFORMED", False, "record"), ("FAILFAST", True, "batch")]

_index = st.integers(min_value=0, max_value=1 << 20)
_op = st.one_of(
    st.tuples(st.just("flip"), _index, st.integers(0, 7)),
    st.tuples(st.just("set"), _index, st.integers(0, 255)),
    st.tuples(st.just("truncate"), _index),
    st.tuples(st.just("delete"), _index, st.integers(1, 64)),
    st.tuples(st.just("insert"), _index, st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("swap"), _index, _index, st.integers(1, 64)),
    st.tuples(st.sampled_from(["length", "count", "delta"]), _index,
              st.one_of(st.sampled_from(harness.LYING_INT32), st.integers(-(1 << 31), (1 << 31) - 1))),
)


@pytest.mark.parametrize(("mode", "verify_crc", "granularity"), _MODES)
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_parity_on_mutations(mode: str, verify_crc: bool, granularity: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(LOG_SEEDS), label="seed")
    broken = harness.mutate(seed, data.draw(st.lists(_op, min_size=1, max_size=3), label="ops"))
    if data.draw(st.booleans(), label="fix_crc"):
        broken = harness.fix_crcs(broken)
    read_size = data.draw(st.sampled_from([1 << 20, 512]), label="read_size")
    assert_same(broken, mode=mode, verify_crc=verify_crc, granularity=granularity, read_size=read_size)


@pytest.mark.parametrize("field", ["length", "count", "delta"])
@pytest.mark.parametrize("value", harness.LYING_INT32)
def test_parity_lying_fields(field: str, value: int) -> None:
    """Every lying value in every header field of every entry of one seed, CRC recomputed."""
    seed = LOG_SEEDS[0]
    for entry in range(len(harness.entry_positions(seed))):
        broken = harness.fix_crcs(harness.mutate(seed, [(field, entry, value)]))
        assert_same(broken, mode="FAILFAST", verify_crc=True, granularity="record", read_size=1 << 20)
        assert_same(broken, mode="PERMISSIVE", verify_crc=True, granularity="record", read_size=1 << 20)


def test_parity_every_truncation() -> None:
    """Prefixes of every length class (cut inside headers, records, payloads) of three seeds."""
    for seed in LOG_SEEDS[:3]:
        for n in range(0, len(seed), 41):
            assert_same(seed[:n], mode="FAILFAST", verify_crc=True, granularity="record", read_size=1 << 20)


@pytest.mark.realdata
def test_parity_realdata_mutations(realdata: Path) -> None:
    """Slices of the real broker files, 6 seeded random mutations each, CRCs recomputed."""
    seeds = harness.log_seeds([realdata], limit=2048, per_root=40)
    rng = random.Random(7)
    for seed in seeds:
        for _ in range(6):
            kind = rng.choice(["flip", "set", "length", "count", "delta"])
            if kind in ("length", "count", "delta"):
                op = (kind, rng.randrange(64), rng.choice(harness.LYING_INT32))
            else:
                op = (kind, rng.randrange(len(seed)), rng.randrange(256))
            broken = harness.fix_crcs(harness.mutate(seed, [op]))
            assert_same(broken, mode="FAILFAST", verify_crc=True, granularity="record", read_size=1 << 20)
            assert_same(broken, mode="PERMISSIVE", verify_crc=True, granularity="record", read_size=1 << 20)
