"""Derive alignments between non-adjacent reading levels from adjacent ones.

Jiang et al. (2020) annotated Newsela-Manual between adjacent levels only and derived the
rest by composition: if complex sentence a (level 0) is aligned to b (level 1) and b to c
(level 2), then a is aligned to c. Composition repeats, so 0-1, 1-2, 2-3 give 0-2, 1-3, 0-3.

Labels compose as: aligned . aligned = aligned; any partialAligned in the chain gives
partialAligned. notAligned links never compose. A derived link never overrides a direct one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

ALIGNED = "aligned"
PARTIAL = "partialAligned"


@dataclass(frozen=True)
class LevelLink:
    """``complex`` is a sentence of level ``complex_level``; ``simple`` of ``simple_level`` (> complex_level)."""

    complex_level: int
    simple_level: int
    complex: Hashable
    simple: Hashable
    label: str


def compose_labels(first: str, second: str) -> str:
    return ALIGNED if first == ALIGNED and second == ALIGNED else PARTIAL


def derive_links(links: Iterable[LevelLink]) -> list[LevelLink]:
    """The new links (only) obtained by transitive composition across levels, sorted."""
    usable = [link for link in links if link.label in (ALIGNED, PARTIAL)]
    known: dict[tuple[Hashable, Hashable], str] = {}
    # outgoing[(level, sentence)] -> {(next_level, next_sentence): label}
    outgoing: dict[tuple[int, Hashable], dict[tuple[int, Hashable], str]] = defaultdict(dict)
    for link in usable:
        key = (link.complex, link.simple)
        known[key] = ALIGNED if known.get(key) == ALIGNED or link.label == ALIGNED else PARTIAL
        node = (link.complex_level, link.complex)
        target = (link.simple_level, link.simple)
        previous = outgoing[node].get(target)
        outgoing[node][target] = ALIGNED if previous == ALIGNED or link.label == ALIGNED else link.label
    derived: dict[tuple[int, Hashable, int, Hashable], str] = {}
    for start in sorted(outgoing, key=lambda n: (n[0], str(n[1]))):
        # best label reaching each node from ``start`` (aligned beats partial), breadth first
        best: dict[tuple[int, Hashable], str] = {}
        frontier = list(outgoing[start].items())
        while frontier:
            nxt: list[tuple[tuple[int, Hashable], str]] = []
            for node, label in frontier:
                if best.get(node) == ALIGNED or best.get(node) == label:
                    continue
                best[node] = label
                for target, label2 in outgoing.get(node, {}).items():
                    nxt.append((target, compose_labels(label, label2)))
            frontier = nxt
        for (level, sentence), label in best.items():
            if (start[1], sentence) in known:
                continue
            derived[(start[0], start[1], level, sentence)] = label
    return [
        LevelLink(cl, sl, c, s, label)
        for (cl, c, sl, s), label in sorted(derived.items(), key=lambda kv: (kv[0][0], kv[0][2], str(kv[0][1]), str(kv[0][3])))
    ]
