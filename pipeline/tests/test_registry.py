"""Model registry: promotion (one per language), baselines on the shared split, comparison page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import CandidatePair, VerifiedLabel
from pipeline.models import ModelVersion
from pipeline.services import registry
from pipeline.services.prepopulate import prepopulate
from pipeline.tests.pipeline_corpus import build_corpus, expected_alignment

pytestmark = pytest.mark.django_db

METRICS = {
    "dev": {"task1": {"precision": 0.9, "recall": 0.8, "f1": 0.847}, "task2": {"precision": 0.7, "recall": 0.6, "f1": 0.646}},
    "test": {"task1": {"precision": 0.88, "recall": 0.81, "f1": 0.8436}, "task2": {"precision": 0.5, "recall": 0.4, "f1": 0.444}},
}


def version(name: str, language: str = "en", path: str = "/models/x", **kw) -> ModelVersion:  # type: ignore[no-untyped-def]
    return ModelVersion.objects.create(name=name, method="crf" if path else "jaccard", language=language, path=path,
                                       metrics=METRICS, **kw)


def test_promote_keeps_one_per_language() -> None:
    a, b, de = version("a"), version("b"), version("de", language="de")
    registry.promote(a)
    registry.promote(de)
    registry.promote(b)
    assert set(ModelVersion.objects.filter(is_promoted=True).values_list("name", flat=True)) == {"b", "de"}
    assert registry.promoted_for("en") == b and registry.promoted_for("fr") is None


def test_comparison_rows_follow_table_2_columns() -> None:
    version("trained")
    version("baseline", path="")
    rows = registry.comparison("en")
    assert [r.version.name for r in rows] == ["trained", "baseline"] and rows[1].is_baseline
    assert len(rows[0].cells) == 12
    first = dict(zip(registry.TABLE_COLUMNS, rows[0].cells, strict=True))
    assert first[("task1", "dev", "f1")] == pytest.approx(0.847) and first[("task2", "test", "recall")] == 0.4
    assert rows[0].display[:3] == ["90.0", "80.0", "84.7"]
    assert registry.comparison("de") == []


def test_baseline_is_scored_on_the_retraining_split() -> None:
    corpus = build_corpus(n_articles=6)
    prepopulate(list(corpus.pairs.values_list("pk", flat=True)))
    gold = expected_alignment(corpus)
    for c in CandidatePair.objects.all():
        VerifiedLabel.objects.create(candidate=c, label="aligned" if (c.simple_id, c.complex_id) in gold else "notAligned")
    v = registry.evaluate_baseline("jaccard", "en", corpus=corpus, seed=1)
    assert v.path == "" and v.metrics["test"]["task1"]["f1"] == pytest.approx(1.0)
    again = registry.evaluate_baseline("jaccard", "en", corpus=corpus, seed=1)
    assert again.pk == v.pk and ModelVersion.objects.count() == 1  # refreshed, not duplicated
    with pytest.raises(ValueError):
        registry.evaluate_baseline("crf", "en", corpus=corpus)


def test_models_page_and_promote(client_for, researcher, verifier) -> None:  # type: ignore[no-untyped-def]
    trained = version("trained v1")
    base = version("jaccard baseline", path="")
    page = client_for(verifier).get(reverse("pipeline:model_list")).content.decode()
    assert "trained v1" in page and "84.7" in page and "44.4" in page and "Promote" not in page
    client = client_for(researcher)
    assert "Promote" in client.get(reverse("pipeline:model_list")).content.decode()
    client.post(reverse("pipeline:model_promote", args=[base.pk]))
    base.refresh_from_db()
    assert not base.is_promoted
    resp = client.post(reverse("pipeline:model_promote", args=[trained.pk]))
    assert resp.status_code == 302
    trained.refresh_from_db()
    assert trained.is_promoted
    assert "promoted" in client.get(reverse("pipeline:model_detail", args=[trained.pk])).content.decode()


def test_verifier_cannot_promote(client_for, verifier) -> None:  # type: ignore[no-untyped-def]
    v = version("x")
    assert client_for(verifier).post(reverse("pipeline:model_promote", args=[v.pk])).status_code == 403
    v.refresh_from_db()
    assert not v.is_promoted


def test_start_forms_create_jobs(client_for, researcher, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    from pipeline.models import Job

    corpus = build_corpus(n_articles=2)
    client = client_for(researcher)
    assert "Pre-populate" in client.get(reverse("pipeline:job_start")).content.decode()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        r1 = client.post(reverse("pipeline:job_start"), {"action": "align", "corpus": corpus.pk, "method": "tfidf",
                                                         "chunk_size": 1})
        r2 = client.post(reverse("pipeline:job_start"), {"action": "prepopulate", "corpus": corpus.pk,
                                                         "similarity": "tfidf", "top_k": 3, "pair_ids": "art0.0_1"})
        r3 = client.post(reverse("pipeline:job_start"), {"action": "retrain", "corpus": corpus.pk, "language": "en",
                                                         "seed": 1, "ratios": "0.7,0.1,0.2", "crf_epochs": 2})
    assert [r.status_code for r in (r1, r2, r3)] == [302, 302, 302]
    assert len(callbacks) == 3  # tasks go out only on commit (not run here)
    kinds = dict(Job.objects.values_list("kind", "params"))
    assert kinds["align_corpus"]["method"] == "tfidf" and kinds["align_corpus"]["pairs"] == 2
    assert kinds["prepopulate"]["pair_ids"] == [corpus.pairs.get(pair_id="art0.0_1").pk]
    assert kinds["retrain"]["config"] == {"crf_epochs": 2} and kinds["retrain"]["seed"] == 1
    bad = client.post(reverse("pipeline:job_start"), {"action": "retrain", "language": "en", "seed": 0,
                                                      "ratios": "1,2", "crf_epochs": 1})
    assert bad.status_code == 200 and "three" in bad.content.decode()


def test_retrain_form_sends_the_engine_defaults_unless_an_advanced_field_changed(db) -> None:  # type: ignore[no-untyped-def]
    from alignment_engine.crf_config import CRFConfig
    from pipeline.forms import RetrainForm

    defaults = CRFConfig()
    unbound = RetrainForm()
    assert unbound["crf_epochs"].initial == defaults.crf_epochs and unbound["emission"].initial == defaults.emission
    assert f"default {defaults.encoder_steps}" in unbound.fields["encoder_steps"].help_text
    base = {"language": "en", "seed": 0, "ratios": "0.7,0.1,0.2"}
    # the page as shown (defaults filled in) and a bare POST both train CRFConfig() exactly
    for data in (base, base | {"emission": defaults.emission, "crf_epochs": defaults.crf_epochs,
                               "encoder_steps": defaults.encoder_steps, "members": defaults.members}):
        form = RetrainForm(data)
        assert form.is_valid(), form.errors
        assert form.job_params()["config"] == {}
    form = RetrainForm(base | {"emission": "encoder", "encoder_steps": 50, "crf_epochs": defaults.crf_epochs})
    assert form.is_valid(), form.errors
    assert form.job_params()["config"] == {"emission": "encoder", "encoder_steps": 50}
    form = RetrainForm(base | {"members": 1})  # a single model instead of the default's ensemble
    assert form.is_valid(), form.errors
    assert form.job_params()["config"] == ({"members": 1} if defaults.members != 1 else {})
    assert not RetrainForm(base | {"members": 0}).is_valid()
    # encoder steps mean nothing without an encoder
    form = RetrainForm(base | {"emission": "lexical", "encoder_steps": 50})
    assert form.is_valid() and form.job_params()["config"] == {}


def test_start_page_has_unique_ids_and_carries_the_corpus(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    import re
    from collections import Counter

    corpus = build_corpus(n_articles=1)
    page = client_for(researcher).get(reverse("pipeline:job_start") + f"?corpus={corpus.pk}").content.decode()
    ids = Counter(re.findall(r'\sid="([^"]+)"', page))
    assert ids and not [i for i, n in ids.items() if n > 1], ids
    selected = re.findall(rf'<option value="{corpus.pk}" selected>', page)
    assert len(selected) == 3  # pre-populate, align and retrain all start on the corpus the user came from
    for name in ("prepopulate-corpus", "align-corpus", "retrain-corpus"):
        assert f'for="{name}"' in page or f'id="{name}"' in page
    assert "<details class=\"advanced\"" in page


def test_a_version_without_test_metrics_is_promoted_only_with_force(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import CommandError, call_command

    empty = ModelVersion.objects.create(name="empty splits", method="crf", language="en", path="/models/e",
                                        metrics={"dev": {}, "test": {}},
                                        data_counts={"train": {"pairs": 3, "labels": 9, "aligned": 3},
                                                     "dev": {"pairs": 0}, "test": {"pairs": 0}})
    with pytest.raises(registry.PromotionRefused, match="no test metrics"):
        registry.promote(empty)
    client = client_for(researcher)
    page = client.get(reverse("pipeline:model_detail", args=[empty.pk])).content.decode()
    assert "The test split is empty" in page and "Promote anyway" in page and 'name="force"' in page
    assert "no test metrics" in client.get(reverse("pipeline:model_list")).content.decode()
    client.post(reverse("pipeline:model_promote", args=[empty.pk]))
    empty.refresh_from_db()
    assert not empty.is_promoted
    with pytest.raises(CommandError, match="--force"):
        call_command("promote_model", str(empty.pk))
    empty.refresh_from_db()
    assert not empty.is_promoted
    client.post(reverse("pipeline:model_promote", args=[empty.pk]), {"force": "1"})
    empty.refresh_from_db()
    assert empty.is_promoted
    other = version("good")
    call_command("promote_model", "good")
    other.refresh_from_db()
    assert other.is_promoted
    with pytest.raises(CommandError, match="baseline"):
        call_command("promote_model", str(version("jaccard b", path="").pk), "--force")


def test_model_page_shows_table_2_counts_and_configuration(client_for, researcher) -> None:  # type: ignore[no-untyped-def]
    from alignment_engine.crf_config import CRFConfig

    v = version("v1", config={"train": {"crf_epochs": 7}, "ratios": [0.7, 0.1, 0.2], "splits": {"train": ["a1", "a2"]}},
                data_counts={s: {"articles": 1, "pairs": 2, "labels": 5, "aligned": 2, "partialAligned": 1, "notAligned": 2}
                             for s in ("train", "dev", "test")})
    version("v2")
    client = client_for(researcher)
    html = client.get(reverse("pipeline:model_detail", args=[v.pk])).content.decode()
    assert '<table class="table metrics">' in html and '<td class="num f1">84.7</td>' in html and "44.4" in html
    assert '<table class="table counts">' in html and "Labels per split" in html
    assert "<dt>crf_epochs</dt><dd class=\"mono\"><strong>7</strong></dd>" in html
    assert f"<dt>hidden</dt><dd class=\"mono\">{CRFConfig().hidden}</dd>" in html
    assert "{&#x27;" not in html
    listing = client.get(reverse("pipeline:model_list")).content.decode()
    assert "F1 of retrained models over time" in listing and listing.count("<circle") == 8  # 2 versions x 4 series


def test_model_page_shows_the_configuration_the_model_directory_stores(client_for, researcher, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What trained the model, even where a default has changed since it was trained (its job sent no option)."""
    import json

    from alignment_engine.crf_config import CRFConfig

    stored = {**CRFConfig().to_dict(), "members": 1 if CRFConfig().members != 1 else 3, "hidden": 16}
    (tmp_path / "model.json").write_text(json.dumps({"format_version": 2, "kind": "crf", "config": stored}))
    v = version("v1", path=str(tmp_path), config={"train": {}})
    html = client_for(researcher).get(reverse("pipeline:model_detail", args=[v.pk])).content.decode()
    assert f'<dt>members</dt><dd class="mono"><strong>{stored["members"]}</strong></dd>' in html
    assert '<dt>hidden</dt><dd class="mono"><strong>16</strong></dd>' in html
    assert f'<dt>crf_epochs</dt><dd class="mono">{CRFConfig().crf_epochs}</dd>' in html


def test_model_page_shows_a_seed_ensembles_members(client_for, researcher, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each member's held-out dev F1 next to the ensemble's, from model.json (what train_model writes)."""
    import json

    def dev(f1: float) -> dict:
        return {"task1": {"precision": 0.8, "recall": 0.7, "f1": f1}}

    meta = {"format_version": 2, "kind": "crf", "dev_metrics": dev(0.7834),
            "ensemble": {"members": 3, "seeds": [0, 1, 2], "workers": 2, "seconds": 1079.6,
                         "member_dev_metrics": [dev(0.7637), dev(0.7635), {"task1": {"f1": "broken"}}]}}
    (tmp_path / "model.json").write_text(json.dumps(meta))
    client = client_for(researcher)
    html = client.get(reverse("pipeline:model_detail", args=[version("v1", path=str(tmp_path)).pk])).content.decode()
    assert "<h2>Seed ensemble</h2>" in html
    for name, value in (("members", "3"), ("seeds", "0, 1, 2"), ("dev Task 1 F1 of the ensemble (held out)", "78.3"),
                        ("member 0 (seed 0) alone", "76.4"), ("member 1 (seed 1) alone", "76.3"),
                        ("member 2 (seed 2) alone", "—"), ("training", "18.0 min, 2 runs at a time")):
        assert f'<dt>{name}</dt><dd class="mono">{value}</dd>' in html, name
    (tmp_path / "model.json").write_text(json.dumps({**meta, "ensemble": None}))  # a single model: no card
    single = client.get(reverse("pipeline:model_detail", args=[version("v2", path=str(tmp_path)).pk]))
    assert single.status_code == 200 and "Seed ensemble" not in single.content.decode()


def test_retrain_ratios_refuse_nan_infinity_and_other_shapes(db) -> None:  # type: ignore[no-untyped-def]
    from pipeline.forms import RetrainForm

    for ratios in ("nan,nan,nan", "inf,1,1", "0.7,0.1,-0.2", "1,2", "a,b,c", "0,0,0"):
        form = RetrainForm({"language": "en", "seed": 0, "ratios": ratios})
        assert not form.is_valid() and "ratios" in form.errors, ratios
    form = RetrainForm({"language": "en", "seed": 0, "ratios": "0.7, 0.1, 0.2"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["ratios"] == [0.7, 0.1, 0.2]


def test_model_page_shows_what_trained_the_model(client_for, researcher, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from alignment_engine import model_store

    env = model_store.environment()
    (tmp_path / "model.json").write_text(json.dumps({"format_version": 2, "kind": "crf", "environment": env}))
    client = client_for(researcher)
    html = client.get(reverse("pipeline:model_detail", args=[version("v1", path=str(tmp_path)).pk])).content.decode()
    assert "<h2>Trained with</h2>" in html
    assert f'<dt>torch</dt><dd class="mono">{env["packages"]["torch"]}</dd>' in html  # type: ignore[index]
    assert '<dt>CRF float type</dt><dd class="mono">float64</dd>' in html
    gone = client.get(reverse("pipeline:model_detail", args=[version("v2", path=str(tmp_path / "gone")).pk]))
    assert gone.status_code == 200 and "Trained with" not in gone.content.decode()
    (tmp_path / "model.json").write_text("{not json")  # unreadable: the rest of the page still shows
    broken = client.get(reverse("pipeline:model_detail", args=[version("v3", path=str(tmp_path)).pk]))
    assert broken.status_code == 200 and "Trained with" not in broken.content.decode() and "84.7" in broken.content.decode()
