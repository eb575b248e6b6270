"""The order in which kafka-dump-log's hash maps list their keys, for ``klogs dump``'s end-of-run reports.

DumpLogSegments collects its end-of-run reports (index mismatches, time-index errors,
non-consecutive offsets) in hash maps keyed by each file's absolute path and prints them by
iterating the maps, so the files come out in hash-table order, not in the order they were dumped.
The two tools use two different tables, modelled here key for key (values are not needed):

* :class:`JavaHashMap` -- ``java.util.HashMap`` filled with ``computeIfAbsent`` (the Java tool of
  Kafka 4.3+, ``tools/.../DumpLogSegments.java``): 16 buckets at the first call, doubled when a
  call starts with more entries than the threshold (0.75 of the buckets; so the table grows at
  the call *after* the one that passed it, whether or not that call adds a key); a new key goes
  to the *head* of its bucket; a bucket that reaches 8 keys doubles a table of fewer than 64
  buckets, or becomes a red-black tree (whose list order the tree's root and insertions decide);
  doubling splits each bucket in order, and a tree half of at most 6 keys becomes a list again.
* :class:`ScalaHashMap` -- Scala 2.13's ``mutable.HashMap`` filled with ``put`` (the Scala tool of
  Kafka 3.x, ``core/.../DumpLogSegments.scala``): 16 buckets, doubled when a ``put`` -- even one
  that only replaces a value -- starts with ``size + 1 >= threshold``; each bucket is kept sorted
  by hash (a new key after those of equal or smaller hash); doubling splits buckets in order.

Both iterate buckets in index order, each bucket's list in order.  Hashes are Java's
``String.hashCode`` spread as both maps do (``h ^ (h >>> 16)``); bucket = hash & (buckets - 1).
"""

from __future__ import annotations

from kafka_format.internal.protocol import java_string_hash

__all__ = ["JavaHashMap", "ScalaHashMap", "spread_hash"]

INITIAL_BUCKETS = 16          # both maps' default capacity
LOAD_FACTOR = 0.75            # both maps' default load factor
TREEIFY_THRESHOLD = 8         # java.util.HashMap: a bucket of this many keys becomes a tree ...
MIN_TREEIFY_CAPACITY = 64     # ... when the table has at least this many buckets (else it doubles)
UNTREEIFY_THRESHOLD = 6       # a tree half of at most this many keys becomes a list again


def spread_hash(key: str) -> int:
    """``h ^ (h >>> 16)`` of ``key.hashCode()``, as a signed int32 (what both maps store)."""
    h = java_string_hash(key) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _utf16(key: str) -> tuple[int, ...]:
    """``String.compareTo`` order: lexicographic over UTF-16 code units."""
    data = key.encode("utf-16-be", "surrogatepass")
    return tuple((data[i] << 8) | data[i + 1] for i in range(0, len(data), 2))


class _Entry:
    """One key of a :class:`JavaHashMap`: its bucket list link and, in a tree bucket, its tree links."""

    __slots__ = ("hash", "key", "left", "next", "order", "parent", "prev", "red", "right", "tree")

    def __init__(self, key: str, hash_: int, next_: _Entry | None) -> None:
        self.key = key
        self.hash = hash_
        self.order = (hash_, _utf16(key))   # a tree's order: hash, then String.compareTo
        self.next = next_
        self.prev: _Entry | None = None
        self.parent: _Entry | None = None
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.red = False
        self.tree = False


class JavaHashMap:
    """The keys of a ``java.util.HashMap<String, V>`` that only ever sees ``computeIfAbsent``."""

    def __init__(self) -> None:
        self._table: list[_Entry | None] = []
        self._threshold = 0
        self._size = 0

    def compute_if_absent(self, key: str) -> None:
        """One ``computeIfAbsent(key, k -> new ...)`` call."""
        if self._size > self._threshold or not self._table:
            self._resize()
        h = spread_hash(key)
        table = self._table
        i = h & (len(table) - 1)
        first = table[i]
        in_bucket = 0
        if first is not None:
            if first.tree:
                if self._tree_find(first, h, key) is not None:
                    return
                self._tree_insert(first, h, key)
                self._size += 1
                return
            e: _Entry | None = first
            while e is not None:
                if e.hash == h and e.key == key:
                    return
                in_bucket += 1
                e = e.next
        table[i] = _Entry(key, h, first)
        if in_bucket >= TREEIFY_THRESHOLD - 1:
            self._treeify_bucket(h)
        self._size += 1

    def keys(self) -> list[str]:
        """The keys in ``forEach`` / iterator order."""
        out = []
        for e in self._table:
            while e is not None:
                out.append(e.key)
                e = e.next
        return out

    def __len__(self) -> int:
        return self._size

    # -- table ----------------------------------------------------------------------------------

    def _resize(self) -> None:
        old = self._table
        if not old:
            self._table = [None] * INITIAL_BUCKETS
            self._threshold = int(INITIAL_BUCKETS * LOAD_FACTOR)
            return
        n = len(old)
        table: list[_Entry | None] = [None] * (2 * n)
        self._table = table
        self._threshold *= 2
        for j, e in enumerate(old):
            if e is None:
                continue
            if e.next is None:
                table[e.hash & (2 * n - 1)] = e
            elif e.tree:
                self._split_tree(e, j, n)
            else:
                low, high = self._split(e, n)
                table[j] = low[0] if low else None
                table[j + n] = high[0] if high else None

    @staticmethod
    def _split(e: _Entry | None, bit: int) -> tuple[list[_Entry], list[_Entry]]:
        """A bucket's entries, in order, into those that stay and those that move ``bit`` up (relinked)."""
        low: list[_Entry] = []
        high: list[_Entry] = []
        while e is not None:
            (high if e.hash & bit else low).append(e)
            e = e.next
        for part in (low, high):
            previous: _Entry | None = None
            for a in reversed(part):
                a.next = previous
                previous = a
            for i, a in enumerate(part):
                if a.tree:
                    a.prev = part[i - 1] if i else None
        return low, high

    def _split_tree(self, first: _Entry, j: int, bit: int) -> None:
        low, high = self._split(first, bit)
        for index, part, other in ((j, low, high), (j + bit, high, low)):
            if not part:
                continue
            if len(part) <= UNTREEIFY_THRESHOLD:
                for e in part:
                    e.tree = False
                    e.prev = e.parent = e.left = e.right = None
                self._table[index] = part[0]
            else:
                self._table[index] = part[0]
                if other:            # else the half is the whole tree, still built
                    self._build_tree(part[0])

    # -- tree buckets ---------------------------------------------------------------------------

    def _treeify_bucket(self, h: int) -> None:
        table = self._table
        if len(table) < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        first = table[h & (len(table) - 1)]
        prev = None
        e = first
        while e is not None:
            e.tree = True
            e.prev = prev
            prev = e
            e = e.next
        if first is not None:
            self._build_tree(first)

    def _build_tree(self, first: _Entry) -> None:
        """Insert the bucket's entries, in list order, into a new tree; then its root goes first."""
        root: _Entry | None = None
        x: _Entry | None = first
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    go_left = x.order <= p.order
                    child = p.left if go_left else p.right
                    if child is None:
                        x.parent = p
                        if go_left:
                            p.left = x
                        else:
                            p.right = x
                        root = self._rebalance(root, x)
                        break
                    p = child
            x = nxt
        assert root is not None
        self._root_first(root)

    @staticmethod
    def _tree_root(e: _Entry) -> _Entry:
        while e.parent is not None:
            e = e.parent
        return e

    def _tree_find(self, first: _Entry, h: int, key: str) -> _Entry | None:
        p: _Entry | None = self._tree_root(first)
        order = (h, _utf16(key))
        while p is not None:
            if p.order == order:
                return p
            p = p.left if order < p.order else p.right
        return None

    def _tree_insert(self, first: _Entry, h: int, key: str) -> None:
        """A new key in a tree bucket: linked right after its tree parent, then the root goes first."""
        root = self._tree_root(first)
        x = _Entry(key, h, None)
        x.tree = True
        p = root
        while True:
            go_left = x.order < p.order
            child = p.left if go_left else p.right
            if child is None:
                break
            p = child
        x.next = p.next
        x.prev = p
        if p.next is not None:
            p.next.prev = x
        p.next = x
        x.parent = p
        if go_left:
            p.left = x
        else:
            p.right = x
        self._root_first(self._rebalance(root, x))

    def _root_first(self, root: _Entry) -> None:
        """Move the tree's root to the front of its bucket's list."""
        table = self._table
        index = root.hash & (len(table) - 1)
        first = table[index]
        if root is first:
            return
        table[index] = root
        if root.next is not None:
            root.next.prev = root.prev
        if root.prev is not None:
            root.prev.next = root.next
        if first is not None:
            first.prev = root
        root.next = first
        root.prev = None

    @staticmethod
    def _rotate_left(root: _Entry, p: _Entry) -> _Entry:
        r = p.right
        if r is None:
            return root
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            root = r
            r.red = False
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r
        return root

    @staticmethod
    def _rotate_right(root: _Entry, p: _Entry) -> _Entry:
        left = p.left
        if left is None:
            return root
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        left.parent = p.parent
        if p.parent is None:
            root = left
            left.red = False
        elif p.parent.right is p:
            p.parent.right = left
        else:
            p.parent.left = left
        left.right = p
        p.parent = left
        return root

    def _rebalance(self, root: _Entry, x: _Entry) -> _Entry:
        """Red-black insertion fix-up (Cormen et al.) after ``x`` was attached; returns the root."""
        x.red = True
        while True:
            xp = x.parent
            if xp is None:
                x.red = False
                return x
            xpp = xp.parent
            if not xp.red or xpp is None:
                return root
            if xp is xpp.left:
                uncle = xpp.right
                if uncle is not None and uncle.red:
                    uncle.red = xp.red = False
                    xpp.red = True
                    x = xpp
                    continue
                if x is xp.right:
                    x = xp
                    root = self._rotate_left(root, x)
                    xp = x.parent
                    xpp = xp.parent if xp is not None else None
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = self._rotate_right(root, xpp)
            else:
                uncle = xpp.left
                if uncle is not None and uncle.red:
                    uncle.red = xp.red = False
                    xpp.red = True
                    x = xpp
                    continue
                if x is xp.left:
                    x = xp
                    root = self._rotate_right(root, x)
                    xp = x.parent
                    xpp = xp.parent if xp is not None else None
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = self._rotate_left(root, xpp)


class ScalaHashMap:
    """The keys of a Scala 2.13 ``mutable.HashMap[String, V]`` that only ever sees ``put``."""

    def __init__(self) -> None:
        self._table: list[list[tuple[int, str]]] = [[] for _ in range(INITIAL_BUCKETS)]
        self._threshold = int(INITIAL_BUCKETS * LOAD_FACTOR)
        self._size = 0

    def put(self, key: str) -> None:
        """One ``put(key, value)`` call."""
        if self._size + 1 >= self._threshold:
            self._grow()
        h = spread_hash(key)
        bucket = self._table[h & (len(self._table) - 1)]
        at = 0
        for at, (other_hash, other) in enumerate(bucket):  # noqa: B007 - `at` is used after the loop
            if other_hash > h:
                break
            if other_hash == h and other == key:
                return
        else:
            at = len(bucket)
        bucket.insert(at, (h, key))
        self._size += 1

    def keys(self) -> list[str]:
        """The keys in ``foreach`` / iterator order."""
        return [key for bucket in self._table for _, key in bucket]

    def __len__(self) -> int:
        return self._size

    def _grow(self) -> None:
        n = len(self._table)
        self._threshold = int(2 * n * LOAD_FACTOR)
        table: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
        for i, bucket in enumerate(self._table):
            for entry in bucket:
                table[i + n if entry[0] & n else i].append(entry)
        self._table = table

