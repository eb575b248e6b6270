"""The key order of kafka-dump-log's report maps (:mod:`kafka_format.cli.jvm_maps`), against orders a JVM
printed: ``java.util.HashMap`` after ``computeIfAbsent`` per call and Scala 2.13's ``mutable.HashMap``
after ``put`` per call (JDK 17, scala-library 2.13.15, the runtime of Kafka 3.9.1's tool), for the
cases that decide an order: the table's growth one call late (Java) or one call early (Scala), keys of
equal hash, and a bucket that becomes a red-black tree.  The conformance suite checks the same models
on many more key sets against the JVM itself (tests/conformance/test_dump_conformance.py).
"""

from __future__ import annotations

import pytest

from kafka_format.cli.jvm_maps import JavaHashMap, ScalaHashMap

P = [f"/logs/t-{i}/00000000000000000000.log" for i in range(14)]


def _t(*numbers: int) -> list[str]:
    return [P[n] for n in numbers]


EQUAL = ["/x/AaAaAaAa", "/x/AaAaAaBB", "/x/AaAaBBAa", "/x/AaAaBBBB", "/x/AaBBAaAa", "/x/AaBBAaBB",
         "/x/AaBBBBAa", "/x/AaBBBBBB", "/x/BBAaAaAa"]   # one hash code
TREE_KEYS = ["/k/319", "/k/517", "/k/638", "/k/715", "/k/759", "/k/836", "/k/913", "/k/957", "/k/1050",
             "/k/1094", "/k/1171", "/k/1292"]   # one bucket of 128 (different hashes)


def _f(*numbers: int) -> list[str]:
    return [f"/f/{n}" for n in numbers]


FILLER_HEAD = _f(30, 32, 31, 38, 37, 39, 34, 33, 36, 35, 6, 7, 4, 5, 2, 3, 0, 1, 41, 40, 43, 42, 49, 48, 45,
                 44, 47, 46, 52, 51, 54, 10, 53)
FILLER_TAIL = _f(9, 16, 59, 15, 18, 17, 56, 12, 55, 11, 58, 14, 57, 13, 19, 21, 20, 27, 26, 29, 28, 23, 22,
                 25, 24)

CASES = {
    # 13 keys: the 13th passes the threshold (12), but Java grows only at the next call
    "thirteen": (P[:13], _t(10, 2, 8, 5, 7, 12, 0, 9, 3, 1, 6, 4, 11),
                 _t(2, 8, 7, 12, 3, 4, 10, 5, 0, 9, 1, 6, 11)),
    "thirteen and a lookup": ([*P[:13], P[0]], _t(2, 8, 7, 12, 3, 4, 10, 5, 0, 9, 1, 6, 11),
                              _t(2, 8, 7, 12, 3, 4, 10, 5, 0, 9, 1, 6, 11)),
    # 11 keys: Scala grows at the next put, even one that only replaces a value
    "eleven": (P[:11], _t(10, 2, 8, 5, 7, 0, 9, 3, 1, 6, 4), _t(10, 2, 8, 5, 7, 0, 9, 1, 3, 4, 6)),
    "eleven and a replace": ([*P[:11], P[3]], _t(10, 2, 8, 5, 7, 0, 9, 3, 1, 6, 4),
                             _t(2, 8, 7, 3, 4, 10, 5, 0, 9, 1, 6)),
    # equal hashes: Java puts each new key first and grows a small table at 8 in a bucket; Scala
    # keeps a bucket sorted by hash, equal hashes in insertion order
    "equal hashes": (EQUAL, EQUAL[-1:] + EQUAL[-2::-1], EQUAL),
    # 12 keys in one bucket of a 128-bucket table: a tree, its root first
    "tree": (_f(*range(60)) + TREE_KEYS,
             [TREE_KEYS[i] for i in (3, 6, 7, 5, 4, 2, 1, 0, 8, 9, 10, 11)] + FILLER_HEAD + _f(50, 8) + FILLER_TAIL,
             [TREE_KEYS[i] for i in (7, 6, 2, 1, 5, 3, 4, 0, 11, 10, 9, 8)] + FILLER_HEAD + _f(8, 50) + FILLER_TAIL),
}


@pytest.mark.parametrize("case", CASES)
def test_java_hash_map_order(case: str) -> None:
    calls, java, _ = CASES[case]
    table = JavaHashMap()
    for key in calls:
        table.compute_if_absent(key)
    assert table.keys() == java
    assert len(table) == len(set(calls))


@pytest.mark.parametrize("case", CASES)
def test_scala_hash_map_order(case: str) -> None:
    calls, _, scala = CASES[case]
    table = ScalaHashMap()
    for key in calls:
        table.put(key)
    assert table.keys() == scala
    assert len(table) == len(set(calls))
