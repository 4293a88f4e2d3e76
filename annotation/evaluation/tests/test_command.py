"""The command line end to end for each design: create from a file, simulated raters through
the real services, status, results (text and JSON), exclude, close and export; bad input
refused with file:line and nothing created."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Rating, Study, StudyRater

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "evaluation-outputs.tsv"

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("evaluation_study", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("design", ["likert", "slider", "comparative"])
def test_each_design_from_the_command_line(design, tmp_path, settings):
    settings.EXPORTS_DIR = tmp_path
    created = run("create", f"CLI {design}", "--design", design, "--outputs", str(EXAMPLE), "--raters", "3", "--min-seconds", "5")
    study = Study.objects.get(name=f"CLI {design}")
    assert f"study #{study.pk}" in created and "6 items" in created
    sim = run("simulate", str(study.pk), "--raters", "5", "--careless", "1" if design == "slider" else "0",
              "--quality", "alpha=4.5,beta=3,gamma=1.5" if design == "likert" else "")
    assert "submitted 18 pages" in sim
    status = run("status", str(study.pk))
    assert "pages rated 18 of 18" in status and "sim-rater-0" in status
    text = run("results", str(study.pk), "--n-boot", "300")
    assert "pairwise" in text and "agreement" in text and "SARI" in text
    data = json.loads(run("results", str(study.pk), "--json", "--n-boot", "300"))
    means = {(s["system"], s["dimension"]): s["mean"] for s in data["scores"]}
    first_dim = data["dimensions"][0]
    assert means[("alpha", first_dim)] > means[("gamma", first_dim)]  # the known order is recovered
    if design == "slider":
        assert StudyRater.objects.get(study=study, rater__username="sim-rater-0").flagged
        assert "kept apart" in run("exclude", str(study.pk), "--rater", "sim-rater-0")
        assert Rating.objects.filter(study=study, is_valid=False).exists()
    assert "closed" in run("close", str(study.pk))
    exported = run("export", str(study.pk))
    assert "ratings.csv" in exported and (tmp_path / "evaluation" / f"study-{study.pk}" / "1" / "card.json").is_file()


def test_bad_input_is_refused_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": 1, "source": "A.", "system": "x", "output": "o"}\n{"item_id": 1, "source": "A.", "system": "x"}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl:2: output of 'x' is missing or empty"):
        run("create", "Bad", "--design", "likert", "--outputs", str(bad))
    with pytest.raises(CommandError, match="no such file"):
        run("create", "Bad", "--design", "likert", "--outputs", str(tmp_path / "missing.tsv"))
    with pytest.raises(CommandError, match="give --outputs, --export"):
        run("create", "Bad", "--design", "likert")
    with pytest.raises(CommandError, match="export #999 does not exist"):
        run("create", "Bad", "--design", "likert", "--export", "999", "--reference-as-system")
    assert not Study.objects.exists()
