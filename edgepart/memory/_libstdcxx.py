"""libstdc++'s ``std::sort`` and ``std::unordered_set`` order, so TFLite's ties come out the same.

TFLite's ``ArenaPlanner`` collects the tensors each node allocates in a
``std::unordered_set<int>`` (iterated in hash-table order, not by value) and sorts the
concatenation with ``std::sort``, which is not stable: tensors with equal keys (same size and
same first node) end up in an order fixed by these two library algorithms. Reproducing them
makes the baseline place ties exactly as the Linux builds of LiteRT (libstdc++) do; Android
builds use libc++, whose tie order can differ (the arena size rarely does).

``std::sort``: introsort (median-of-three quicksort down to 16 elements, heapsort past the
depth limit ``2 * floor(log2 n)``), then one insertion sort. ``std::unordered_set<int>``: the
hash is the identity, elements form one singly linked list grouped by bucket (``key % buckets``);
a key whose bucket is empty goes to the front of the list, otherwise to the front of its
bucket's run; rehashing re-inserts the old list in order with the same rule. Bucket counts
follow the sequence the library itself goes through (13, 29, 59, 127, ...; load factor 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["std_sort", "unordered_set_order"]

T = TypeVar("T")
_THRESHOLD = 16


def std_sort(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """A copy of ``items`` in the order libstdc++'s ``std::sort(begin, end, less)`` leaves it."""
    a = list(items)
    n = len(a)
    if n > 1:
        _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(a, 0, n, less)
    return a


def _introsort_loop(
    a: list[T], first: int, last: int, depth: int, less: Callable[[T, T], bool]
) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list[T], first: int, last: int, less: Callable[[T, T], bool]) -> int:
    mid = first + (last - first) // 2
    _median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _median_to_first(
    a: list[T], result: int, x: int, y: int, z: int, less: Callable[[T, T], bool]
) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            pick = y
        elif less(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(
    a: list[T], first: int, last: int, pivot: int, less: Callable[[T, T], bool]
) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a: list[T], first: int, last: int, less: Callable[[T, T], bool]) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list[T], first: int, last: int, less: Callable[[T, T], bool]) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            a[first : i + 1] = [a[i], *a[first:i]]
        else:
            _linear_insert(a, i, less)


def _linear_insert(a: list[T], last: int, less: Callable[[T, T], bool]) -> None:
    val = a[last]
    nxt = last - 1
    while less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _heap_sort(a: list[T], first: int, last: int, less: Callable[[T, T], bool]) -> None:
    """``std::__partial_sort(first, last, last)``: make_heap, then sort_heap."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, n, a[first + parent], less)
    while last - first > 1:
        last -= 1
        val = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, val, less)


def _adjust_heap(
    a: list[T], first: int, hole: int, length: int, value: T, less: Callable[[T, T], bool]
) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    # __push_heap
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


# Bucket counts a libstdc++ (GCC 12) unordered_set<int> goes through as elements are inserted
# one by one (printed by the library itself): it rehashes when the size would exceed the count.
_BUCKETS = (
    13,
    29,
    59,
    127,
    257,
    541,
    1109,
    2357,
    5087,
    10273,
    20753,
    42043,
    85229,
    172933,
    351061,
    712697,
    1447153,
    2938679,
    5967347,
)


def _insert(order: list[int], key: int, n_bkt: int) -> None:
    b = key % n_bkt
    for i, k in enumerate(order):
        if k % n_bkt == b:
            order.insert(i, key)
            return
    order.insert(0, key)


def unordered_set_order(insertions: list[int]) -> list[int]:
    """Iteration order of a ``std::unordered_set<int>`` after inserting ``insertions``."""
    order: list[int] = []
    seen: set[int] = set()
    n_bkt, step = 1, 0
    for key in insertions:
        if key in seen:
            continue
        if len(order) + 1 > n_bkt:
            n_bkt = _BUCKETS[min(step, len(_BUCKETS) - 1)]
            step += 1
            old, order = order, []
            for k in old:
                _insert(order, k, n_bkt)
        _insert(order, key, n_bkt)
        seen.add(key)
    return order
