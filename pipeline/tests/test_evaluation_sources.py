"""Exported datasets as a source of evaluation items: the registered glue
(pipeline/evaluation_sources.py) lists exports, finds their folder, and the new-study page and
the command build a study from an export's test split."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotation.evaluation import sources
from annotation.models import Study
from curation.models import Corpus
from pipeline.models import ExportedDataset

pytestmark = pytest.mark.django_db

TEST_SPLIT = (
    "aligned\tp1-0-0-0\tp1-1-0-0\tRain flooded villages.\tHeavy rain caused flooding in several villages.\t\n"
    "aligned\tp2-0-0-0\tp2-1-0-0\tA museum will open.\tThe museum will open a new exhibition next month.\t\n"
)


@pytest.fixture
def export(tmp_path, settings):  # type: ignore[no-untyped-def]
    settings.EXPORTS_DIR = tmp_path
    folder = tmp_path / "1-manual-1"
    folder.mkdir()
    (folder / "test.tsv").write_text(TEST_SPLIT)
    corpus = Corpus.objects.create(name="toy", language="en")
    return ExportedDataset.objects.create(corpus=corpus, kind="manual", path="1-manual-1", files=[{"name": "test.tsv"}])


def test_the_pipeline_registers_exports_as_a_source(export, tmp_path):
    assert [pk for pk, _ in sources.export_choices()] == [export.pk]
    folder, info = sources.export_folder(export.pk)
    assert folder == tmp_path / "1-manual-1" and info["export"] == export.pk and info["export_files"] == ["test.tsv"]
    with pytest.raises(sources.ExportNotFound, match="export #999"):
        sources.export_folder(999)


def test_create_from_an_export_split(client, researcher, tmp_path, settings):
    settings.EXPORTS_DIR = tmp_path
    folder = tmp_path / "1-manual-1"
    folder.mkdir()
    (folder / "test.tsv").write_text(
        "aligned\tp1-0-0-0\tp1-1-0-0\tRain flooded villages.\tHeavy rain caused flooding in several villages.\t\n"
        "aligned\tp2-0-0-0\tp2-1-0-0\tA museum will open.\tThe museum will open a new exhibition next month.\t\n"
    )
    corpus = Corpus.objects.create(name="toy", language="en")
    export = ExportedDataset.objects.create(corpus=corpus, kind="manual", path="1-manual-1", files=[{"name": "test.tsv"}])
    client.force_login(researcher)
    r = client.post(reverse("evaluation:new"), {
        "name": "From export", "design": "comparative", "export": str(export.pk), "split": "test", "reference_as_system": "on",
        "outputs_file": SimpleUploadedFile("sys.tsv", b"item_id\tsystem\toutput\np1-1-0-0\tm\tRain flooded many villages.\np2-1-0-0\tm\tA new show opens.\n"),
        "raters_per_item": 5, "sample_size": 100, "seed": 0, "min_seconds": 20, "control_threshold": 20, "flag_share": 0.2,
    })
    assert r.status_code == 302, r.content.decode()[:2000]
    study = Study.objects.get(name="From export")
    assert study.systems == ["m", "reference"] and study.show_reference
    item = study.items.get(key="p1-1-0-0")
    assert item.source.startswith("Heavy rain") and item.references == ["Rain flooded villages."]
    assert study.source_info["export"] == export.pk and study.source_info["split"] == "test"




def test_create_from_an_export_on_the_command_line(export):
    out = StringIO()
    call_command("evaluation_study", "create", "CLI export", "--design", "likert", "--export", str(export.pk), "--reference-as-system", stdout=out)
    study = Study.objects.get(name="CLI export")
    assert study.systems == ["reference"] and study.items.count() == 2 and study.source_info["export"] == export.pk
