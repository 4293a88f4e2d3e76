"""Labeling-job items chosen by the promoted CRF's uncertainty: the pipeline's model source gives
annotation the model directory; the chosen items are the top-scored candidates under the engine's
own scores, capped per document pair, with their reasons on the job page."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from alignment_engine import active
from alignment_engine.crf_aligner import CRFAligner
from alignment_engine.training import train_model
from alignment_engine.types import Alignment
from annotation.models import CandidatePair
from annotation.services import job_setup, selection
from annotation.tests.factories import make_corpus
from curation.plain import load_plain_pairs
from pipeline.models import ModelVersion

FAST = {"emission": "lexical", "crf_epochs": 2, "hidden": 8, "transition_hidden": 4, "decoder": "rule"}


def _train(corpus, out: Path, seed: int) -> Path:  # type: ignore[no-untyped-def]
    plains = load_plain_pairs(corpus.pairs.values_list("pk", flat=True))
    gold = []
    for plain in plains:
        complex_ids = set(plain.doc.complex_ids())
        for sid in plain.doc.simple_ids():
            cid = sid.replace("-0-", "-1-", 1)  # same paragraph and position on the complex side
            if cid in complex_ids:
                gold.append(Alignment("aligned", sid, cid))
    return train_model([p.doc for p in plains], gold, out_dir=out, seed=seed, device="cpu", **FAST)  # type: ignore[arg-type]


@pytest.fixture
def promoted(db, tmp_path):  # type: ignore[no-untyped-def]
    corpus = make_corpus(n_articles=2)
    model_dir = _train(corpus, tmp_path / "m0", 0)
    version = ModelVersion.objects.create(name="tiny crf", method="crf", language="en", path=str(model_dir),
                                          is_promoted=True)
    return corpus, version


def test_margin_chooses_the_model_s_least_certain_candidates(promoted) -> None:  # type: ignore[no-untyped-def]
    corpus, version = promoted
    job = job_setup.create_job(name="active", corpus=corpus, created_by=None, settings=job_setup.JobSettings(
        selection=selection.Selection("margin", budget=6, per_document=3)))
    items = list(job.items.order_by("-selection_score").values_list("candidate_id", "selection_score",
                                                                    "selection_reason", "candidate__pair_id"))
    assert len(items) == 6 and max(Counter(i[3] for i in items).values()) <= 3
    assert all(reason.startswith("P(aligned) ") for _, _, reason, _ in items)
    assert job.selection["model"] == f"#{version.pk} tiny crf" and job.selection["strategy"] == "margin"
    # recompute every candidate's margin from the model: the chosen ones are the best of each pair's
    plains = load_plain_pairs(corpus.pairs.values_list("pk", flat=True))
    probs = dict(zip((p.pk for p in plains), active.model_probabilities(CRFAligner.load(version.path, "cpu"),
                                                                        [p.doc for p in plains]), strict=True))
    index = {plain.sentence_pk[sid]: i for plain in plains for i, sid in enumerate(plain.doc.simple_ids())} | \
        {plain.sentence_pk[cid]: j for plain in plains for j, cid in enumerate(plain.doc.complex_ids())}
    margin = {pk: float(active.margin(probs[pair].prob[index[s], index[c]]))
              for pk, pair, s, c in CandidatePair.objects.filter(pair__corpus=corpus).values_list(
                  "pk", "pair_id", "simple_id", "complex_id")}
    for cand, score, _, pair in items:
        assert score == pytest.approx(margin[cand], abs=1e-5)
        others = [m for pk, m in margin.items() if pk not in {i[0] for i in items}
                  and CandidatePair.objects.get(pk=pk).pair_id == pair]
        assert all(m <= score + 1e-6 for m in others)  # type: ignore[operator]  # nothing better left behind in the same document


def test_versions_and_directions(promoted, tmp_path, client, researcher) -> None:  # type: ignore[no-untyped-def]
    corpus, _ = promoted
    other = ModelVersion.objects.create(name="other", method="crf", language="en",
                                        path=str(_train(corpus, tmp_path / "m1", 5)))
    job = job_setup.create_job(name="versions", corpus=corpus, created_by=None, settings=job_setup.JobSettings(
        selection=selection.Selection("versions", budget=4, second_version=other.pk)))
    assert job.items.count() == 4 and job.selection["second_model"] == f"#{other.pk} other"
    assert all("version A" in r for r in job.items.values_list("selection_reason", flat=True))
    directions = job_setup.create_job(name="directions", corpus=corpus, created_by=None, settings=job_setup.JobSettings(
        selection=selection.Selection("directions", budget=4)))
    assert all(r.startswith("forward CRF") for r in directions.items.values_list("selection_reason", flat=True))
    client.force_login(researcher)
    page = client.get(reverse("annotation:job_detail", args=[directions.pk])).content.decode()
    assert "Why these pairs" in page and "forward CRF" in page and "tiny crf" in page
    baseline = ModelVersion.objects.create(name="jaccard", method="jaccard", language="en", path="")
    with pytest.raises(job_setup.JobError, match="without posterior marginals"):
        job_setup.create_job(name="bad", corpus=corpus, created_by=None, settings=job_setup.JobSettings(
            selection=selection.Selection("versions", budget=4, second_version=baseline.pk)))


def test_a_mixed_batch_draws_a_random_share(promoted) -> None:  # type: ignore[no-untyped-def]
    corpus, _ = promoted
    job = job_setup.create_job(name="mixed", corpus=corpus, created_by=None, settings=job_setup.JobSettings(
        selection=selection.Selection("margin", budget=6, per_document=3, random_share=0.5, seed=2)))
    reasons = list(job.items.values_list("selection_reason", flat=True))
    assert len(reasons) == 6 and sum(r.startswith("random share (seed 2); P(aligned) ") for r in reasons) == 3
    assert sum(r.startswith("P(aligned) ") for r in reasons) == 3
    assert max(Counter(job.items.values_list("candidate__pair_id", flat=True)).values()) <= 3
    assert job.selection["random_share"] == 0.5
    with pytest.raises(selection.SelectionError, match="random share"):
        selection.Selection("random", budget=3, random_share=0.5)
    with pytest.raises(selection.SelectionError, match="between 0 and 1"):
        selection.Selection("margin", budget=3, random_share=2.0)
