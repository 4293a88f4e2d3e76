"""Places on the shared pages (the navigation, the corpus page, the document-pair page) where an
app on a higher floor adds its own part, so that the corpus pages never import or name what
sits above them.

An app registers a template for a slot in its ``AppConfig.ready()``::

    page_slots.contribute("corpus_detail", "pipeline/_corpus_detail.html", order=20)

and the page renders every contribution in order with ``{% load page_slots %}{% page_slot "corpus_detail" %}``
(each template sees the page's whole context). ``pair_detail`` sits above the two documents of a
pair, ``pair_detail_below`` under them.
"""

from __future__ import annotations

SLOTS = ("nav", "corpus_detail", "pair_detail", "pair_detail_below")

_contributions: dict[str, list[tuple[int, str]]] = {slot: [] for slot in SLOTS}


def contribute(slot: str, template: str, order: int = 50) -> None:
    """Add ``template`` to ``slot`` (lower ``order`` first); registering the same template twice is a no-op."""
    if slot not in _contributions:
        raise ValueError(f"unknown page slot {slot!r}; known: {', '.join(SLOTS)}")
    if all(name != template for _, name in _contributions[slot]):
        _contributions[slot].append((order, template))
        _contributions[slot].sort()


def templates(slot: str) -> list[str]:
    return [name for _, name in _contributions.get(slot, [])]
