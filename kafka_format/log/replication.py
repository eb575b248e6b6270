"""Follower truncation and the history replicas agree on, as Kafka's replication makes them.

A follower that starts fetching from a leader first makes its log a prefix of the leader's: it
fetches at its log end offset with its latest leader epoch (``lastFetchedEpoch``), the leader
answers a diverging epoch when its own end offset for that epoch is lower or its epoch older
(``Partition.fetchRecords`` with ``lastOffsetForLeaderEpoch``), and the follower truncates
(``AbstractFetcherThread.getOffsetTruncationState``), again until the leader accepts the fetch.
Both caches answer ``LeaderEpochFileCache.endOffsetFor``; a follower truncated to an offset drops
its epoch entries from there (``truncateFromEnd``).  A fetch the leader cannot place at all is out
of range (``fetchOffsetAndTruncate``): a follower past the leader's end truncates to it, one below the
leader's log start starts again there.  Below the offset a follower keeps, its batches are the
leader's (replication copies batches as they are), which is what lets the best copy of a
partition take each offset range from any copy that holds it valid (:func:`assemble_history`).

Kafka 4.4: ``kafka.server.AbstractFetcherThread``, ``kafka.cluster.Partition``,
``org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache``, ``UnifiedLog.endOffsetForEpoch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "Copy",
    "HistoryRange",
    "Truncation",
    "assemble_history",
    "choose_leader",
    "end_offset_for",
    "follower_truncation",
]

#: ``OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`` / ``UNDEFINED_EPOCH_OFFSET``
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1

Epochs = Sequence[tuple[int, int]]       # (epoch, start offset) in epoch order, as the checkpoint keeps them


@dataclass(frozen=True)
class Copy:
    """One replica's copy of a partition as replication sees it: its leader-epoch cache, log start
    and end offsets, and the offset ranges whose batches are valid (``[start, end)``, sorted)."""

    name: str
    epochs: tuple[tuple[int, int], ...]
    log_start_offset: int
    log_end_offset: int
    valid: tuple[tuple[int, int], ...] = ()

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs[-1][0] if self.epochs else None


@dataclass(frozen=True)
class Truncation:
    """Where a follower's log ends up before it fetches: ``offset`` (its new log end offset), the
    steps that got it there (one line each, Kafka's reasons), and whether it lost offsets."""

    follower: str
    offset: int
    steps: tuple[str, ...]
    start_again_at: int | None = None    # truncated fully: the leader's log start it starts at

    def truncated(self, log_end_offset: int) -> bool:
        return self.offset < log_end_offset or self.start_again_at is not None


@dataclass(frozen=True)
class HistoryRange:
    """``[start, end)`` of the agreed history, read from copy ``source`` (None: no copy holds it valid)."""

    start: int
    end: int
    source: str | None
    reason: str


def end_offset_for(epochs: Epochs, requested: int, log_end_offset: int) -> tuple[int, int]:
    """``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset) for ``requested``: the log end offset
    for the latest epoch; else the start of the first epoch above it, with the greatest epoch at
    or below it (``requested`` itself when none is); undefined when no epoch lies above it."""
    if requested == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if epochs and epochs[-1][0] == requested:
        return requested, log_end_offset
    higher = next(((e, s) for e, s in epochs if e > requested), None)
    if higher is None:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    floor = None
    for e, _s in epochs:
        if e <= requested:
            floor = e
    return (requested if floor is None else floor), higher[1]


def _truncate_from_end(epochs: Epochs, offset: int) -> tuple[tuple[int, int], ...]:
    """``LeaderEpochFileCache.truncateFromEnd``: entries starting at or above ``offset`` dropped."""
    return tuple((e, s) for e, s in epochs if s < offset)


def follower_truncation(leader: Copy, follower: Copy, *, max_rounds: int = 10_000) -> Truncation:
    """Where ``follower`` truncates before fetching from ``leader`` (the fetch-path divergence loop,
    then the out-of-range rule)."""
    epochs, leo = tuple(follower.epochs), follower.log_end_offset
    steps: list[str] = []
    for _ in range(max_rounds):
        if not epochs:
            break                                    # no lastFetchedEpoch: the leader checks nothing
        fetched = epochs[-1][0]
        l_epoch, l_end = end_offset_for(leader.epochs, fetched, leader.log_end_offset)
        if l_end == UNDEFINED_OFFSET or l_epoch == UNDEFINED_EPOCH:
            steps.append(f"the leader has no end offset for epoch {fetched}: the fetch at {leo} is out of range")
            break
        if not (l_epoch < fetched or l_end < leo):
            break                                    # the leader accepts the fetch
        # getOffsetTruncationState with the diverging epoch (l_epoch, l_end)
        f_epoch, f_end = end_offset_for(epochs, l_epoch, leo)
        if f_end == UNDEFINED_OFFSET:
            to, why = min(l_end, leo), f"epoch {l_epoch} is below every epoch the follower tracks"
        elif f_epoch != l_epoch:
            to, why = min(f_end, leo), f"the follower does not know epoch {l_epoch}: truncated to its end of epoch {f_epoch}"
        else:
            to, why = min(f_end, l_end, leo), f"epoch {l_epoch} ends at {l_end} on the leader, {f_end} here"
        steps.append(f"diverging epoch {l_epoch} end {l_end} (fetch at {leo}, last fetched epoch {fetched}): "
                     f"truncate to {to}; {why}")
        if to == leo and _truncate_from_end(epochs, to) == epochs:
            break                                    # nothing changes: a fixed point
        epochs, leo = _truncate_from_end(epochs, to), to
    start_again: int | None = None
    if leo > leader.log_end_offset:
        steps.append(f"the fetch at {leo} is past the leader's log end {leader.log_end_offset}: truncate to it")
        leo = leader.log_end_offset
    elif leo < leader.log_start_offset:
        steps.append(f"the fetch at {leo} is below the leader's log start {leader.log_start_offset}: "
                     f"truncate fully and start there")
        start_again = leader.log_start_offset
    return Truncation(follower.name, leo, tuple(steps), start_again)


def choose_leader(copies: Sequence[Copy], leader: str | None = None) -> tuple[Copy, str]:
    """The copy the others follow and why: ``leader`` when named (the cluster metadata's leader),
    else the highest latest epoch, then the highest log end offset, then the first given."""
    if not copies:
        raise ValueError("no copies")
    if leader is not None:
        for c in copies:
            if c.name == leader:
                return c, "the cluster metadata's leader"
        raise ValueError(f"the leader {leader!r} is none of the copies")
    def rank(i_c: tuple[int, Copy]) -> tuple[int, int, int]:
        i, c = i_c
        return (UNDEFINED_EPOCH if c.latest_epoch is None else c.latest_epoch), c.log_end_offset, -i
    _, best = max(enumerate(copies), key=rank)
    return best, "the highest latest leader epoch, then the highest log end offset"


def _subtract(ranges: list[tuple[int, int]], cut: tuple[int, int]) -> list[tuple[int, int]]:
    out = []
    for s, e in ranges:
        if cut[1] <= s or cut[0] >= e:
            out.append((s, e))
            continue
        if s < cut[0]:
            out.append((s, cut[0]))
        if cut[1] < e:
            out.append((cut[1], e))
    return out


def assemble_history(copies: Sequence[Copy], leader: str | None = None
                     ) -> tuple[list[HistoryRange], dict[str, Truncation]]:
    """The history replication agrees on, ``[leader's log start, leader's log end)``, each range taken
    from the leader where its bytes are valid, else from a follower that keeps the range (below its
    truncation offset) valid, else reported as held by no copy; and each follower's truncation."""
    chief, why = choose_leader(copies, leader)
    truncations = {c.name: follower_truncation(chief, c) for c in copies if c is not chief}
    start, end = chief.log_start_offset, chief.log_end_offset
    out: list[HistoryRange] = []
    missing = [(start, end)] if start < end else []
    for s, e in chief.valid:
        s, e = max(s, start), min(e, end)
        if s < e:
            out.append(HistoryRange(s, e, chief.name, f"leader ({why})"))
            missing = _subtract(missing, (s, e))
    for c in copies:
        if c is chief or not missing:
            continue
        t = truncations[c.name]
        keep_end = t.offset if t.start_again_at is None else start
        for s, e in c.valid:
            s, e = max(s, start), min(e, end, keep_end)
            for ms, me in list(missing):
                a, b = max(s, ms), min(e, me)
                if a < b:
                    out.append(HistoryRange(a, b, c.name, f"the leader's bytes are not valid here; this follower "
                                                          f"keeps them (it truncates to {t.offset})"))
                    missing = _subtract(missing, (a, b))
    out.extend(HistoryRange(s, e, None, "no copy holds these offsets valid") for s, e in missing)
    out.sort(key=lambda r: r.start)
    return out, truncations
