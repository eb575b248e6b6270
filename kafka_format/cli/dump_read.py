"""``klogs dump``'s reads: the format library's public API turned into the plain rows the dump
prints, and Kafka-style failures (the Java exception the tool would die with)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kafka_format.cli import dump_source as source
from kafka_format.cli.dump_format import (
    JAVA_CORRUPT_INDEX,
    JAVA_CORRUPT_RECORD,
    JAVA_INVALID_RECORD,
    JAVA_KAFKA,
    JAVA_LONG,
    JAVA_NO_SUCH_ELEMENT,
    KRAFT_CONTROL_LABELS,
    LEADER_CHANGE_JSON_SINCE,
    LOOKUP_READ_SIZE,
    SHARE_GROUP_STATE_DECODER,
    TRANSACTION_LOG_JSON_SINCE,
    TRANSACTION_STATE_NAMES_SINCE,
    DumpOptions,
    _java_string,
)
from kafka_format.common.crc import crc32
from kafka_format.common.errors import KafkaFormatError
from kafka_format.common.limits import INT32_MAX
from kafka_format.common.redaction import redact
from kafka_format.internal import (
    cluster_metadata,
    consumer_offsets,
    kraft_control,
    remote_log_metadata,
    share_group_state,
    transaction_log,
)
from kafka_format.log.audit import auditor as audit
from kafka_format.records import compression, control, legacy
from kafka_format.records import file_records as api
from kafka_format.records.control import CONTROL_TYPE_NAMES
from kafka_format.records.entry import ENTRY, HEADER_SIZE_UP_TO_MAGIC
from kafka_format.records.legacy import LENGTH, RECORD_OVERHEAD_V0
from kafka_format.storage import index, snapshot, txnindex

# --- Kafka-style failures --------------------------------------------------------------------------

class DumpAbort(Exception):
    """Kafka's tool would die here with ``java_class: message`` (text) / one error object (JSON)."""

    def __init__(self, java_class: str, message: str, path: str, position: int | None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message
        self.path = path
        self.position = position


def _base_offset_of(path: str) -> int:
    """``file.getName.split("\\.")(0).toLong``."""
    name = source.name(path).split(".")[0]
    value = int(name) if JAVA_LONG.match(name) else None
    if value is None or not -(2**63) <= value < 2**63:
        raise DumpAbort("java.lang.NumberFormatException", f'For input string: "{name}"', path, None)
    return value


# --- adapters over the format library --------------------------------------------------------------
# Everything below turns the library's public API into the plain rows this module prints.


def _abort_from(exc: KafkaFormatError, path: str, java_class: str = JAVA_INVALID_RECORD) -> DumpAbort:
    """The Kafka failure of a library error (a failure of the store itself is raised as DumpIOError)."""
    if source.is_io_failure(exc):
        raise source.io_error(exc) from exc
    message = _kafka_record_message(exc) if java_class == JAVA_INVALID_RECORD else None
    if message is None:
        message = exc.reason if exc.position is None else str(exc)
    return DumpAbort(java_class, message, path, exc.position)


_EXPECTED_BYTES = re.compile(r"^(-?\d+) bytes (of record|read)$")
_FOUND_INT = re.compile(r"^(-?\d+)(?: bytes remaining)?$")


def _kafka_record_message(exc: KafkaFormatError) -> str | None:
    """The message of the ``InvalidRecordException`` ``DefaultRecord.readFrom(ByteBuffer, ...)``
    throws for the record-level check the library reports (None when it is not one of them)."""
    reason = exc.reason
    expected = _EXPECTED_BYTES.match(exc.expected or "")
    found = _FOUND_INT.match(exc.found or "")
    if reason == "Invalid record size" and expected and found:
        size, got = expected.group(1), found.group(1)
        if expected.group(2) == "read":
            return (f"Invalid record size: expected to read {size} bytes in record payload,"
                    f" but instead read {got}")
        return (f"Invalid record size: expected {size} bytes in record payload,"
                f" but instead the buffer has only {got} remaining bytes.")
    if reason == "invalid number of record headers" and found:
        count = int(found.group(1))
        if count < 0:
            return f"Found invalid number of record headers {count}"
        return (f"Found invalid number of record headers. {count} is larger than the remaining size"
                " of the buffer")
    if reason == "invalid negative header key size" and found:
        return f"Invalid negative header key size {found.group(1)}"
    return None


def _iter_log(path: str, limit: int, deep: bool) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(batch row, its record rows) for every complete batch in ``[0, limit)``; records only if ``deep``.

    Where the library stops on bad bytes at position P, the batches before P are
    still yielded (Kafka prints them before dying), then the failure is raised as
    :class:`DumpAbort` with Kafka's message when Kafka's framing check is what fails.
    """
    done = 0
    try:
        for batch, rows in _iter_range(path, 0, limit, deep):
            done = batch["position"] + batch["size"]
            yield batch, rows
        return
    except KafkaFormatError as exc:
        failure = exc
    bad = failure.position if failure.position is not None else done
    if done < bad <= limit:
        try:   # the good batches between the last one printed and the failure
            for batch, rows in _iter_range(path, done, bad, deep):
                done = batch["position"] + batch["size"]
                yield batch, rows
        except KafkaFormatError:
            pass
    framing = _framing_abort(path, done, limit)
    if framing is not None:
        raise framing from failure
    if deep and done < limit:
        # Kafka prints the batch line, then dies iterating its records
        try:
            for batch, _ in _iter_range(path, done, limit, False, scan_end=done + 1):
                yield batch, []
                break
        except KafkaFormatError:
            pass
    raise _abort_from(failure, path) from failure


_Skip = tuple[int, int, str]   # (position, length, reason) of a skipped byte range


def _skipped_ranges(path: str, limit: int) -> list[_Skip]:
    """Every range of ``[0, limit)`` a PERMISSIVE record-level decode skips, in position order.

    Record level, because only there does the library treat a bad CRC (whose size field cannot
    be trusted: it resynchronises) and undecodable records as skipped ranges.
    """
    found: list[_Skip] = []

    def on_skip(r: Any) -> None:
        found.append((int(r.position), int(r.length), str(r.reason)))

    try:
        for _ in source.decode_segment(path, end=limit, mode="PERMISSIVE", on_skip=on_skip,
                                       granularity="record", include_headers=False):
            pass
    except KafkaFormatError as exc:  # PERMISSIVE should not raise; if it does, the rest is skipped
        at = max((p + n for p, n, _ in found), default=0)
        if exc.position is not None and at <= exc.position < limit:
            at = exc.position
        if at < limit:
            found.append((at, limit - at, exc.reason))
    ranges = [api.SkippedRange(path, p, n, r) for p, n, r in found]
    return [(r.position, r.length, r.reason) for r in audit.merge_skipped_ranges(ranges, limit, path)]


def _good_ranges(skipped: list[_Skip], limit: int) -> Iterator[tuple[int, int, _Skip | None]]:
    """(start, end, the skipped range that ends the good range or None) covering ``[0, limit)``."""
    at = 0
    for skip in skipped:
        yield at, skip[0], skip
        at = skip[0] + skip[1]
    yield at, limit, None


def _iter_log_range_json(path: str, start: int, end: int, limit: int,
                         deep: bool) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Whole batches starting in ``[start, end)`` that end by ``end`` (by ``limit`` for the last range)."""
    if end <= start:
        return
    bound = limit if end >= limit else end
    try:
        yield from _iter_range(path, start, bound, deep, scan_end=end)
    except KafkaFormatError:
        return  # the rest of the range is reported as skipped by the caller


def _all_zero(path: str, start: int, end: int) -> bool:
    """Whether ``[start, end)`` of ``path`` holds only zero bytes (read in bounded chunks)."""
    while start < end:
        chunk = source.read_at(path, start, min(LOOKUP_READ_SIZE, end - start))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        start += len(chunk)
    return True


def _framing_abort(path: str, position: int, limit: int) -> DumpAbort | None:
    """Kafka's ``FileLogInputStream.nextBatch`` size check at ``position`` (None when it passes)."""
    if limit - position <= HEADER_SIZE_UP_TO_MAGIC:
        return None
    _, size = ENTRY.unpack(source.read_at(path, position, ENTRY.size))
    if size >= RECORD_OVERHEAD_V0:
        return None
    return DumpAbort(
        JAVA_CORRUPT_RECORD,
        f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
        f" in file {source.shown(path)}.",
        path, position,
    )


def _iter_range(path: str, start: int, limit: int, deep: bool, *,
                scan_end: int | None = None) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Whole batches in ``[start, limit)`` (only those starting before ``scan_end`` if given)."""
    # batch rows: CRC checked and reported in crcValid; records: not checked (Kafka's deep
    # iteration decodes the records of a batch whatever its CRC)
    batches = source.decode_segment(path, start=start, end=limit if scan_end is None else scan_end,
                                    granularity="batch", verify_crc=True)
    records = (
        _record_rows(source.decode_segment(path, start=start, end=limit, granularity="record",
                                           verify_crc=False))
        if deep else iter(())
    )
    pending: dict[str, Any] | None = None
    deferred: KafkaFormatError | None = None   # a failure in a later batch's records
    for table in batches:
        for batch in table.to_pylist():
            if batch["position"] + batch["size"] > limit:
                return  # FileRecords.slice(0, maxBytes): only whole batches
            rows: list[dict[str, Any]] = []
            if deep:
                if deferred is not None:
                    raise deferred
                while True:
                    if pending is None:
                        try:
                            pending = next(records, None)
                        except KafkaFormatError as exc:
                            # looking for more records of this batch read into the next one: its
                            # failure counts only if that batch is reached (not past --max-bytes)
                            if exc.position is None or exc.position < batch["position"] + batch["size"]:
                                raise
                            deferred, records = exc, iter(())
                    if pending is None or pending["position"] != batch["position"]:
                        break
                    rows.append(pending)
                    pending = None
                if batch["magic"] < 2:
                    _add_legacy_crcs(path, batch, rows)
            yield batch, rows


def _record_rows(tables: Iterator[Any]) -> Iterator[dict[str, Any]]:
    import pyarrow as pa

    for table in tables:
        micros = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
        ms = (micros // 1000).tolist()   # floor: -1 ms is stored as -1000 us
        cols = {name: table.column(name).to_pylist() for name in (
            "key", "value", "offset", "timestampType", "headers", "sequence", "isControl", "position")}
        for i in range(table.num_rows):
            row = {name: values[i] for name, values in cols.items()}
            row["timestamp_ms"] = ms[i]
            yield row


def _add_legacy_crcs(path: str, batch: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
    """``isValid``/``crc`` of each legacy record (``AbstractLegacyRecordBatch`` as a record).

    Uncompressed: the record is the shallow message itself.  Compressed: the
    inner messages of the wrapper, read from the decompressed value (their CRCs
    are not part of the decoded columns).
    """
    if batch["compression"] == "none":
        for row in rows:
            row["legacy_crc_valid"] = bool(batch["crcValid"])
            row["legacy_crc"] = batch["crc"]
        return
    for row, (crc, valid) in zip(rows, _inner_crcs(path, batch), strict=False):
        row["legacy_crc_valid"] = valid
        row["legacy_crc"] = crc


def _inner_crcs(path: str, batch: Mapping[str, Any]) -> list[tuple[int, bool]]:
    magic = batch["magic"]
    entry = source.read_at(path, batch["position"], batch["size"])
    header = legacy.MESSAGE_V0 if magic == 0 else legacy.MESSAGE_V1
    pos = legacy.ENTRY.size + header.size
    (key_len,) = LENGTH.unpack_from(entry, pos)
    pos += LENGTH.size + max(key_len, 0)
    (value_len,) = LENGTH.unpack_from(entry, pos)
    pos += LENGTH.size
    codec = int(entry[legacy.MAGIC_OFFSET + 1]) & legacy.CODEC_MASK  # attributes follow the magic
    inner = compression.decompress(codec, entry[pos:pos + max(value_len, 0)], magic=magic,
                                   max_output=compression.DEFAULT_MAX_DECOMPRESSED,
                                   path=path, position=batch["position"])
    out = []
    at = 0
    while len(inner) - at >= legacy.ENTRY.size:
        _, size = legacy.ENTRY.unpack_from(inner, at)
        end = at + legacy.ENTRY.size + size
        if size < RECORD_OVERHEAD_V0 or end > len(inner):
            break
        inner_magic = inner[at + legacy.MAGIC_OFFSET]
        crc, _, _ = legacy.read_message_header(inner, at, inner_magic)
        out.append((crc, crc32(inner[at + legacy.MAGIC_OFFSET:end]) == crc))
        at = end
    return out


def _control_suffix(path: str, batch: Mapping[str, Any], record: Mapping[str, Any], opts: DumpOptions) -> str:
    """The control-record part of a record line (endTxnMarker / KRaft JSON / controlType)."""
    key, value = record["key"], record["value"]
    try:
        control.parse_control_key(key)   # ControlRecordType.parseTypeId checks
        type_id = int(control.CONTROL_KEY.unpack_from(key)[1])
        if type_id in (0, 1):
            marker = control.parse_end_txn_marker(key, value)
            return (f" endTxnMarker: {CONTROL_TYPE_NAMES[type_id]}"
                    f" coordinatorEpoch: {marker.coordinator_epoch}")
        if type_id in KRAFT_CONTROL_LABELS:
            return str(kraft_control.format_kraft_control(type_id, value or b"",
                                                  leader_change_json=opts.since(*LEADER_CHANGE_JSON_SINCE)))
        return f" controlType: {CONTROL_TYPE_NAMES.get(type_id, 'UNKNOWN')}({type_id})"
    except KafkaFormatError as exc:
        raise _abort_from(exc, path) from exc


_Parser = Callable[[Mapping[str, Any]], tuple[str | None, str | None]]


def _message_parser(decoder: str | None, opts: DumpOptions) -> _Parser:
    """The ``MessageParser`` for ``decoder``: (key text or None, payload text or None) per record.

    Kafka 4.1+ decodes both coordinator topics with ``CoordinatorRecordMessageParser``: its
    missing-key message says "using the specified decoder", and the transaction log prints JSON.
    """
    coordinator_json = opts.since(*TRANSACTION_LOG_JSON_SINCE)
    if decoder is None:
        def parse_plain(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            key, value = record["key"], record["value"]
            return (None if key is None else _java_string(key),
                    None if value is None else _java_string(value))
        return parse_plain
    if decoder == "offsets":
        def parse_offsets(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            if record["key"] is None and coordinator_json:
                raise KafkaFormatError(f"Failed to decode message at offset {record['offset']} using the "
                                       "specified decoder (message had a missing key)")
            return consumer_offsets.format_offsets_record(
                record["key"], record["value"], record["offset"])
        return parse_offsets
    if decoder == "transaction-log":
        def parse_txn(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            if coordinator_json:
                return transaction_log.format_transaction_log_json(
                    record["key"], record["value"], record["offset"],
                    state_names=opts.since(*TRANSACTION_STATE_NAMES_SINCE))
            return transaction_log.format_transaction_log_record(
                record["key"], record["value"])
        return parse_txn
    if decoder == SHARE_GROUP_STATE_DECODER:
        def parse_share(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            if record["key"] is None:                  # Kafka's tool dies here
                raise KafkaFormatError(f"Failed to decode message at offset {record['offset']} using the "
                                       "specified decoder (message had a missing key)")
            return share_group_state.format_share_group_state_record(
                record["key"], record["value"], record["offset"])
        return parse_share
    if decoder == "remote-log-metadata":
        def parse_remote(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
            # RemoteMetadataLogMessageParser: no key; the value's toString() or an error text
            return None, remote_log_metadata.format_remote_log_metadata(
                record["value"], record["offset"], opts.release, java_tool=opts.java_tool)
        return parse_remote
    def parse_metadata(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
        # ClusterMetadataLogMessageParser: no key; the value as {"type","version","data"} or an error text
        return None, cluster_metadata.format_metadata_record(record["value"], record["offset"], opts.release)
    return parse_metadata


def _decoded_json(parser: _Parser, record: Mapping[str, Any], opts: DumpOptions) -> dict[str, Any]:
    """What a decoder adds to a ``--json`` record object: ``payload`` (and ``keyText``) as the text
    mode prints them, ``decodeError`` where Kafka's parser throws (the text dump dies there), and for
    ``--remote-log-metadata-decoder`` the value as a ``remoteLogMetadata`` object (null: unreadable)."""
    out: dict[str, Any] = {}
    try:
        key, payload = parser(record)
    except KafkaFormatError as exc:
        return {"payload": None, "decodeError": exc.reason}
    if key is not None:
        out["keyText"] = key
    out["payload"] = payload
    if opts.decoder == "remote-log-metadata":
        value = record["value"]
        try:
            decoded = None if value is None else remote_log_metadata.decode_remote_log_metadata(
                value, release=opts.release)
        except KafkaFormatError:
            decoded = None
        out["remoteLogMetadata"] = None if decoded is None else remote_log_metadata.as_json_object(decoded)
    return out


def _read_offset_index(path: str, base: int) -> Any:
    """The parsed ``.index`` (every full slot in ``raw``, as ``OffsetIndex.entry(i)`` sees them)."""
    try:
        return index.read_offset_index(path, base)
    except KafkaFormatError as exc:
        raise _abort_from(exc, path, JAVA_CORRUPT_INDEX) from exc


def _read_time_index(path: str, base: int) -> Any:
    """The parsed ``.timeindex``."""
    try:
        return index.read_time_index(path, base)
    except KafkaFormatError as exc:
        raise _abort_from(exc, path, JAVA_CORRUPT_INDEX) from exc


def _raw_slots(parsed: Any, first: str, second: str, base: int, offset_first: bool) -> list[tuple[int, int]]:
    """Every full slot as absolute pairs: (offset, position) or (timestamp, offset)."""
    a = parsed.raw[first].astype("int64").tolist()
    b = parsed.raw[second].astype("int64").tolist()
    if offset_first:
        return [(base + x, y) for x, y in zip(a, b, strict=True)]
    return [(x, base + y) for x, y in zip(a, b, strict=True)]


def _sanity(parsed: Any, path: str) -> None:
    """Run the broker's ``sanityCheck``; Kafka's CorruptIndexException → abort."""
    result = parsed.sanity_check()
    if not result.ok:
        raise DumpAbort(JAVA_CORRUPT_INDEX, str(result.message), path, None)


def _index_lookup(parsed: Any, target: int) -> int:
    """``OffsetIndex.lookup(target).position``."""
    return int(parsed.lookup(target).position)


def _first_batch_last_offset(log_path: str, position: int, max_message_size: int, log_size: int,
                             index_path: str) -> int:
    """``fileRecords.slice(position, maxMessageSize).batches.iterator.next().lastOffset``."""
    if position > log_size:
        raise DumpAbort("java.lang.IllegalArgumentException",
                     f"Slice from position {position} exceeds end position of FileRecords(size={log_size},"
                     f" file={source.shown(log_path)}, start=0, end={INT32_MAX})", index_path, None)
    end = min(log_size, position + max_message_size)
    for batch, _ in _iter_log_range(log_path, position, end):
        return int(batch["lastOffset"])
    # Kafka: slice.batches.iterator.next() on an empty slice (batch larger than --max-message-size)
    raise DumpAbort(JAVA_NO_SUCH_ELEMENT, "", index_path, position)


def _iter_log_range(path: str, start: int, end: int) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    try:
        for table in source.decode_segment(path, start=start, end=end, granularity="batch",
                                           read_size=LOOKUP_READ_SIZE):
            for batch in table.to_pylist():
                if batch["position"] + batch["size"] > end:
                    return
                yield batch, []
    except KafkaFormatError as exc:
        raise _abort_from(exc, path) from exc


def _max_timestamp_of_batch_at(log_path: str, position: int, target: int,
                               log_size: int) -> tuple[int | None, int]:
    """First batch from ``position`` with lastOffset >= target: (its lastOffset, max record timestamp)."""
    try:
        for table in source.decode_segment(log_path, start=position, end=log_size, granularity="batch",
                                           read_size=LOOKUP_READ_SIZE):
            for batch in table.to_pylist():
                if batch["position"] + batch["size"] > log_size:
                    return None, -1
                if batch["lastOffset"] < target:
                    continue
                if batch["lastOffset"] != target:
                    return batch["lastOffset"], -1
                max_ts = -1
                end = batch["position"] + batch["size"]
                for rec in _record_rows(source.decode_segment(log_path, start=batch["position"], end=end,
                                                              granularity="record", verify_crc=False)):
                    if rec["position"] == batch["position"]:
                        max_ts = max(max_ts, rec["timestamp_ms"])
                return batch["lastOffset"], max_ts
    except KafkaFormatError as exc:
        raise _abort_from(exc, log_path) from exc
    return None, -1


def _read_producer_snapshot(path: str) -> list[Any]:
    """Entries of a producer ``.snapshot`` (``ProducerStateManager.readSnapshot``)."""
    return list(snapshot.read_producer_snapshot(path).entries)


def _snapshot_json(path: str, e: Any) -> dict[str, Any]:
    has_batch = e.has_batch_metadata
    return {
        "type": "producerSnapshotEntry", "file": redact(path), "producerId": e.producer_id,
        "producerEpoch": e.epoch, "coordinatorEpoch": e.coordinator_epoch,
        "currentTxnFirstOffset": e.current_txn_first_offset if e.has_open_txn else None,
        "lastTimestamp": e.timestamp,
        "firstSequence": e.first_sequence if has_batch else None,
        "lastSequence": e.last_sequence if has_batch else None,
        "lastOffset": e.last_offset if has_batch else None,
        "offsetDelta": e.offset_delta if has_batch else None,
    }


def _read_txn_index(path: str) -> list[Any]:
    """Entries of a ``.txnindex`` (``TransactionIndex.allAbortedTxns``)."""
    try:
        return list(txnindex.read_transaction_index(path).entries)
    except KafkaFormatError as exc:
        if source.is_io_failure(exc):
            raise source.io_error(exc) from exc
        # TransactionIndex.iterable names the file: "... in transaction index <abs path>, current ..."
        message = exc.reason.replace(" in transaction index,",
                                     f" in transaction index {source.absolute(path)},")
        raise DumpAbort(JAVA_KAFKA, message, path, exc.position) from exc
