"""Studies through the services: sampling, controls, serving with balanced positions, one page
per item and rater, the minimum time, idempotency, validation, flags and exclusion."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.evaluation.services import assignment, raters, rating, studies
from annotation.evaluation.tests.factories import full_ratings, items, make_study
from annotation.models import EvalItem, EvalOutput, EvalPage, Rating, StudyRater

pytestmark = pytest.mark.django_db


def rate_all(study, users, value=None):  # type: ignore[no-untyped-def]
    for user in users:
        while (page := assignment.next_page(study, user)) is not None:
            rating.submit_page(user, page.token, full_ratings(study, len(page.order), value))


def test_sampling_is_seeded_and_bounded():
    a = studies.create_study("a", studies.StudySettings("likert", sample_size=4, seed=7), items(6))
    b = studies.create_study("b", studies.StudySettings("likert", sample_size=4, seed=7), items(6))
    c = studies.create_study("c", studies.StudySettings("likert", sample_size=4, seed=8), items(6))
    keys = lambda s: sorted(s.items.values_list("key", flat=True))  # noqa: E731
    assert keys(a) == keys(b) and len(keys(a)) == 4
    assert keys(a) != keys(c)
    assert a.source_info["input_items"] == 6 and a.source_info["sampled_items"] == 4
    assert a.instructions.startswith("You will see")  # the design's default instructions


def test_slider_controls_substitute_four_to_eight_words_from_the_corpus():
    study = make_study("slider")
    controls = list(EvalOutput.objects.filter(item__study=study, is_control=True).select_related("item"))
    assert len(controls) == study.items.count()
    vocab_texts = " ".join(o.text for o in EvalOutput.objects.filter(item__study=study, is_control=False)).lower()
    vocab_texts += " " + " ".join(i.source + " " + " ".join(i.references) for i in study.items.all()).lower()
    for c in controls:
        base = EvalOutput.objects.get(item=c.item, system=c.control["base_system"])
        replaced = c.control["replaced"]
        n_words = sum(1 for t in base.text.split() if t.strip(".,").isalpha() and len(t.strip(".,")) > 1)
        assert min(4, n_words) <= len(replaced) <= 8
        tokens, base_tokens = c.text.split(), base.text.split()
        assert len(tokens) == len(base_tokens)
        for pos, old, new in replaced:
            assert base_tokens[pos].strip(".,") == old and new.lower() in vocab_texts and new.lower() != old.lower()
        assert sum(a != b for a, b in zip(tokens, base_tokens, strict=True)) == len(replaced)
        assert c.system == ""


def test_comparative_needs_references_and_always_shows_them():
    bad = items(2)
    bad[1].references = []
    with pytest.raises(studies.StudyError, match="compares with the reference"):
        studies.create_study("c", studies.StudySettings("comparative"), bad)
    study = make_study("comparative")
    assert study.show_reference


def test_positions_are_balanced_and_a_rater_never_gets_an_item_twice(make_user):
    # 3 systems (odd): a Williams design has 6 rows; 6 items x 3 raters = 18 slots = 3 blocks
    study = make_study("likert", n_items=6, raters=3)
    users = [make_user(f"r{i}", "annotator") for i in range(4)]
    rate_all(study, users)
    pages = list(EvalPage.objects.filter(study=study))
    assert len(pages) == 18 and all(p.answered_at for p in pages)
    assert len({(p.rater_id, p.item_id) for p in pages}) == 18
    system_of = dict(EvalOutput.objects.filter(item__study=study).values_list("pk", "system"))
    counts = Counter((system_of[pk], pos) for p in pages for pos, pk in enumerate(p.order))
    assert set(counts.values()) == {6}, counts  # each system 6 times in each of the 3 positions
    assert len({tuple(system_of[pk] for pk in p.order) for p in pages}) == 6  # all six orders used
    # the recorded seed and slot reproduce the order
    from annotation.evaluation.balance import page_members

    for p in pages:
        names, seed = page_members(study.systems, study.seed, p.slot)
        assert [system_of[pk] for pk in p.order] == names and seed == p.seed
    assert all(i.ratings_count == 3 and i.reserved_count == 0 for i in EvalItem.objects.filter(study=study))


def test_slider_control_takes_part_in_the_balance(make_user):
    # 3 systems + control = 4 members (even): 4 rows; 4 items x 4 raters = 16 slots
    study = make_study("slider", n_items=4, raters=4)
    rate_all(study, [make_user(f"r{i}", "annotator") for i in range(4)], value=10)
    controls = set(EvalOutput.objects.filter(item__study=study, is_control=True).values_list("pk", flat=True))
    counts = Counter(pos for p in EvalPage.objects.filter(study=study) for pos, pk in enumerate(p.order) if pk in controls)
    assert counts == {0: 4, 1: 4, 2: 4, 3: 4}


def test_min_time_idempotency_and_validation(make_user):
    study = make_study("likert", min_seconds=30)
    user = make_user("anna", "annotator")
    page = assignment.next_page(study, user)
    with pytest.raises(rating.TooFast, match="30 seconds per page"):
        rating.submit_page(user, page.token, full_ratings(study, 3))
    later = timezone.now() + timedelta(seconds=31)
    with pytest.raises(rating.InvalidRatings, match="version\\(s\\) 3 have no rating"):
        rating.submit_page(user, page.token, full_ratings(study, 2), now=later)
    bad = full_ratings(study, 3)
    bad[1]["values"]["fluency"] = 6  # type: ignore[index]
    with pytest.raises(rating.InvalidRatings, match="version 2: Fluency must be a whole number from 1 to 5"):
        rating.submit_page(user, page.token, bad, now=later)
    bad[1]["values"]["fluency"] = 2.5  # type: ignore[index]
    with pytest.raises(rating.InvalidRatings):
        rating.submit_page(user, page.token, bad, now=later)
    assert not Rating.objects.exists()
    first = rating.submit_page(user, page.token, full_ratings(study, 3), now=later)
    again = rating.submit_page(user, page.token, full_ratings(study, 3, value=1), now=later)
    assert not first.duplicate and again.duplicate and again.answered == 1
    assert Rating.objects.count() == 9 and set(Rating.objects.values_list("value", flat=True)) == {3.0}
    other = make_user("eve", "annotator")
    with pytest.raises(rating.PageGone):
        rating.submit_page(other, page.token, full_ratings(study, 3))


def test_expired_pages_go_back_to_the_queue(make_user):
    study = make_study("likert", n_items=1, raters=1)
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    page = assignment.next_page(study, a)
    assert assignment.next_page(study, b) is None
    EvalPage.objects.filter(pk=page.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert assignment.release_expired(study) == 1
    assert assignment.next_page(study, b) is not None
    with pytest.raises(rating.PageGone):
        rating.submit_page(a, page.token, full_ratings(study, 3))


def test_closed_study_and_pending_pages(make_user):
    study = make_study("likert")
    user = make_user("a", "annotator")
    first = assignment.next_page(study, user)
    second = assignment.next_page(study, user, exclude=(first.token,))
    assert second and second.token != first.token
    assert assignment.next_page(study, user, exclude=(first.token, second.token)) is None  # two pending at most
    assert assignment.next_page(study, user).token == first.token  # resumes
    studies.set_status(study, "closed")
    with pytest.raises(assignment.StudyClosed):
        assignment.next_page(study, user)


def test_control_failures_flag_and_exclusion_keeps_ratings_apart(make_user):
    study = make_study("slider", n_items=6, raters=2, min_control_pages=3, flag_share=0.2)
    careless, careful = make_user("careless", "annotator"), make_user("careful", "annotator")
    rate_all(study, [careless], value=90)  # scores the control 90 > 20 on every page
    rate_all(study, [careful], value=10)
    m_bad = StudyRater.objects.get(study=study, rater=careless)
    m_good = StudyRater.objects.get(study=study, rater=careful)
    assert m_bad.flagged and m_bad.control_pages == 6 and m_bad.control_failed == 6
    assert not m_good.flagged and m_good.control_failed == 0
    n = Rating.objects.filter(rater=careless).count()
    assert raters.exclude_rater(study, careless.pk) == n
    assert raters.exclude_rater(study, careless.pk) == 0  # idempotent
    assert Rating.objects.filter(rater=careless, is_valid=False).count() == n  # kept, apart
    assert all(i.ratings_count == 1 for i in EvalItem.objects.filter(study=study))  # back in the queue
    with pytest.raises(assignment.RaterExcluded):
        assignment.next_page(study, careless)
    figures = {f.username: f for f in raters.rater_figures(study)}
    assert figures["careless"].excluded and figures["careless"].control_fail_share == 1.0
    assert figures["careless"].mean_control_score == 90 and figures["careful"].mean_control_score == 10
    assert figures["careful"].straight_share == 1.0  # every version got the same value


def test_update_settings_refuses_design_changes():
    study = make_study("likert")
    studies.update_settings(study, instructions="Rate carefully.", min_seconds=5)
    study.refresh_from_db()
    assert study.instructions == "Rate carefully." and study.min_seconds == 5
    with pytest.raises(studies.StudyError, match="cannot change design"):
        studies.update_settings(study, design="slider")


def test_the_models_design_choices_are_the_designs():
    from annotation.evaluation.designs import DESIGNS
    from annotation.models import Study

    assert dict(Study.Design.choices) == {key: d.label for key, d in DESIGNS.items()}
