"""File-level API: sources, provenance from paths, split ranges, batch headers, decoder choice,
and that bad bytes only ever raise KafkaFormatError."""

from __future__ import annotations

import io
import random
import warnings

import pyarrow as pa
import pytest
from builders import (
    DECODER_IDS,
    DECODERS,
    KpMemoryRecords,
    arrow_records,
    build_legacy,
    build_v2,
    comparable,
    kafka_python_records,
    patch_v2,
    sample_records,
)

from kafka_format.common.errors import KafkaFormatError
from kafka_format.records import decoder as decoder_module
from kafka_format.records import file_records as api
from kafka_format.records import file_source, implementation
from kafka_format.records.file_records import (
    FileContext,
    decode_bytes,
    decode_file,
    decode_segment,
    iter_batches,
)
from kafka_format.records.schema import BATCH_SCHEMA, RECORD_SCHEMA


@pytest.fixture(params=DECODERS, ids=DECODER_IDS)
def decoder(request):
    return request.param


def segment_bytes() -> bytes:
    parts = [build_v2(sample_records(4 + i), base_offset=sum(range(4, 4 + i)) + i) for i in range(5)]
    parts.append(patch_v2(build_v2(sample_records(2), base_offset=100), set_bits=0x08, max_timestamp=5))
    return b"".join(parts)


@pytest.fixture
def log_file(tmp_path):
    part = tmp_path / "logs" / "orders.eu-west-12"
    part.mkdir(parents=True)
    path = part / "00000000000000000042.log"
    path.write_bytes(segment_bytes())
    return path


class TestSources:
    def test_decode_file_fills_provenance(self, log_file):
        rows = arrow_records(list(decode_file(log_file)))
        assert comparable(rows) == kafka_python_records(log_file.read_bytes())
        # LocalLog: partition = text after the last '-', topic = everything before it.
        assert {(r["topic"], r["partition"], r["segment"], r["logDir"]) for r in rows} == {
            ("orders.eu-west", 12, 42, str(log_file.parent.parent))
        }

    def test_provenance_from_kafka_dir_names(self, tmp_path):
        for dirname, expected in [("my-topic-3", ("my-topic", 3)),
                                  ("t-0.0123456789abcdef0123456789abcdef-delete", ("t", 0)),
                                  ("t-7.0123456789abcdef0123456789abcdef-future", ("t", 7)),
                                  ("notapartition", (None, None))]:
            ctx = api.context_from_path(tmp_path / dirname / "00000000000000000000.log")
            assert (ctx.topic, ctx.partition) == expected
            assert ctx.segment == 0

    def test_python_file_native_file_bytes_and_path_agree(self, decoder, log_file):
        data = log_file.read_bytes()
        expected = pa.Table.from_batches(list(decode_segment(str(log_file), decoder=decoder)))
        sources = [io.BytesIO(data), pa.BufferReader(data), pa.OSFile(str(log_file)),
                   pa.memory_map(str(log_file)), data]
        for source in sources:
            got = pa.Table.from_batches(list(decode_segment(source, decoder=decoder, read_size=97)),
                                        schema=RECORD_SCHEMA)
            assert got.drop_columns(["position"]).equals(expected.drop_columns(["position"]))
            assert got.column("position").equals(expected.column("position"))

    @pytest.mark.parametrize("window", [1, 1 << 20])
    def test_mapped_and_reused_chunk_buffers_never_leak_into_outputs(self, decoder, log_file, monkeypatch,
                                                                       window):
        # Chunks are mmap windows (paths) or one reused buffer (files): every batch is kept until
        # the end, so an output still pointing into a later-overwritten or unmapped chunk would differ.
        monkeypatch.setattr(file_source, "_MIN_WINDOW", window)
        (log_file.parent / "00000000000000009999.log").touch()   # a newer segment: this one gets mapped
        assert file_source.FileSource(str(log_file))._mappable
        data = log_file.read_bytes()
        expected = kafka_python_records(data)
        with open(log_file, "rb") as f:
            sources = [str(log_file), f, io.BytesIO(data), pa.OSFile(str(log_file))]
            for source in sources:
                for read_size in (97, 1000, len(data)):
                    kept = list(decode_segment(source, decoder=decoder, read_size=read_size))
                    assert comparable(arrow_records(kept)) == expected

    def test_the_newest_segment_is_read_not_mapped(self, log_file):
        # A live broker truncates its active segment (follower truncation); a mapped page past the new
        # end of file would fault with SIGBUS and kill the process, so the newest .log is read.
        assert not file_source.FileSource(str(log_file))._mappable
        newer = log_file.parent / "00000000000000000100.log"
        newer.write_bytes(b"")
        assert file_source.FileSource(str(log_file))._mappable and not file_source.FileSource(str(newer))._mappable
        other = log_file.parent / "not-a-segment.log"
        other.write_bytes(log_file.read_bytes())
        assert file_source.FileSource(str(other))._mappable
        expected = kafka_python_records(log_file.read_bytes())
        for path in (log_file, other):
            assert comparable(arrow_records(list(decode_segment(str(path))))) == expected

    def test_decode_bytes_equals_oracles(self):
        data = segment_bytes()
        assert comparable(arrow_records(list(decode_bytes(data)))) == kafka_python_records(data)

    def test_reads_in_chunks_not_whole_file(self, log_file):
        class CountingFile(io.FileIO):
            largest = 0

            def read(self, n=-1):
                CountingFile.largest = max(CountingFile.largest, n)
                return super().read(n)

        with CountingFile(str(log_file)) as f:
            rows = list(decode_segment(f, read_size=128))
        assert sum(b.num_rows for b in rows) == len(kafka_python_records(log_file.read_bytes()))
        biggest_batch = max(h.size for h in iter_batches(log_file))
        assert 0 < CountingFile.largest <= max(128, biggest_batch)


class TestRanges:
    def test_splits_at_batch_boundaries_cover_the_file_once(self, decoder, log_file):
        positions = [h.position for h in iter_batches(log_file)]
        size = log_file.stat().st_size
        # Every batch start lies in exactly one [start, end); a split's end may fall mid-batch.
        splits = [(0, positions[2]), (positions[2], positions[2] + 1), (positions[3], size)]
        parts = []
        for lo, hi in splits:
            parts += arrow_records(list(decode_segment(log_file, start=lo, end=hi, decoder=decoder)))
        whole = arrow_records(list(decode_segment(log_file, decoder=decoder)))
        assert [r["offset"] for r in parts] == [r["offset"] for r in whole]

    def test_batch_starting_before_end_is_read_whole(self, decoder, log_file):
        positions = [h.position for h in iter_batches(log_file)]
        rows = arrow_records(list(decode_segment(log_file, start=positions[1], end=positions[1] + 1,
                                                 decoder=decoder)))
        assert {r["position"] for r in rows} == {positions[1]}
        assert len(rows) == 5


class TestBatchHeaders:
    def test_iter_batches_equals_kafka_python_batch_fields(self, log_file):
        records = KpMemoryRecords(log_file.read_bytes())
        oracle = []
        while records.has_next():
            b = records.next_batch()
            oracle.append((b.base_offset, b.base_offset + b.last_offset_delta, b.producer_id, b.crc,
                           b.timestamp_type, b.max_timestamp, b.compression_type))
        ours = [(h.base_offset, h.last_offset, h.producer_id, h.crc, h.timestamp_type, h.max_timestamp,
                 h.attributes & 7) for h in iter_batches(log_file)]
        assert ours == oracle

    def test_batch_granularity_schema_and_legacy_nulls(self, decoder):
        data = build_legacy(sample_records(3, headers=False), magic=1, codec=1) + build_v2(sample_records(2))
        (batch,) = list(decode_segment(data, granularity="batch", decoder=decoder))
        assert batch.schema.equals(BATCH_SCHEMA)
        rows = batch.to_pylist()
        assert (rows[0]["baseOffset"], rows[0]["count"], rows[0]["producerId"]) == (None, None, None)
        assert (rows[1]["count"], rows[1]["producerId"]) == (2, -1)


class TestDecoderChoice:
    def test_env_forces_reference_without_warning(self, monkeypatch):
        monkeypatch.setenv(implementation.ENV_VAR, "reference")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            chosen, name = implementation._choose()
        assert (type(chosen), name) == (decoder_module.Decoder, "reference")

    def test_compiled_decoder_active_when_built(self, monkeypatch):
        monkeypatch.delenv(implementation.ENV_VAR, raising=False)
        try:
            from kafka_format.records.fast import FastDecoder
        except ImportError:
            pytest.skip("compiled decoder not built")
        chosen, name = implementation._choose()
        assert isinstance(chosen, FastDecoder) and name == "fast"
        assert implementation.IMPLEMENTATION in ("fast", "reference")

    def test_both_decoders_produce_identical_arrow(self):
        data = segment_bytes() + build_legacy(sample_records(3, headers=False), magic=1, base_offset=500)
        tables = [pa.Table.from_batches(list(decode_segment(data, decoder=d))) for d in DECODERS]
        assert all(t.equals(tables[0]) for t in tables)


class TestBadBytes:
    @pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
    def test_random_mutations_raise_only_kafka_format_errors(self, decoder, mode):
        base = segment_bytes() + build_legacy(sample_records(3, headers=False), magic=1, codec=1,
                                             base_offset=900)
        originals = {(r["key"], r["value"], tuple(r["headers"])) for r in kafka_python_records(base)}
        rng = random.Random(20261122)
        for _ in range(150):
            data = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            if rng.random() < 0.3:
                data = data[: rng.randrange(len(data))]
            skipped = []
            try:
                rows = arrow_records(list(decode_segment(bytes(data), decoder=decoder, mode=mode,
                                                         on_skip=skipped.append, read_size=256)))
            except KafkaFormatError:
                assert mode == "FAILFAST"
                continue
            # never invent records: each decoded record is one of the originals
            for r in rows:
                assert (r["key"], r["value"], tuple(r["headers"])) in originals
            for s in skipped:
                assert 0 <= s.position and s.length > 0 and s.position + s.length <= len(data)

    def test_context_object_used_as_given(self, decoder):
        ctx = FileContext(path="x.log", topic="t", partition=1, segment=7, log_dir="/d", broker_id=3)
        (batch,) = list(decode_segment(build_v2(sample_records(2)), context=ctx, decoder=decoder))
        row = batch.to_pylist()[0]
        assert (row["topic"], row["partition"], row["segment"], row["logDir"], row["brokerId"]) == (
            "t", 1, 7, "/d", 3)


def test_missing_extension_falls_back_with_warning(monkeypatch):
    import sys

    import kafka_format.records

    if "kafka_format.records.fast" not in sys.modules:
        pytest.skip("no compiled decoder in this build")
    monkeypatch.delenv(implementation.ENV_VAR, raising=False)
    monkeypatch.delitem(sys.modules, "kafka_format.records.fast")
    monkeypatch.delattr(kafka_format.records, "fast", raising=False)
    monkeypatch.delattr(kafka_format.records, "_fastdecode", raising=False)
    monkeypatch.setitem(sys.modules, "kafka_format.records._fastdecode", None)
    with pytest.warns(RuntimeWarning, match="reference decoder"):
        chosen, name = implementation._choose()
    assert (type(chosen), name) == (decoder_module.Decoder, "reference")
