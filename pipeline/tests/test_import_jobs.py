"""The upload page: files or an archive become an import job on the worker (eager Celery here),
with its progress on the job page; errors name the uploaded file, never the storage folder."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from config.celery import app
from curation.models import Article, DocumentPair, ImportRecord, ReferenceAlignment
from curation.tests.conftest import DEMO_DIR, row_counts
from pipeline.models import Job
from pipeline.services import imports

PAIR = {"pair_id": "p1", "complex": [["The long original sentence is here."]], "simple": [["A simple sentence stays here."]]}
FORM = {"language": "en", "kind": "news", "role": "gold"}

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def imports_dir(settings: Any, tmp_path: Path) -> Path:
    settings.IMPORTS_DIR = tmp_path / "imports"
    return settings.IMPORTS_DIR


@pytest.fixture
def eager() -> Any:
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = old


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def post(client: Any, capture: Any, files: list[SimpleUploadedFile], **data: Any) -> Any:
    with capture(execute=True):
        response = client.post(reverse("pipeline:import_upload"), dict(FORM, files=files, **data))
    return response


def demo_files(*slugs: str) -> list[SimpleUploadedFile]:
    return [upload(p.name, p.read_bytes()) for slug in slugs for p in sorted(DEMO_DIR.glob(f"{slug}.*.txt"))]


def test_upload_page_runs_several_files_as_a_job(client_for, admin_user, eager, django_capture_on_commit_callbacks, imports_dir) -> None:  # type: ignore[no-untyped-def]
    client = client_for(admin_user)
    page = client.get(reverse("pipeline:import_upload"))
    assert page.status_code == 200 and b'type="file"' in page.content and b"multiple" in page.content
    response = post(client, django_capture_on_commit_callbacks, demo_files("city_bikes", "coral_heat"), format="text", corpus="Uploaded")
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert response.status_code == 302 and response["Location"] == reverse("pipeline:job_detail", args=[job.pk])
    assert job.status == Job.Status.SUCCEEDED and job.progress_done == job.progress_total == 2
    assert "2 articles created" in job.message and job.corpus is not None and job.corpus.name == "Uploaded"
    assert DocumentPair.objects.filter(corpus__name="Uploaded").count() == 4
    record = ImportRecord.objects.get(corpus__name="Uploaded")
    assert record.created_by == admin_user and record.summary["articles_created"] == 2
    assert record.source.startswith("upload: city_bikes.")
    assert not any(imports_dir.iterdir())  # the stored upload is removed once the job finished
    detail = client.get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert 'role="progressbar"' in detail and "2/2 articles (100%)" in detail


def test_bad_upload_fails_the_job_naming_the_uploaded_file(client_for, admin_user, eager, django_capture_on_commit_callbacks, imports_dir) -> None:  # type: ignore[no-untyped-def]
    client = client_for(admin_user)
    before = row_counts()
    files = [upload("a.en.0.txt", b"Fine text here.\n"), upload("a.en.1.txt", b"\xff\x81\x8d\x8f bad\n")]
    post(client, django_capture_on_commit_callbacks, files, format="text", corpus="Uploaded")
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == Job.Status.FAILED
    assert job.message == "import failed, nothing was written: a.en.1.txt:1: neither UTF-8 nor Windows-1252 text"
    assert "Traceback" not in job.error and str(imports_dir) not in job.error
    body = client.get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert "a.en.1.txt:1: neither UTF-8 nor Windows-1252" in body and str(imports_dir) not in body and "/tmp" not in body
    assert row_counts() == before
    assert not any(imports_dir.iterdir())


def test_nothing_to_import_names_the_upload_not_the_folder(client_for, admin_user, eager, django_capture_on_commit_callbacks, imports_dir) -> None:  # type: ignore[no-untyped-def]
    post(client_for(admin_user), django_capture_on_commit_callbacks, [upload("readme.md", b"hello\n")], format="text", corpus="U")
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == Job.Status.FAILED and "nothing to import" in job.message
    assert str(imports_dir) not in job.message and "/tmp" not in job.message


def test_same_name_files_are_refused_with_a_message(client_for, admin_user, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    client = client_for(admin_user)
    files = [upload("x-adv.txt", b"One.\n"), upload("x-int.txt", b"One.\n"), upload("x-int.txt", b"Other.\n")]
    response = post(client, django_capture_on_commit_callbacks, files, format="text", corpus="U")
    assert response.status_code == 200
    assert "chosen more than once (x-int.txt)" in response.content.decode()
    assert not Job.objects.exists() and row_counts()["Article"] == 0


def test_single_jsonl_then_tsv(client_for, admin_user, eager, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    client = client_for(admin_user)
    post(client, django_capture_on_commit_callbacks, [upload("p.jsonl", (json.dumps(PAIR) + "\n").encode())], format="jsonl", corpus="Up")
    assert DocumentPair.objects.filter(pair_id="p1").exists()
    gold = upload("g.tsv", b"aligned\tp1-0-0-0\tp1-1-0-0\ta\tb\n")
    post(client, django_capture_on_commit_callbacks, [gold], format="tsv", corpus="Up", role="labels")
    assert ReferenceAlignment.objects.filter(role="labels").count() == 1
    assert list(Job.objects.values_list("status", flat=True)) == ["succeeded", "succeeded"]


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "pack"), [("corpus.zip", _zip), ("corpus.tar.gz", _tar)])
def test_an_archive_with_folders_imports_and_exclude_applies(client_for, admin_user, eager, django_capture_on_commit_callbacks, name, pack) -> None:  # type: ignore[no-untyped-def]
    files = {
        "texts/adv/Bikes-adv.txt": b"The city opened a large network of shared bicycles on Monday.\n",
        "texts/int/Bikes-int.txt": b"The city opened shared bikes \x93today\x94.\n",  # Windows-1252, like OneStopEnglish
        "texts/int-utf8/Bikes-int.txt": "The city opened shared bikes “today”.\n".encode(),
        "texts/ele/Bikes-ele.txt": b"The city has new bikes.\n",
    }
    client = client_for(admin_user)
    post(client, django_capture_on_commit_callbacks, [upload(name, pack(files))], format="text", corpus="Arch")
    first = Job.objects.get()
    assert first.status == "failed" and "also in" in first.message and "--exclude" in first.message
    assert "texts/int/Bikes-int.txt" in first.message and "/tmp" not in first.message and "unpacked" not in first.message
    post(client, django_capture_on_commit_callbacks, [upload(name, pack(files))], format="text", corpus="Arch", exclude="*/int/*")
    job = Job.objects.order_by("-pk").first()
    assert job is not None and job.status == "succeeded", job.message
    assert Article.objects.get(corpus__name="Arch").documents.count() == 3
    # the same archive again: recognised by the bytes of its files, nothing parsed or written
    post(client, django_capture_on_commit_callbacks, [upload(name, pack(files))], format="text", corpus="Arch", exclude="*/int/*")
    again = Job.objects.order_by("-pk").first()
    assert again is not None and again.result["articles_unchanged"] == 1 and again.result["articles_created"] == 0


@pytest.mark.parametrize("member", ["../evil.txt", "/etc/evil.txt"])
def test_an_archive_pointing_outside_is_refused(tmp_path: Path, member: str) -> None:
    archive = tmp_path / "bad.zip"
    archive.write_bytes(_zip({member: b"x"}))
    with pytest.raises(imports.ImportFailed, match="points outside the archive"):
        imports.unpack(archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


def test_a_tar_link_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tf:
        info = tarfile.TarInfo("link.txt")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    archive = tmp_path / "bad.tar"
    archive.write_bytes(buffer.getvalue())
    with pytest.raises(imports.ImportFailed, match="is a link or device"):
        imports.unpack(archive, tmp_path / "out")


@pytest.mark.parametrize("role", ["annotator", "verifier", "researcher"])
def test_upload_page_is_admin_only(client_for, make_user, role, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user(f"u_{role}", role))
    assert client.get(reverse("pipeline:import_upload")).status_code == 403
    response = post(client, django_capture_on_commit_callbacks, [upload("p.jsonl", json.dumps(PAIR).encode())], format="jsonl", corpus="X")
    assert response.status_code == 403
    assert row_counts()["Article"] == 0 and not Job.objects.exists()


def test_upload_page_imports_deplain_plans(client_for, admin_user, shared_data, eager, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    plans = [shared_data / "deplain-web" / "dev" / f"plan_doc_{n}.csv" for n in (112, 33)]
    post(client_for(admin_user), django_capture_on_commit_callbacks, [upload(p.name, p.read_bytes()) for p in plans],
         format="deplain", corpus="DE upload", language="de", kind="other")
    job = Job.objects.get()
    assert job.status == "succeeded" and "2 articles created" in job.message
    assert set(DocumentPair.objects.values_list("pair_id", flat=True)) == {"112", "33"}
    assert ReferenceAlignment.objects.filter(pair__pair_id="33", role="gold").count() > 0


def test_many_files_are_accepted(settings: Any) -> None:
    assert settings.DATA_UPLOAD_MAX_NUMBER_FILES >= 10_000  # a Newsela-sized leveled corpus is ~9,400 files
