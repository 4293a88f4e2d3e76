"""Balanced presentation orders: each member (system, or the control) appears equally often in
each position on the page.

A Williams design (balanced Latin square) of ``n`` members has ``n`` rows for even ``n`` and
``2n`` for odd ``n``; in every complete set of rows each member takes each position equally
often, and each member follows each other member equally often (first-order carry-over). Slot
``t`` of a study gets row ``perm_b[t mod R]`` of block ``b = t // R``, where ``perm_b`` is a
permutation of the rows drawn from the study seed and the block: the order looks shuffled from
page to page while every complete block keeps the balance exact.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence


def williams_rows(n: int) -> list[list[int]]:
    """Rows of a Williams design for ``n >= 1`` members (indices 0..n-1)."""
    if n < 1:
        raise ValueError(f"a design needs at least one member, got {n}")
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2 == 1 and n > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def derived_seed(*parts: object) -> int:
    """A stable 63-bit seed from the parts (not Python's salted ``hash``)."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def member_order(members: Sequence[str], seed: int) -> list[str]:
    """The study's fixed mapping of members onto design indices (a shuffle by the study seed)."""
    shuffled = sorted(members)
    random.Random(derived_seed(seed, "members")).shuffle(shuffled)
    return shuffled


def slot_order(n: int, seed: int, slot: int) -> tuple[list[int], int]:
    """``(design indices in display order, page seed)`` for slot ``slot`` of a study."""
    rows = williams_rows(n)
    block, within = divmod(slot, len(rows))
    page_seed = derived_seed(seed, "block", block)
    perm = list(range(len(rows)))
    random.Random(page_seed).shuffle(perm)
    return rows[perm[within]], page_seed


def page_members(members: Sequence[str], seed: int, slot: int) -> tuple[list[str], int]:
    """Members in display order for ``slot`` and the recorded page seed."""
    mapping = member_order(members, seed)
    indices, page_seed = slot_order(len(mapping), seed, slot)
    return [mapping[i] for i in indices], page_seed
