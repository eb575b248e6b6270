"""The cleaner's compiled kernels (``log/cleaner/_kernels.c``) against independent references.

MD5 (written from RFC 1321) against ``hashlib`` on random and empty keys and every length around
the 64-byte block and 56-byte padding edges; the offset map against a plain dict with Kafka's rule
("full" = the map already holds its capacity before a put, checked for every key, a put moves
latestOffset); the v2 record encoder against the writer's per-record encoder.  The plain-Python
twins (used without a compiler or with ``KAFKA_FORMAT_DECODER=reference``) face the same checks.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_format.log.cleaner import kernels
from kafka_format.records.columns import RecordColumns
from kafka_format.writer.batches import Record, encode_record

pytestmark = pytest.mark.property

native = pytest.importorskip("kafka_format.log.cleaner._kernels")

MAPS = {"compiled": native.OffsetMap, "python": kernels.PyOffsetMap}


def columns_of(keys: list[bytes | None], lead: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """Arrow-style (offsets int32[n+1], data) of ``keys``; ``lead`` bytes before the first key
    (offsets that do not start at 0, as a sliced chunk has)."""
    lens = [len(k or b"") for k in keys]
    off = np.zeros(len(keys) + 1, np.int32)
    off[0] = len(lead)
    off[1:] = len(lead) + np.cumsum(lens, dtype=np.int64)
    data = np.frombuffer(lead + b"".join(k or b"" for k in keys), np.uint8)
    return off, data


@pytest.mark.parametrize("n", [*range(0, 130), 1000, 4095, 4096, 65536])
def test_md5_every_length_around_the_block_edges(n: int) -> None:
    data = random.Random(n).randbytes(n)
    assert native.md5(data) == hashlib.md5(data).digest()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=200), st.just(b"")), max_size=40), st.binary(max_size=9))
def test_digest_keys_equal_hashlib(keys: list[bytes], lead: bytes) -> None:
    off, data = columns_of(keys, lead)
    rows = np.arange(len(keys), dtype=np.int64)[::-1].copy()      # any order, as given
    want = b"".join(hashlib.md5(keys[r]).digest() for r in rows.tolist())
    assert native.digest_keys(off, data, rows) == want
    assert kernels.digest_keys(off, data, rows) == want


def test_digest_keys_rejects_rows_and_spans_outside_the_columns() -> None:
    off, data = columns_of([b"ab", b"c"])
    with pytest.raises(ValueError, match="outside"):
        native.digest_keys(off, data, np.array([2], np.int64))
    bad = off.copy()
    bad[2] = 99
    with pytest.raises(ValueError, match="outside"):
        native.digest_keys(bad, data, np.array([1], np.int64))


def _dict_put(d: dict[bytes, int], keys: list[bytes], offsets: list[int], capacity: int) -> tuple[int, int | None]:
    """Kafka's loop over one batch of keys with a dict: (how many put, last offset put)."""
    put, last = 0, None
    for k, o in zip(keys, offsets):
        if len(d) >= capacity:
            break
        d[hashlib.md5(k).digest()] = o
        put, last = put + 1, o
    return put, last


@pytest.mark.parametrize("kind", list(MAPS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_offset_map_follows_kafka_rule(kind: str, data: st.DataObject) -> None:
    space = data.draw(st.integers(1, 3000))
    slots = data.draw(st.integers(2, 4000))
    capacity = max(1, int(slots * 0.9))
    m = MAPS[kind](slots)
    d: dict[bytes, int] = {}
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    offset = 0
    latest = -1
    for _ in range(data.draw(st.integers(1, 6))):
        keys = [b"key-%d" % rng.randrange(space) for _ in range(rng.randrange(0, 2000))]
        offsets = list(range(offset, offset + len(keys)))
        offset += len(keys) + 3
        off, col = columns_of(keys)
        rows = np.arange(len(keys), dtype=np.int64)
        got = m.put_keys(off, col, rows, np.array(offsets, np.int64), capacity)
        want, last = _dict_put(d, keys, offsets, capacity)
        assert got == want and m.size == len(d) <= capacity
        latest = last if last is not None else latest
        assert m.latest_offset == latest
        probe = [b"key-%d" % rng.randrange(space * 2) for _ in range(300)]
        poff, pcol = columns_of(probe)
        out = np.empty(len(probe), np.int64)
        m.get_keys(poff, pcol, np.arange(len(probe), dtype=np.int64), out)
        assert out.tolist() == [d.get(hashlib.md5(k).digest(), -1) for k in probe]
        if got < len(keys):
            break
    m.clear()
    assert m.size == 0 and m.latest_offset == -1


@pytest.mark.parametrize("kind", list(MAPS))
def test_offset_map_with_every_slot_taken_refuses_a_new_key(kind: str) -> None:
    """Load factor 1: the capacity equals the slots; Kafka's put requires a free slot."""
    m = MAPS[kind](3)
    off, col = columns_of([b"a", b"b", b"c", b"a", b"d"])
    with pytest.raises(ValueError, match="full offset map"):
        m.put_keys(off, col, np.arange(5, dtype=np.int64), np.arange(5, dtype=np.int64), 10)
    assert m.size == 3
    out = np.empty(2, np.int64)
    m.get_keys(off, col, np.array([3, 4], np.int64), out)   # a full table still answers
    assert out.tolist() == [3, -1]


def test_offset_map_table_grows_to_its_slots_only() -> None:
    m = native.OffsetMap(100_000)
    assert m.table_bytes < 100_000 * 24                     # allocated on demand
    keys = [b"k%d" % i for i in range(80_000)]
    off, col = columns_of(keys)
    assert m.put_keys(off, col, np.arange(len(keys), dtype=np.int64), np.arange(len(keys), dtype=np.int64),
                      90_000) == len(keys)
    assert m.table_bytes == 100_000 * 24                    # never more than Kafka's buffer share


header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8)))
record = st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=60)),
                   st.integers(-2**40, 2**40), st.lists(header, max_size=3))


@settings(max_examples=120, deadline=None)
@given(st.lists(record, min_size=1, max_size=30), st.integers(0, 2**40), st.integers(-2**40, 2**40), st.data())
def test_encode_v2_records_equals_the_writer(recs: list, base_offset: int, base_ts: int,
                                             data: st.DataObject) -> None:
    n = len(recs)
    offsets = np.array(sorted(random.Random(n).sample(range(base_offset, base_offset + 3 * n), n)), np.int64)
    keys = [r[0] for r in recs]
    values = [r[1] for r in recs]
    koff, kdata = columns_of(keys, b"xyz")
    voff, vdata = columns_of(values)
    hdrs = [h for r in recs for h in r[3]]
    hoff = np.zeros(n + 1, np.int32)
    hoff[1:] = np.cumsum([len(r[3]) for r in recs])
    hkoff, hkdata = columns_of([k.encode() for k, _ in hdrs])
    hvoff, hvdata = columns_of([v for _, v in hdrs])
    cols = RecordColumns(
        batch_row=np.zeros(n, np.int32), offset=offsets, timestamp=np.array([r[2] for r in recs], np.int64),
        timestamp_type=np.zeros(n, np.int8), sequence=np.zeros(n, np.int32), key_offsets=koff, key_data=kdata,
        key_valid=np.array([k is not None for k in keys]), value_offsets=voff, value_data=vdata,
        value_valid=np.array([v is not None for v in values]), header_offsets=hoff, header_key_offsets=hkoff,
        header_key_data=hkdata, header_value_offsets=hvoff, header_value_data=hvdata,
        header_value_valid=np.array([v is not None for _, v in hdrs], bool))
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))), np.int64)
    want = b"".join(encode_record(Record(keys[r], values[r], recs[r][2], tuple(recs[r][3])),
                                  int(offsets[r]) - base_offset, recs[r][2] - base_ts) for r in rows.tolist())
    assert native.encode_v2_records(
        rows, cols.offset, cols.timestamp, koff, kdata, cols.key_valid.view(np.uint8), voff, vdata,
        cols.value_valid.view(np.uint8), hoff, hkoff, hkdata, hvoff, hvdata, cols.header_value_valid.view(np.uint8),
        base_offset, base_ts) == want
    assert kernels._py_encode(cols, rows, base_offset, base_ts) == want


# ---------------------------------------------------------------------------------------------
# on threads: the local engine cleans partitions on threads, the kernels' loops without the GIL


def _keyed_columns(seed: int, n: int) -> tuple[list[bytes], np.ndarray, np.ndarray, np.ndarray]:
    rng = random.Random(seed)
    keys = [b"key-%d-%d" % (seed, rng.randrange(n // 2)) + b"." * rng.randrange(40) for _ in range(n)]
    off, col = columns_of(keys)
    return keys, off, col, np.arange(n, dtype=np.int64)


def _map_of(seed: int, n: int) -> tuple[int, list[int], bytes]:
    """One thread's work: its keys put in a map of its own, all of them read back, and digested."""
    _keys, off, col, rows = _keyed_columns(seed, n)
    m = native.OffsetMap(n)
    put = m.put_keys(off, col, rows, rows * 2, n)
    out = np.empty(n, np.int64)
    m.get_keys(off, col, rows, out)
    return put, out.tolist(), native.digest_keys(off, col, rows)


@pytest.mark.threads
def test_maps_on_threads_equal_maps_in_turn() -> None:
    """Four threads, each with its own map, get what one thread gets for the same keys; the
    answers also match a dict and hashlib (a key's offset is that of its last put)."""
    from concurrent.futures import ThreadPoolExecutor

    seeds = list(range(8))
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda s: _map_of(s, 20_000), seeds))
    assert together == [_map_of(s, 20_000) for s in seeds]
    keys = _keyed_columns(3, 20_000)[0]
    last = {k: 2 * i for i, k in enumerate(keys)}
    assert together[3][1] == [last[k] for k in keys]
    assert together[3][2] == b"".join(hashlib.md5(k).digest() for k in keys)


@pytest.mark.threads
def test_a_map_in_use_refuses_other_calls_and_the_gil_is_free_meanwhile() -> None:
    """While one thread puts keys (its loop without the GIL), this thread runs and any call on
    the same map raises RuntimeError rather than reading or changing it mid-put; afterwards the map
    holds every key.  (Were the GIL held, this thread could not run during the put; were the map
    not marked, the reads would race with the put.)"""
    import threading

    keys, off, col, rows = _keyed_columns(11, 400_000)
    offsets = rows.copy()
    seen: list[str] = []
    stop = threading.Event()

    def putter() -> None:
        for _ in range(50):               # until this thread has met the map in use (the first put, here)
            m.clear()
            m.put_keys(off, col, rows, offsets, len(keys))
            if stop.is_set():
                return

    m = native.OffsetMap(len(keys))
    worker = threading.Thread(target=putter)
    worker.start()
    try:
        while worker.is_alive() and not stop.is_set():
            for call in (lambda: m.size, lambda: m.latest_offset, m.clear,
                         lambda: m.get_keys(off, col, rows[:1], np.empty(1, np.int64))):
                try:
                    call()
                except RuntimeError as exc:
                    seen.append(str(exc))
                    stop.set()
                    break
    finally:
        worker.join()
    assert seen and "in use by another thread" in seen[0]
    assert m.size == len(set(keys)) and m.latest_offset == len(keys) - 1


@pytest.mark.threads
def test_errors_found_without_the_gil_are_raised_with_their_values() -> None:
    off, col = columns_of([b"ab", b"c"])
    m = native.OffsetMap(4)
    with pytest.raises(ValueError, match=r"row 5 outside the 2 records"):
        m.put_keys(off, col, np.array([0, 5], np.int64), np.array([1, 2], np.int64), 4)
    assert m.size == 1 and m.latest_offset == 1              # the keys before the bad row are put
    bad = off.copy()
    bad[2] = 99
    with pytest.raises(ValueError, match=r"key 1 spans \[2, 99\) outside 3 bytes"):
        m.get_keys(bad, col, np.array([0, 1], np.int64), np.empty(2, np.int64))
    m.put_keys(off, col, np.array([1], np.int64), np.array([7], np.int64), 4)   # usable after an error
    assert m.size == 2
