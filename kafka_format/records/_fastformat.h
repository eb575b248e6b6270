/*
 * kafka_format.records._fastdecode: the log format's constants (framing, the v2 batch header) and the
 * per-batch meta columns that the scan (_fastscan.c), the record loop (_fastrecords.c) and the entry
 * points (_fastdecode.c) share.  The layouts and values they restate are declared in records/entry.py,
 * records/batch_v2.py and records/record_batch.py; tests/format/test_layouts.py checks these numbers
 * against them.
 */
#ifndef KF_FASTFORMAT_H
#define KF_FASTFORMAT_H

/* Framing (Records.java / DefaultRecordBatch.java). */
#define LOG_OVERHEAD 12             /* offset int64 + size int32 */
#define HEADER_SIZE_UP_TO_MAGIC 17  /* Records.HEADER_SIZE_UP_TO_MAGIC */
#define MAGIC_OFFSET 16
#define MIN_ENTRY_SIZE 14           /* LegacyRecord.RECORD_OVERHEAD_V0 */
#define V2_CRC_OFFSET 17
#define V2_ATTRIBUTES_OFFSET 21
#define V2_HEADER_SIZE 61           /* DefaultRecordBatch.RECORD_BATCH_OVERHEAD */
#define MIN_V2_RECORD_SIZE 7        /* smallest encodable record: seven one-byte fields */
#define MAGIC_V2 2                  /* RecordBatch.MAGIC_VALUE_V2 */

#define SCAN_INITIAL_ENTRIES 512

/* crc_valid values written by scan. */
#define CRC_NOT_CHECKED 2

/* scan verify_crc modes. */
#define SCAN_VERIFY_DEFER 2         /* leave non-empty uncompressed v2 batches to decode_v2 */
#define V2_COUNT_OFFSET 57
#define V2_CODEC_MASK 7

/* scan status. */
#define SCAN_END 0                  /* stopped: <= 17 bytes left or partial trailing entry */
#define SCAN_ZERO_TAIL 1            /* stopped: size < 14 and every remaining byte is zero */
#define SCAN_CORRUPT_SIZE 2         /* stopped: size < 14 with non-zero bytes */

/* decode_v2 meta columns (int64 each, one row per batch). */
enum {
    META_ROW, META_BASE_OFFSET, META_BASE_TIMESTAMP, META_MAX_TIMESTAMP,
    META_BASE_SEQUENCE, META_COUNT, META_FLAGS, META_CRC, META_NCOLS
};
#define FLAG_LOG_APPEND_TIME 1
/* The payload is the CRC region (attributes..end, uncompressed batch): verify it against
 * META_CRC, then decode the records after the rest of the header (deferred CRC). */
#define FLAG_CHECK_CRC 2
#define CRC_REGION_HEADER (V2_HEADER_SIZE - V2_ATTRIBUTES_OFFSET)
#define NO_SEQUENCE (-1)

#endif
