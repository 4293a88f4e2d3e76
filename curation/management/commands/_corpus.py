"""Corpus look-ups shared by management commands (curation's and the pipeline's)."""

from __future__ import annotations

from django.core.management.base import CommandError

from curation.models import Corpus


def get_corpus(value: str) -> Corpus:
    """The corpus named ``value`` (or with that id); CommandError lists the names otherwise."""
    corpus = Corpus.objects.filter(name=value).first()
    if corpus is None and value.isdigit():
        corpus = Corpus.objects.filter(pk=int(value)).first()
    if corpus is None:
        raise CommandError(f"no corpus named {value!r} (names: {', '.join(Corpus.objects.values_list('name', flat=True))})")
    return corpus


def pair_pks(corpus: Corpus, pair_ids: str) -> list[int] | None:
    """Primary keys of comma-separated pair ids, in order; None for an empty list."""
    wanted = [p.strip() for p in pair_ids.split(",") if p.strip()]
    if not wanted:
        return None
    found = dict(corpus.pairs.filter(pair_id__in=wanted).values_list("pair_id", "pk"))
    missing = [p for p in wanted if p not in found]
    if missing:
        raise CommandError(f"unknown pair ids: {', '.join(missing[:10])}")
    return [found[p] for p in wanted]
