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

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar


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


def normalise_space(text: str) -> str:
    return " ".join(text.split())


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
