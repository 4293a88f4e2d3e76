"""The pair page shows candidates, reference alignments, verified labels and a run's predictions side by side."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotation.models import CandidatePair, VerifiedLabel
from curation.models import DocumentPair, ReferenceAlignment
from pipeline import pair_alignments
from pipeline.models import AlignmentRun, PredictedAlignment
from pipeline.tests.export_factory import make_corpus, make_run, sentence

pytestmark = pytest.mark.django_db


def labelled_pair() -> tuple[DocumentPair, AlignmentRun, AlignmentRun]:
    """Pair art000.0_1 with a reference, candidates (one verified), an older run and the shared test run."""
    corpus = make_corpus(n_articles=1)
    pair = DocumentPair.objects.get(pair_id="art000.0_1")
    older = AlignmentRun.objects.create(corpus=corpus, method="jaccard")
    PredictedAlignment.objects.create(run=older, pair=pair, simple=sentence(pair, 0, 1, 0), complex=sentence(pair, 1, 0, 0),
                                      label="aligned", score=0.2)
    run = make_run(corpus)  # aligned (0,0)-(0,0), (0,0)-(0,1), partial (0,1)-(0,2), aligned (1,0)-(1,0), score 0.75
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 0), complex=sentence(pair, 1, 0, 0), label="aligned")
    ReferenceAlignment.objects.create(pair=pair, simple=sentence(pair, 0, 0, 2), complex=sentence(pair, 1, 0, 1), label="aligned")
    cand = CandidatePair.objects.create(pair=pair, simple=sentence(pair, 0, 1, 0), complex=sentence(pair, 1, 1, 0), score=0.61)
    VerifiedLabel.objects.create(candidate=cand, label="notAligned")
    CandidatePair.objects.create(pair=pair, simple=sentence(pair, 0, 0, 1), complex=sentence(pair, 1, 1, 1), score=0.05)
    return pair, older, run


def test_rows_join_every_source_and_mark_agreement() -> None:
    pair, older, run = labelled_pair()
    c = pair_alignments.compare(pair)
    assert c.run == run  # the newest run that covers the pair
    by_key = {(r.complex_sid, r.simple_sid): r for r in c.rows}
    first = by_key[("art000.0_1-1-0-0", "art000.0_1-0-0-0")]
    assert first.cells["reference"].label == "aligned" and first.cells["run"].score == 0.75 and first.agreement == "agree"
    partial = by_key[("art000.0_1-1-0-1", "art000.0_1-0-0-2")]
    assert partial.cells["run"].label == "partialAligned" and partial.agreement == "close"
    verified = by_key[("art000.0_1-1-1-0", "art000.0_1-0-1-0")]
    assert verified.candidate is not None and verified.candidate.score == pytest.approx(0.61)
    assert verified.cells["verified"].label == "notAligned" and verified.cells["run"].label == "aligned"
    assert verified.cells["reference"].implied and verified.agreement == "disagree"
    quiet = by_key[("art000.0_1-1-1-1", "art000.0_1-0-0-1")]
    assert quiet.quiet and quiet.cells["run"].implied
    assert [r.order for r in c.rows] == sorted(r.order for r in c.rows)
    assert c.agreement_counts["disagree"] >= 1 and c.n_candidates == 2 and c.n_verified == 1 and c.n_predicted == 4
    other = pair_alignments.compare(pair, older.pk)
    assert other.run == older and other.n_predicted == 1


def test_pair_page_shows_the_sources_and_a_run_selector(client_for: Any, verifier: Any) -> None:
    pair, older, run = labelled_pair()
    client = client_for(verifier)
    url = reverse("curation:pair_detail", args=[pair.pk])
    html = client.get(url).content.decode()
    assert 'id="alignments"' in html and f'<option value="{run.pk}" selected>' in html and f'<option value="{older.pk}"' in html
    assert html.count('class="pa-row') == 4  # the candidate nobody aligned is behind "Show every candidate too"
    assert "0.750" in html and "0.610" in html and "pa-row disagree" in html and "js/pair.js" in html
    assert 'class="js-toggle-sids"' in html and "hide-sids" in html
    everything = client.get(url + "?all=1").content.decode()
    assert everything.count('class="pa-row') == 5
    older_page = client.get(url + f"?run={older.pk}").content.decode()
    assert f'<option value="{older.pk}" selected>' in older_page and "0.200" in older_page
