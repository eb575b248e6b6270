"""The compiled decoder on several threads at once, as the local engine's export tasks run it: each
thread decodes what one thread alone decodes, for every codec.

The decoder's process-wide state (its block and scratch caches, the size hints learnt from earlier
calls) is only touched with the GIL held, while the decoding itself runs without it.  These tests
check the results; ``make sanitize-threads`` runs the tests marked ``threads`` with the extensions
built with ThreadSanitizer, which reports any access to such state from two threads that nothing
orders (tests/sanitize.py)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_format import decode_file
from kafka_format.records.implementation import get_decoder
from kafka_format.writer import LogDirWriter, Record, build_v2_batch

pytestmark = pytest.mark.threads

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


SHAPES = ("small", "wide")


def _records(shape: str, rnd: random.Random, first: int) -> list[Record]:
    """100 records: ``small`` (keys of 2-4 bytes, values of 10-100, no headers) or ``wide`` (keys
    of 500-1,000 bytes, values of 10-3,000, a 200-byte header on every third record)."""
    if shape == "small":
        return [Record(key=b"k%d" % rnd.randrange(1000), value=b"s" * rnd.randrange(10, 100),
                       timestamp=1_700_000_000_000 + first + i) for i in range(100)]
    return [Record(key=b"K" * rnd.randrange(500, 1000), value=bytes([97 + i % 26]) * rnd.randrange(10, 3000),
                   headers=[("h", b"x" * 200)] if i % 3 == 0 else [],
                   timestamp=1_700_000_000_000 + first + i) for i in range(100)]


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, list[Record]]]:
    """A segment per codec and shape: 200 batches of ``small`` records (~1.2 MB decoded) or 40 of
    ``wide`` ones (~10 MB).  The decoder sizes a call's key, value and header columns from the
    shares the previous call (any thread's) decoded, so a ``wide`` segment decoded after a
    ``small`` one grows its columns while it decodes without the GIL (from the shared block
    cache), and the decompression buffers come from the shared scratch pool.  Each with the records
    written into it."""
    root = tmp_path_factory.mktemp("threads")
    d = LogDirWriter(root, node_id=1, cluster_id="threadsTestCluster0000", kraft=True)
    rnd = random.Random(7)
    out = {}
    p = 0
    for name, codec in CODECS.items():
        for shape in SHAPES:
            w = d.partition("t", p, topic_id=b"\x07" * 16)
            written: list[Record] = []
            for b in range(200 if shape == "small" else 40):
                records = _records(shape, rnd, 100 * b)
                w.append(build_v2_batch(records, base_offset=100 * b, codec=codec))
                written += records
            w.close()
            out[name, shape] = (root / f"t-{p}" / "00000000000000000000.log", written)
            p += 1
    d.close(written_at_ms=1_700_000_100_000)
    return out


def _decoded(path: Path) -> pa.Table:
    return pa.Table.from_batches(list(decode_file(path)))


def test_threads_decode_what_one_thread_decodes(segments: dict[tuple[str, str], tuple[Path, list[Record]]]) -> None:
    assert type(get_decoder()).__name__ == "FastDecoder", "the compiled decoder is not built"
    alone = {which: _decoded(path) for which, (path, _) in segments.items()}
    for which, (_, written) in segments.items():      # one thread: the records as written
        table = alone[which]
        assert table["key"].to_pylist() == [r.key for r in written], which
        assert table["value"].to_pylist() == [r.value for r in written], which
        assert [len(h) for h in table["headers"].to_pylist()] == [len(r.headers) for r in written], which
    work = [which for _ in range(3) for which in segments]   # every codec and shape, three times over
    start = threading.Barrier(4)

    def decode(i: int) -> tuple[tuple[str, str], pa.Table]:
        if i < 4:
            start.wait()                                          # the first four begin together
        return work[i], _decoded(segments[work[i]][0])

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(decode, range(len(work))))
    assert [which for which, _ in results] == work
    for which, table in results:
        assert table.equals(alone[which]), which
