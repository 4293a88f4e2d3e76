"""A small, deterministic corpus of document pairs with gold for the CRF aligner's speed tests.

Six document pairs built from a fixed word list: every complex sentence is simplified (words
dropped), split in two, kept, or deleted; a few simple sentences are additions. The gold follows the
construction. Used to check that the fast inference path gives exactly the rows it gave before.
"""

from __future__ import annotations

import random

from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from alignment_engine.types import Alignment, DocPair

WORDS = [
    "river", "city", "council", "school", "teacher", "market", "harbour", "winter", "summer", "bridge",
    "museum", "train", "farmer", "doctor", "island", "forest", "mountain", "village", "factory", "workers",
    "children", "parents", "storm", "election", "mayor", "library", "festival", "garden", "hospital",
    "engineers", "scientists", "ocean", "desert", "castle", "painting", "music", "football",
]
VERBS = [
    "built", "opened", "closed", "visited", "studied", "repaired", "painted", "crossed", "described",
    "protected",
]


def _sentence(rng: random.Random) -> list[str]:
    n = rng.randint(7, 16)
    words = [rng.choice(WORDS) for _ in range(n)]
    words.insert(1, rng.choice(VERBS))
    return words


def speed_corpus(n_docs: int = 6, seed: int = 7) -> tuple[list[DocPair], list[Alignment]]:
    rng = random.Random(seed)
    pairs: list[DocPair] = []
    gold: list[Alignment] = []
    for d in range(n_docs):
        pid = f"doc{d}"
        complex_: list[list[str]] = []
        simple: list[list[str]] = []
        links: list[tuple[tuple[int, int], tuple[int, int]]] = []
        for p in range(rng.randint(2, 4)):
            cpar: list[str] = []
            spar: list[str] = []
            for s in range(rng.randint(2, 5)):
                words = _sentence(rng)
                cpar.append(" ".join(words).capitalize() + ".")
                op = rng.random()
                if op < 0.15:
                    continue  # deleted
                if op < 0.4:  # split in two
                    cut = len(words) // 2
                    for part in (words[:cut], words[cut:]):
                        links.append(((len(simple), len(spar)), (p, s)))
                        spar.append(" ".join(part).capitalize() + ".")
                    continue
                kept = [w for w in words if rng.random() > 0.25] or words[:3]
                links.append(((len(simple), len(spar)), (p, s)))
                spar.append(" ".join(kept).capitalize() + ".")
                if rng.random() < 0.1:  # an addition
                    spar.append(" ".join(_sentence(rng)).capitalize() + ".")
            complex_.append(cpar)
            simple.append(spar or ["Nothing remains of this paragraph."])
        pairs.append(DocPair(pid, complex_, simple))
        for (sp, ss), (cp, cs) in links:
            gold.append(Alignment("aligned", sentence_id(pid, SIMPLE, sp, ss), sentence_id(pid, COMPLEX, cp, cs)))
    return pairs, gold
