"""Classify aligned sentence groups into the simplification phenomena of Jiang et al. (2020).

The aligned (and partially aligned) sentence pairs of one document pair form a bipartite
graph between complex and simple sentences. Each connected component is one group:

- ``copying``:    1 complex - 1 simple, identical text (after whitespace normalisation);
- ``rephrasing``: 1 complex - 1 simple, different text;
- ``splitting``:  1 complex - n simple (n > 1);
- ``merging``:    n complex - 1 simple (n > 1);
- ``fusion``:     m complex - n simple (m, n > 1);
- ``deletion``:   a complex sentence with no aligned simple sentence (1-0).

Sentence keys are any hashable ids (database pks, formats.md ids).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from curation.curate.rows import Row
from curation.curate.text import normalise_space


class Phenomenon(StrEnum):
    REPHRASING = "rephrasing"
    COPYING = "copying"
    SPLITTING = "splitting"
    MERGING = "merging"
    FUSION = "fusion"
    DELETION = "deletion"


PHENOMENA_ORDER = [p.value for p in Phenomenon]
N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True)
class Group:
    complex: tuple[Hashable, ...]
    simple: tuple[Hashable, ...]
    phenomenon: Phenomenon

    @property
    def shape(self) -> str:
        return f"{len(self.complex)}-{len(self.simple)}"


def find_root(parent: dict[N, N], node: N) -> N:
    """Root of ``node`` in a union-find forest, compressing the path on the way."""
    root = node
    while parent[root] != root:
        root = parent[root]
    while parent[node] != root:
        parent[node], node = root, parent[node]
    return root


def components(links: Iterable[tuple[Hashable, Hashable]]) -> list[tuple[list[Hashable], list[Hashable]]]:
    """Connected components of the bipartite graph of ``(complex, simple)`` links.

    Returned in order of first appearance; complex and simple members keep first-seen order.
    """
    parent: dict[tuple[int, Hashable], tuple[int, Hashable]] = {}

    def find(node: tuple[int, Hashable]) -> tuple[int, Hashable]:
        return find_root(parent, node)

    order: list[tuple[int, Hashable]] = []
    for c, s in links:
        a, b = (1, c), (0, s)
        for node in (a, b):
            if node not in parent:
                parent[node] = node
                order.append(node)
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[tuple[int, Hashable], tuple[list[Hashable], list[Hashable]]] = {}
    for node in order:
        comp = groups.setdefault(find(node), ([], []))
        (comp[0] if node[0] == 1 else comp[1]).append(node[1])
    return list(groups.values())


def classify_component(complex_keys: list[Hashable], simple_keys: list[Hashable], texts: Mapping[Hashable, str] | None = None) -> Phenomenon:
    m, n = len(complex_keys), len(simple_keys)
    if m == 1 and n == 0:
        return Phenomenon.DELETION
    if m == 1 and n == 1:
        if texts is not None and normalise_space(texts.get(complex_keys[0], "")) == normalise_space(texts.get(simple_keys[0], "\0")):
            return Phenomenon.COPYING
        return Phenomenon.REPHRASING
    if m == 1:
        return Phenomenon.SPLITTING
    if n == 1:
        return Phenomenon.MERGING
    return Phenomenon.FUSION


def classify(
    links: Iterable[tuple[Hashable, Hashable]],
    texts: Mapping[Hashable, str] | None = None,
    complex_sentences: Iterable[Hashable] | None = None,
) -> list[Group]:
    """Groups of one document pair. ``texts`` maps complex and simple keys to their text (to
    tell copying from rephrasing; keys of the two sides must not collide). ``complex_sentences``
    lists every complex sentence of the pair, to find deletions (unlinked complex sentences)."""
    result: list[Group] = []
    linked: set[Hashable] = set()
    for cs, ss in components(links):
        linked.update(cs)
        result.append(Group(tuple(cs), tuple(ss), classify_component(cs, ss, texts)))
    if complex_sentences is not None:
        for c in complex_sentences:
            if c not in linked:
                result.append(Group((c,), (), Phenomenon.DELETION))
    return result


def count_phenomena(groups: Iterable[Group]) -> dict[str, int]:
    counts = dict.fromkeys(PHENOMENA_ORDER, 0)
    for group in groups:
        counts[group.phenomenon.value] += 1
    return counts


def classify_rows(rows: list[Row], keys: list[tuple[int, int]], groups: Counter[str] | None = None) -> set[int]:
    """Tag rows of one document pair with their group, phenomenon and shape; return linked complex keys.

    ``keys`` are (complex sentence pk, simple sentence pk) per row; ``groups`` (if given) counts
    the groups by phenomenon. Groups are numbered in the order of their first row. A row whose
    two sentences are in no other row is a 1-1 group by itself (most rows); a union-find over
    integer nodes (complex pk, and -simple pk) joins the others. The result is the same as
    :func:`classify` (tested)."""
    complex_rows = Counter(c for c, _ in keys)
    simple_rows = Counter(s for _, s in keys)
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        return find_root(parent, x)

    for c, s in keys:
        if complex_rows[c] > 1 or simple_rows[s] > 1:
            a, b = c, -s
            if a not in parent:
                parent[a] = a
            if b not in parent:
                parent[b] = b
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra
    sizes: dict[int, list[int]] = {}
    for node in parent:
        size = sizes.setdefault(find(node), [0, 0])
        size[0 if node > 0 else 1] += 1
    shapes: dict[int, tuple[str, str]] = {}
    for root, (m, n) in sizes.items():
        if m == 1 and n == 1:
            shapes[root] = ("", "1-1")  # one link given twice: copying or rephrasing per row, as below
        else:
            kind = Phenomenon.SPLITTING if m == 1 else Phenomenon.MERGING if n == 1 else Phenomenon.FUSION
            shapes[root] = (kind.value, f"{m}-{n}")
            if groups is not None:
                groups[kind.value] += 1
    numbers: dict[int, int] = {}  # root -> group number
    groups_seen = 0
    for row, (c, s) in zip(rows, keys, strict=True):
        if complex_rows[c] > 1 or simple_rows[s] > 1:
            root = find(c)
            number = numbers.get(root, -1)
            if number < 0:
                number = numbers[root] = groups_seen
                groups_seen += 1
            phenomenon, shape = shapes[root]
        else:
            number, phenomenon, shape = groups_seen, "", "1-1"
            groups_seen += 1
        if not phenomenon:
            copied = normalise_space(row.simple) == normalise_space(row.complex)
            phenomenon = COPYING if copied else REPHRASING
            if groups is not None:
                groups[phenomenon] += 1
        row.group, row.phenomenon, row.group_shape = number, phenomenon, shape
    return set(complex_rows)


COPYING, REPHRASING = Phenomenon.COPYING.value, Phenomenon.REPHRASING.value
