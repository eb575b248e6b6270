"""The Aiven ``RemoteStorageManager`` stores of ``tests/format/aiven_rsm/`` (written by Aiven's own
code from ``tiered_builders.write_tiered_cluster``'s segments 0 and 40: see the README there).

:func:`aiven_cluster` writes that cluster again (the writer is deterministic: the segments are
byte for byte the ones uploaded) and copies one store beside it, so a test reads the tiered
partition with its remote tier in Aiven's layout and compares with the cluster's own files and
rows, which the code under test did not produce."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tiered_builders import TieredCluster, remote_dir, write_tiered_cluster

FIXTURES = Path(__file__).resolve().parent / "aiven_rsm"
KEYS = FIXTURES / "keys"
KEY_A = f"key-a={KEYS / 'key-a-private.pem'}"
KEY_B = f"key-b={KEYS / 'key-b-private.pem'}"
#: configuration -> (the store's root below the copy: the storage root with key.prefix, keys to read it)
CONFIGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "plain": ("plain", ()),
    "zstd": ("zstd/cluster-a", ()),
    "encrypted": ("encrypted", (KEY_A,)),
    "zstd-encrypted": ("zstd-encrypted", (KEY_A, KEY_B)),
}
TOPIC_DIR = "orders-AQIDBAUGBwgJCgsMDQ4PEA/0"


@dataclass
class AivenCluster:
    """The tiered cluster, its store in Aiven's layout (``root``: what ``remoteStorage`` names) and
    the keys that store needs."""

    cluster: TieredCluster
    root: Path
    keys: tuple[str, ...]

    @property
    def partition_dir(self) -> Path:
        return self.root / TOPIC_DIR

    def object(self, start: int, suffix: str) -> Path:
        """The object of the uploaded segment at ``start`` with ``suffix`` (``.log``, ``.indexes``, ``.rsm-manifest``)."""
        m = next(m for m in self.cluster.uploaded if m.start_offset == start)
        return self.partition_dir / f"{start:020d}-{m.segment_id}{suffix}"

    def source(self, name: str) -> bytes:
        """The bytes of a file of the uploaded filesets as the writer made them (LocalTieredStorage's copy)."""
        return (remote_dir(self.cluster.remote_root) / name).read_bytes()


def aiven_cluster(tmp_path: Path, config: str) -> AivenCluster:
    """``write_tiered_cluster`` under ``tmp_path`` and a copy of the Aiven store of ``config``."""
    c = write_tiered_cluster(tmp_path / "cluster")
    sub, keys = CONFIGS[config]
    top = sub.split("/")[0]
    shutil.copytree(FIXTURES / top, tmp_path / "aiven" / top)
    return AivenCluster(c, tmp_path / "aiven" / sub, keys)
