"""The objects of Aiven's ``RemoteStorageManager`` (``tiered-storage-for-apache-kafka``), read offline.

Aiven's plugin (``io.aiven.kafka.tieredstorage.RemoteStorageManager``, Apache-2.0, not on Maven
Central) uploads each remote segment as three objects under one key
(``ObjectKeyFactory.mainPath``)::

    <key.prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segment uuid>.log
                                                                         ....indexes
                                                                         ....rsm-manifest

* ``.log``: the segment cut into chunks of ``chunk.size`` original bytes, each transformed on its
  own (``TransformChunkEnumeration``): zstd-compressed into one frame with its content size when
  the manifest says ``compression`` (``CompressionChunkEnumeration``), then AES-256-GCM-encrypted
  when it has ``encryption`` (``EncryptionChunkEnumeration``: a fresh 12-byte IV, then the
  ciphertext and its 16-byte tag, the segment's AAD authenticated).  Untransformed, the object is
  the segment byte for byte.
* ``.indexes``: the offset, time, producer-snapshot, leader-epoch and (when there is one)
  transaction index one after another, each encrypted whole like a chunk (never compressed);
  the manifest's ``segmentIndexes`` give each one's position and (transformed) size.
* ``.rsm-manifest``: JSON (``SegmentManifestV1``, ``"version":"1"``): ``chunkIndex``
  (``fixed``: ``originalChunkSize``, ``originalFileSize``, ``transformedChunkSize``,
  ``finalTransformedChunkSize``; ``variable``: ``transformedChunks``, base64 of a zstd frame of
  ``ChunkSizesBinaryCodec``'s encoding), ``segmentIndexes``, ``compression``, ``encryption``
  (``dataKey`` = ``<key id>:<base64 of the AES key RSA-encrypted with the key ring's public key
  of that id>``, OAEP with SHA3-512 and MGF1-SHA3-512 as BouncyCastle's
  ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` does; ``aad`` base64), and the segment's
  ``remoteLogSegmentMetadata``.

Nothing here trusts a length it reads: a manifest is at most :data:`MAX_MANIFEST_BYTES`, a chunk
or an index at most :data:`MAX_CHUNK_BYTES` before and after its transforms, every range must lie
inside the object the store lists, and a segment is read one chunk at a time
(:class:`ChunkedSegmentFile`).  Every failure is a :class:`~kafka_format.common.errors.LogDirError`
naming the object, the byte and what was expected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import struct
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kafka_format.common.errors import LogDirError

__all__ = [
    "AAD_SIZE_MAX",
    "CHUNK_INVALID",
    "INDEXES_SUFFIX",
    "INDEX_KINDS",
    "IV_SIZE",
    "KEYS_ENV",
    "KEY_INVALID",
    "LOG_SUFFIX",
    "MANIFEST_INVALID",
    "MANIFEST_SUFFIX",
    "MAX_CHUNK_BYTES",
    "MAX_MANIFEST_BYTES",
    "TAG_SIZE",
    "Chunk",
    "ChunkIndex",
    "ChunkedSegmentFile",
    "EncryptionMetadata",
    "KeyRing",
    "SegmentIndexRange",
    "SegmentManifest",
    "current_key_ring",
    "decode_chunk_sizes",
    "detransform_chunk",
    "forget_keys",
    "parse_key_specs",
    "parse_manifest",
    "use_keys",
]

#: ``ObjectKeyFactory.Suffix`` values (after the main path and a dot)
LOG_SUFFIX = ".log"
INDEXES_SUFFIX = ".indexes"
MANIFEST_SUFFIX = ".rsm-manifest"
#: ``SegmentEncryptionMetadataV1.IV_SIZE``: the IV in front of every encrypted chunk
IV_SIZE = 12
#: ``AesEncryptionProvider.GCM_TAG_LENGTH`` (128 bits): the tag behind every encrypted chunk
TAG_SIZE = 16
#: the largest AAD accepted (Aiven's is one 32-byte AES key's encoding)
AAD_SIZE_MAX = 1024
#: the largest manifest read (Aiven's are ~1 KB, a variable index of 10^6 chunks a few MB)
MAX_MANIFEST_BYTES = 16 << 20
#: the largest chunk or index held in memory, before or after its transforms
MAX_CHUNK_BYTES = 256 << 20
#: ``TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE``: the chunk-size table's cap
MAX_CHUNK_TABLE_BYTES = 10 << 20
#: environment variable carrying :func:`use_keys`'s specs to worker processes (JSON list)
KEYS_ENV = "KLOGS_REMOTE_STORAGE_KEYS"
MANIFEST_INVALID = "AIVEN_MANIFEST_INVALID"
CHUNK_INVALID = "AIVEN_CHUNK_INVALID"
KEY_INVALID = "AIVEN_KEY_INVALID"
#: ``RemoteStorageManager.IndexType`` names and the manifest's keys, in upload order
INDEX_KINDS = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
_OAEP_HASH = hashlib.sha3_512
_OAEP_HASH_SIZE = 64
_INT = struct.Struct(">i")


# ---------------------------------------------------------------------------------------------
# the manifest


@dataclass(frozen=True)
class Chunk:
    """One chunk: its place in the original segment and in the transformed object."""

    index: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class ChunkIndex:
    """``FixedSizeChunkIndex`` (``transformed`` empty) or ``VariableSizeChunkIndex`` (``transformed``:
    every chunk's transformed size): where each original chunk lies in the ``.log`` object."""

    original_chunk_size: int
    original_file_size: int
    kind: str = "fixed"
    transformed_chunk_size: int = 0
    final_transformed_chunk_size: int = 0
    transformed: tuple[int, ...] = ()
    _starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def variable(self) -> bool:
        return self.kind == "variable"

    @property
    def chunk_count(self) -> int:
        """``FixedSizeChunkIndex.chunkCount``: ceil(original size / chunk size)."""
        return -(-self.original_file_size // self.original_chunk_size)

    def chunk(self, i: int) -> Chunk:
        """Chunk ``i`` (``AbstractChunkIndex.materializeChunks``: the last one holds the rest)."""
        n = self.chunk_count
        if not 0 <= i < n:
            raise IndexError(f"chunk {i} of {n}")
        last = i == n - 1
        original = self.original_file_size - i * self.original_chunk_size if last else self.original_chunk_size
        if self.variable:
            size, position = self.transformed[i], self._starts[i]
        else:
            size = self.final_transformed_chunk_size if last else self.transformed_chunk_size
            position = i * self.transformed_chunk_size
        return Chunk(i, i * self.original_chunk_size, original, position, size)

    def chunk_at(self, original_position: int) -> Chunk:
        """The chunk holding byte ``original_position`` of the segment (``findChunkForOriginalOffset``)."""
        return self.chunk(original_position // self.original_chunk_size)

    @property
    def transformed_size(self) -> int:
        """The ``.log`` object's size this index describes."""
        n = self.chunk_count
        if n == 0:
            return 0
        if self.variable:
            return self._starts[-1] + self.transformed[-1]
        return (n - 1) * self.transformed_chunk_size + self.final_transformed_chunk_size


@dataclass(frozen=True)
class SegmentIndexRange:
    """``SegmentIndexV1``: one index's bytes in the ``.indexes`` object (transformed size)."""

    position: int
    size: int


@dataclass(frozen=True)
class EncryptionMetadata:
    """``SegmentEncryptionMetadataV1``: the data key as uploaded (RSA-encrypted under ``key_id``)
    and the AAD every chunk authenticates."""

    key_id: str
    encrypted_data_key: bytes
    aad: bytes


@dataclass(frozen=True)
class SegmentManifest:
    """``SegmentManifestV1``; ``metadata`` the ``remoteLogSegmentMetadata`` it records (as JSON)."""

    chunk_index: ChunkIndex
    indexes: Mapping[str, SegmentIndexRange | None]
    compression: bool
    encryption: EncryptionMetadata | None
    metadata: Mapping[str, Any] | None = None

    @property
    def transformed(self) -> bool:
        """Whether the ``.log`` object differs from the segment (compressed or encrypted)."""
        return self.compression or self.encryption is not None

    def index_size(self, kind: str) -> int | None:
        """The original size of index ``kind`` (None when the segment has none: a transaction index)."""
        r = self.indexes.get(kind)
        if r is None:
            return None
        if self.encryption is not None and r.size > 0:
            return r.size - IV_SIZE - TAG_SIZE
        return r.size

    @property
    def indexes_size(self) -> int:
        """The ``.indexes`` object's size the manifest describes."""
        return max((r.position + r.size for r in self.indexes.values() if r is not None), default=0)

    def segment_field(self, name: str) -> Any:
        """A field of the recorded segment metadata (None when absent)."""
        return None if self.metadata is None else self.metadata.get(name)


def _bad(location: str, message: str, expected: str, found: str, *, position: int | None = None,
         code: str = MANIFEST_INVALID) -> LogDirError:
    return LogDirError(message, path=location, position=position, expected=expected, found=found, code=code)


def _int_field(obj: Mapping[str, Any], name: str, location: str, *, where: str, minimum: int = 0,
               maximum: int = (1 << 31) - 1) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise _bad(location, f"manifest field {where}.{name} is invalid",
                   f"an integer in [{minimum}, {maximum}]", repr(value)[:80])
    return value


def _object(value: Any, location: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _bad(location, f"manifest field {where} is invalid", "a JSON object", repr(value)[:80])
    return value


def _b64(text: Any, location: str, where: str) -> bytes:
    if not isinstance(text, str):
        raise _bad(location, f"manifest field {where} is invalid", "a base64 string", repr(text)[:80])
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(location, f"manifest field {where} is invalid", "base64", repr(text[:40])) from None


def decode_chunk_sizes(data: bytes, location: str = "<manifest>") -> tuple[int, ...]:
    """``ChunkSizesBinaryCodec.decode``: count, then (for two or more) a base, a byte width and
    count-1 values of that width above the base, then the last value in full (all big-endian)."""
    def short(expected: str) -> LogDirError:
        return _bad(location, "chunkIndex.transformedChunks is malformed", expected, f"{len(data)} bytes")

    if len(data) < 4:
        raise short("a 4-byte count")
    (count,) = _INT.unpack_from(data, 0)
    if count < 0:
        raise _bad(location, "chunkIndex.transformedChunks is malformed", "a non-negative count", str(count))
    if count == 0:
        return ()
    if count == 1:
        if len(data) != 8:
            raise short("8 bytes for one chunk")
        return (_INT.unpack_from(data, 4)[0],)
    if len(data) < 9:
        raise short("a base and a width")
    base, width = _INT.unpack_from(data, 4)[0], data[8]
    if not 1 <= width <= 4:
        raise _bad(location, "chunkIndex.transformedChunks is malformed", "a value width of 1 to 4 bytes", str(width))
    need = 9 + (count - 1) * width + 4
    if len(data) != need:
        raise short(f"{need} bytes for {count} chunks of width {width}")
    body = data[9:9 + (count - 1) * width]
    out = [int.from_bytes(body[i:i + width], "big") + base for i in range(0, len(body), width)]
    out.append(_INT.unpack_from(data, need - 4)[0])
    return tuple(out)


def _zstd_frame(data: bytes, limit: int, location: str, what: str, *, position: int | None = None,
                code: str = MANIFEST_INVALID, expected_size: int | None = None) -> bytes:
    """One zstd frame with its content size (as Aiven writes them), at most ``limit`` bytes out."""
    import zstandard

    try:
        params = zstandard.get_frame_parameters(data)
    except zstandard.ZstdError as exc:
        raise _bad(location, f"{what} is not a zstd frame", "a zstd frame with its content size", str(exc),
                   position=position, code=code) from None
    size = params.content_size
    if size == zstandard.CONTENTSIZE_UNKNOWN or size > limit or (expected_size is not None and size != expected_size):
        want = f"{expected_size} bytes" if expected_size is not None else f"at most {limit} bytes"
        raise _bad(location, f"{what} declares a wrong decompressed size", f"a frame of {want}",
                   "no content size" if size == zstandard.CONTENTSIZE_UNKNOWN else f"{size} bytes",
                   position=position, code=code)
    try:
        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise _bad(location, f"{what} does not decompress", "a valid zstd frame", str(exc), position=position,
                   code=code) from None
    if len(out) != size:
        raise _bad(location, f"{what} decompresses to a wrong size", f"{size} bytes", f"{len(out)} bytes",
                   position=position, code=code)
    return out


def _chunk_index(obj: Mapping[str, Any], location: str) -> ChunkIndex:
    kind = obj.get("type")
    chunk = _int_field(obj, "originalChunkSize", location, where="chunkIndex", minimum=1)
    total = _int_field(obj, "originalFileSize", location, where="chunkIndex")
    if chunk > MAX_CHUNK_BYTES and total > MAX_CHUNK_BYTES:
        raise _bad(location, "chunkIndex.originalChunkSize is too large to read", f"at most {MAX_CHUNK_BYTES}",
                   str(chunk))
    count = -(-total // chunk)
    if kind == "fixed":
        size = _int_field(obj, "transformedChunkSize", location, where="chunkIndex")
        final = _int_field(obj, "finalTransformedChunkSize", location, where="chunkIndex")
        return ChunkIndex(chunk, total, "fixed", size, final)
    if kind == "variable":
        raw = _b64(obj.get("transformedChunks"), location, "chunkIndex.transformedChunks")
        sizes = decode_chunk_sizes(_zstd_frame(raw, MAX_CHUNK_TABLE_BYTES, location, "chunkIndex.transformedChunks"),
                                   location)
        if len(sizes) != count:
            raise _bad(location, "chunkIndex.transformedChunks does not fit the file",
                       f"{count} chunk sizes ({total} bytes in chunks of {chunk})", f"{len(sizes)}")
        if any(s < 0 for s in sizes):
            raise _bad(location, "chunkIndex.transformedChunks is malformed", "non-negative sizes", str(min(sizes)))
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += s
        return ChunkIndex(chunk, total, "variable", transformed=sizes, _starts=tuple(starts))
    raise _bad(location, "chunkIndex.type is unknown", "fixed or variable", repr(kind)[:40])


def parse_manifest(data: bytes, location: str) -> SegmentManifest:
    """A ``.rsm-manifest`` object's :class:`SegmentManifest` (``location`` names it in errors)."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise _bad(location, "manifest too large", f"at most {MAX_MANIFEST_BYTES} bytes", f"{len(data)} bytes")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(location, "manifest is not JSON", "a SegmentManifestV1 JSON object", str(exc)[:120]) from None
    doc = _object(doc, location, "(root)")
    if doc.get("version") != "1":
        raise _bad(location, "manifest version is unknown", 'version "1" (SegmentManifestV1)',
                   repr(doc.get("version"))[:40])
    index = _chunk_index(_object(doc.get("chunkIndex"), location, "chunkIndex"), location)
    segs = _object(doc.get("segmentIndexes"), location, "segmentIndexes")
    indexes: dict[str, SegmentIndexRange | None] = {}
    for kind in INDEX_KINDS:
        entry = segs.get(kind)
        if entry is None and kind == "transaction":
            indexes[kind] = None
            continue
        entry = _object(entry, location, f"segmentIndexes.{kind}")
        indexes[kind] = SegmentIndexRange(
            _int_field(entry, "position", location, where=f"segmentIndexes.{kind}"),
            _int_field(entry, "size", location, where=f"segmentIndexes.{kind}", maximum=MAX_CHUNK_BYTES))
    compression = doc.get("compression")
    if not isinstance(compression, bool):
        raise _bad(location, "manifest field compression is invalid", "true or false", repr(compression)[:40])
    encryption = None
    enc = doc.get("encryption")
    if enc is not None:
        enc = _object(enc, location, "encryption")
        key = enc.get("dataKey")
        if not isinstance(key, str) or key.count(":") != 1 or not key.split(":")[0]:
            raise _bad(location, "manifest field encryption.dataKey is invalid", "<key id>:<base64>",
                       repr(key)[:60])
        key_id, _, b64 = key.partition(":")
        aad = _b64(enc.get("aad"), location, "encryption.aad")
        if len(aad) > AAD_SIZE_MAX:
            raise _bad(location, "manifest field encryption.aad is too long", f"at most {AAD_SIZE_MAX} bytes",
                       f"{len(aad)} bytes")
        encryption = EncryptionMetadata(key_id, _b64(b64, location, "encryption.dataKey"), aad)
        for kind, r in indexes.items():
            if r is not None and 0 < r.size < IV_SIZE + TAG_SIZE:
                raise _bad(location, f"segmentIndexes.{kind} is too small for an encrypted index",
                           f"0 or at least {IV_SIZE + TAG_SIZE} bytes", f"{r.size} bytes")
    elif not compression and not index.variable:
        if index.transformed_chunk_size != index.original_chunk_size and index.chunk_count > 1:
            raise _bad(location, "chunkIndex does not describe an untransformed segment",
                       f"transformedChunkSize {index.original_chunk_size}", str(index.transformed_chunk_size))
    meta = doc.get("remoteLogSegmentMetadata")
    return SegmentManifest(index, indexes, compression, encryption, meta if isinstance(meta, dict) else None)


# ---------------------------------------------------------------------------------------------
# keys


def parse_key_specs(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``remoteStorageKey``'s value as specs: comma-separated ``[<key id>=]<PEM path>``."""
    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    return tuple(s.strip() for s in items if s.strip())


@dataclass
class KeyRing:
    """Private RSA keys by key id (the ids of Aiven's ``encryption.key.pairs``); keys given
    without an id are tried for any id, and several keys given for one id are each tried."""

    by_id: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    anonymous: list[tuple[str, Any]] = field(default_factory=list)
    _opened: dict[tuple[str, bytes], bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def from_specs(cls, specs: Iterable[str]) -> KeyRing:
        """Keys from ``[<key id>=]<PEM path>`` specs (PKCS#8 or PKCS#1 PEM, unencrypted)."""
        ring = cls()
        ring.add(specs)
        return ring

    def add(self, specs: Iterable[str]) -> None:
        """Load the keys of ``specs`` into this ring beside the keys it has (all or, when one
        cannot be read, none)."""
        loaded = []
        for spec in specs:
            key_id, sep, path = spec.partition("=")
            if not sep:
                key_id, path = "", spec
            loaded.append((key_id.strip(), (path.strip(), _load_private_key(path.strip()))))
        for key_id, source in loaded:
            if key_id:
                self.by_id.setdefault(key_id, []).append(source)
            else:
                self.anonymous.append(source)

    def __bool__(self) -> bool:
        return bool(self.by_id or self.anonymous)

    def data_key(self, enc: EncryptionMetadata, location: str) -> bytes:
        """The AES data key of a segment, decrypted with the key of its id (or a key given without
        an id); a :class:`LogDirError` naming the manifest when no key given opens it."""
        hit = self._opened.get((enc.key_id, enc.encrypted_data_key))
        if hit is not None:
            return hit
        candidates = [*self.by_id.get(enc.key_id, ()), *self.anonymous]
        if not candidates:
            given = ", ".join(sorted(self.by_id)) or "none"
            raise LogDirError("the segment is encrypted with a key not given", path=location,
                              expected=f"the private key of id {enc.key_id!r} (remoteStorageKey "
                                       f"{enc.key_id}=<PEM path>; klogs: --remote-storage-key)",
                              found=f"key ids given: {given}", code=KEY_INVALID)
        for _source, key in candidates:
            out = _oaep_sha3_decrypt(key, enc.encrypted_data_key)
            if out is not None and len(out) in (16, 24, 32):
                self._opened[(enc.key_id, enc.encrypted_data_key)] = out
                return out
        tried = ", ".join(s for s, _ in candidates)
        raise LogDirError("the data key does not decrypt with the key given (a wrong key for its id)", path=location,
                          expected=f"the private key of the key pair {enc.key_id!r} the segment was uploaded with",
                          found=f"OAEP (SHA3-512) decoding fails with {tried}", code=KEY_INVALID)


def _load_private_key(path: str) -> Any:
    crypto = _crypto()
    try:
        with open(path, "rb") as f:
            pem = f.read(1 << 20)
    except OSError as exc:
        raise LogDirError(f"cannot read the private key: {exc}", path=path, code=KEY_INVALID) from None
    try:
        key = crypto.serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise LogDirError("not an unencrypted PEM private key", path=path,
                          expected="a PEM RSA private key (PKCS#8 or PKCS#1)", found=str(exc)[:120],
                          code=KEY_INVALID) from None
    if not isinstance(key, crypto.rsa.RSAPrivateKey):
        raise LogDirError("not an RSA private key", path=path, expected="an RSA key (Aiven's key pairs are RSA)",
                          found=type(key).__name__, code=KEY_INVALID)
    return key


def _mgf1(seed: bytes, length: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += _OAEP_HASH(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _oaep_sha3_decrypt(key: Any, ciphertext: bytes) -> bytes | None:
    """RSAES-OAEP decryption (RFC 8017 7.1.2) with SHA3-512 and MGF1-SHA3-512, an empty label:
    what BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding`` writes (OpenSSL's OAEP through
    ``cryptography`` refuses SHA3).  None when the decoding fails (a wrong key)."""
    numbers = key.private_numbers()
    n = numbers.public_numbers.n
    k = (n.bit_length() + 7) // 8
    h = _OAEP_HASH_SIZE
    if len(ciphertext) != k or k < 2 * h + 2:
        return None
    c = int.from_bytes(ciphertext, "big")
    if c >= n:
        return None
    # CRT: m = c^d mod n from the two primes
    m1 = pow(c, numbers.dmp1, numbers.p)
    m2 = pow(c, numbers.dmq1, numbers.q)
    m = m2 + numbers.q * ((numbers.iqmp * (m1 - m2)) % numbers.p)
    em = m.to_bytes(k, "big")
    masked_seed, masked_db = em[1:1 + h], em[1 + h:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1(masked_db, h), strict=True))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1(seed, k - h - 1), strict=True))
    ok = em[0] == 0 and hmac.compare_digest(db[:h], _OAEP_HASH(b"").digest())
    rest = db[h:]
    one = next((i for i, b in enumerate(rest) if b != 0), len(rest))
    if not ok or one == len(rest) or rest[one] != 1:
        return None
    return rest[one + 1:]


def _crypto() -> Any:
    """``cryptography``'s modules (an optional dependency: ``pip install 'kafka-log-analytics[tiered]'``)."""
    try:
        from cryptography import exceptions
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.hazmat.primitives.ciphers import aead
    except ImportError:
        raise LogDirError("reading encrypted Aiven segments needs the cryptography package",
                          expected="cryptography installed (pip install 'kafka-log-analytics[tiered]')",
                          found="no module cryptography", code=KEY_INVALID) from None
    return SimpleNamespace(serialization=serialization, rsa=rsa, aead=aead, exceptions=exceptions)


_KEYS_LOCK = threading.Lock()
_KEY_SPECS: list[str] = []           # every spec given to this process, in order (what KEYS_ENV carries)
_KEY_RING = KeyRing()


def use_keys(specs: Sequence[str] | None) -> None:
    """Add ``specs`` (``[<key id>=]<PEM path>``) to the private keys this process decrypts Aiven
    segments with, and hand them to worker processes started from it (:data:`KEYS_ENV`).  Keys
    accumulate: a DataFrame given one key pair never loses it to another given later (both may be
    read at once, from two threads); None or empty changes nothing."""
    if not specs:
        return
    with _KEYS_LOCK:
        new = [s for s in dict.fromkeys(specs) if s not in _KEY_SPECS]
        if not new:
            return
        _KEY_RING.add(new)                 # a key that cannot be read raises before anything changes
        _KEY_SPECS.extend(new)
        os.environ[KEYS_ENV] = json.dumps(_KEY_SPECS)


def forget_keys() -> None:
    """Drop every key :func:`use_keys` gave (this process and the workers it starts from now on)."""
    global _KEY_RING
    with _KEYS_LOCK:
        _KEY_SPECS.clear()
        _KEY_RING = KeyRing()
        os.environ.pop(KEYS_ENV, None)


def current_key_ring() -> KeyRing:
    """The keys of :func:`use_keys` (in a worker process: of :data:`KEYS_ENV` too); empty when none."""
    raw = os.environ.get(KEYS_ENV)
    if raw:
        try:
            specs = json.loads(raw)
        except ValueError:
            specs = parse_key_specs(raw)
        use_keys([str(s) for s in specs])
    return _KEY_RING


# ---------------------------------------------------------------------------------------------
# chunks


def detransform_chunk(raw: bytes, *, compression: bool, data_key: bytes | None, aad: bytes, original_size: int,
                      location: str, position: int, what: str = "chunk") -> bytes:
    """A chunk (or an index) as uploaded back to its original bytes: decrypted (IV, ciphertext,
    tag) when ``data_key`` is given, then decompressed when ``compression``; its original size
    must be ``original_size``.  ``location``/``position``: the object and the chunk's first byte."""
    data = raw
    if data_key is not None:
        if len(data) < IV_SIZE + TAG_SIZE:
            raise _bad(location, f"encrypted {what} too short", f"at least {IV_SIZE + TAG_SIZE} bytes (IV and tag)",
                       f"{len(data)} bytes", position=position, code=CHUNK_INVALID)
        crypto = _crypto()
        try:
            data = crypto.aead.AESGCM(data_key).decrypt(data[:IV_SIZE], data[IV_SIZE:], aad)
        except crypto.exceptions.InvalidTag:
            raise _bad(location, f"{what} fails AES-GCM authentication (bad tag)",
                       "a chunk encrypted with the segment's data key and AAD",
                       f"{len(raw)} bytes whose GCM tag does not match (damaged, or another segment's)",
                       position=position, code=CHUNK_INVALID) from None
    if compression:
        return _zstd_frame(data, MAX_CHUNK_BYTES, location, f"{what} (zstd)", position=position, code=CHUNK_INVALID,
                           expected_size=original_size)
    if len(data) != original_size:
        raise _bad(location, f"{what} has a wrong size", f"{original_size} bytes (manifest)", f"{len(data)} bytes",
                   position=position, code=CHUNK_INVALID)
    return data


ReadRange = Callable[[int, int], bytes]


class ChunkedSegmentFile:
    """The original segment of an Aiven ``.log`` object as a read-only random-access file
    (``read``/``seek``/``tell``/``read_at``/``size``), fetched one chunk at a time: each read takes
    the chunks it overlaps (``fetchLogSegment``'s ``chunksForRange``), one ranged request each, and
    keeps the last one.  ``read_range(position, length)`` reads the object; ``object_size`` is
    what the store lists (a chunk past it is a truncated object)."""

    def __init__(self, manifest: SegmentManifest, read_range: ReadRange, *, location: str, object_size: int | None,
                 data_key: bytes | None) -> None:
        self.manifest = manifest
        self.location = location
        self._read_range = read_range
        self._object_size = object_size
        self._data_key = data_key
        self._pos = 0
        self._cached: tuple[int, bytes] | None = None
        self.closed = False
        self.chunks_fetched = 0

    # -- file protocol (pyarrow.PythonFile) --------------------------------------------------------
    def size(self) -> int:
        return self.manifest.chunk_index.original_file_size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size()}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def close(self) -> None:
        self.closed = True
        self._cached = None

    def read(self, n: int = -1) -> bytes:
        end = self.size() if n is None or n < 0 else min(self.size(), self._pos + n)
        out = self.read_at(end - self._pos, self._pos)
        self._pos += len(out)
        return out

    def read_at(self, n: int, position: int) -> bytes:
        """Up to ``n`` original bytes from ``position`` (fewer at the end)."""
        total = self.size()
        end = min(total, position + max(n, 0))
        if position >= end:
            return b""
        index = self.manifest.chunk_index
        parts: list[bytes] = []
        at = position
        while at < end:
            chunk = index.chunk_at(at)
            data = self._chunk(chunk)
            lo = at - chunk.original_position
            hi = min(chunk.original_size, end - chunk.original_position)
            parts.append(data[lo:hi])
            at = chunk.original_position + hi
        return parts[0] if len(parts) == 1 else b"".join(parts)

    # -- chunks ---------------------------------------------------------------------------------
    def _chunk(self, chunk: Chunk) -> bytes:
        if self._cached is not None and self._cached[0] == chunk.index:
            return self._cached[1]
        if chunk.transformed_size > MAX_CHUNK_BYTES or chunk.original_size > MAX_CHUNK_BYTES:
            raise _bad(self.location, f"chunk {chunk.index} too large to read", f"at most {MAX_CHUNK_BYTES} bytes",
                       f"{chunk.transformed_size} bytes ({chunk.original_size} original)",
                       position=chunk.transformed_position, code=CHUNK_INVALID)
        end = chunk.transformed_position + chunk.transformed_size
        if self._object_size is not None and end > self._object_size:
            raise _bad(self.location, f"chunk {chunk.index} is truncated (the object ends before it)",
                       f"bytes {chunk.transformed_position}..{end - 1} (manifest's chunk index)",
                       f"an object of {self._object_size} bytes", position=chunk.transformed_position,
                       code=CHUNK_INVALID)
        raw = self._read_range(chunk.transformed_position, chunk.transformed_size)
        self.chunks_fetched += 1
        if len(raw) != chunk.transformed_size:
            raise _bad(self.location, f"chunk {chunk.index} is truncated",
                       f"{chunk.transformed_size} bytes (manifest's chunk index)", f"{len(raw)} bytes",
                       position=chunk.transformed_position, code=CHUNK_INVALID)
        enc = self.manifest.encryption
        data = detransform_chunk(raw, compression=self.manifest.compression, data_key=self._data_key,
                                 aad=enc.aad if enc is not None else b"", original_size=chunk.original_size,
                                 location=self.location, position=chunk.transformed_position,
                                 what=f"chunk {chunk.index}")
        self._cached = (chunk.index, data)
        return data

