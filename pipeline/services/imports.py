"""Corpus imports as jobs: an upload (files, or one .zip / .tar.gz / .tgz / .tar archive) is
stored under ``settings.IMPORTS_DIR`` first, then a worker unpacks it and runs the importer
(``curation.importers.run.run_import``, one transaction) with the job's progress bar.

The view creates the job (:func:`create_import_job`) and enqueues it; the task calls
:func:`run_job`. Errors name files relative to the upload (never the storage folder); the
stored upload is removed once the job has finished, whatever the outcome.
"""

from __future__ import annotations

import dataclasses
import shutil
import tarfile
import uuid
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from django.conf import settings

from curation.importers.run import run_import
from curation.importers.types import ImportFailed, ImportOptions
from curation.models import Corpus
from pipeline import jobs
from pipeline.jobs import Echo, Outcome
from pipeline.models import Job

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
MAX_ARCHIVE_MEMBERS = 100_000
MAX_UNPACKED_BYTES = 8 * 1024**3  # 8 GiB: a Newsela-sized corpus is far smaller


class Upload(Protocol):
    name: str | None

    def chunks(self) -> Iterable[bytes]: ...


def imports_dir() -> Path:
    return Path(settings.IMPORTS_DIR)


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def store_upload(files: Iterable[Upload]) -> tuple[str, list[str]]:
    """Write the uploaded files into a fresh folder under IMPORTS_DIR: (folder name, file names)."""
    key = uuid.uuid4().hex
    folder = imports_dir() / key / "files"
    folder.mkdir(parents=True)
    names: list[str] = []
    for uploaded in files:
        name = PurePosixPath((uploaded.name or "upload").replace("\\", "/")).name or "upload"
        with open(folder / name, "xb") as out:  # names are unique (the form refuses duplicates)
            for chunk in uploaded.chunks():
                out.write(chunk)
        names.append(name)
    return key, names


def create_import_job(files: Iterable[Upload], options: ImportOptions, user: Any = None) -> Job:
    """Store the upload and create its queued job (the caller enqueues it)."""
    key, names = store_upload(files)
    params = {"options": dataclasses.asdict(options) | {"exclude": list(options.exclude)}, "upload": key, "files": names}
    return jobs.create_job(Job.Kind.IMPORT, params, user=user)


def _safe_member(root: Path, name: str, archive: str) -> Path:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not parts or name.startswith("/") or ".." in parts or ":" in parts[0]:
        raise ImportFailed(archive, None, f"archive member {name!r} points outside the archive")
    return root.joinpath(*parts)


def unpack(archive: Path, into: Path) -> None:
    """Extract a .zip or tar archive safely (no absolute paths, no '..', no links, size-bounded)."""
    into.mkdir(parents=True, exist_ok=True)
    total = 0
    if archive.name.lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(archive) as zf:
                members = zf.infolist()
                if len(members) > MAX_ARCHIVE_MEMBERS:
                    raise ImportFailed(archive.name, None, f"more than {MAX_ARCHIVE_MEMBERS} files in the archive")
                for member in members:
                    target = _safe_member(into, member.filename, archive.name)
                    if member.is_dir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    total += member.file_size
                    if total > MAX_UNPACKED_BYTES:
                        raise ImportFailed(archive.name, None, f"unpacks to more than {MAX_UNPACKED_BYTES // 1024**3} GiB")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(member) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out, 1024 * 1024)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as exc:
            raise ImportFailed(archive.name, None, f"not a readable .zip archive ({exc})") from None
        return
    try:
        with tarfile.open(archive) as tf:
            for count, entry in enumerate(tf, start=1):
                if count > MAX_ARCHIVE_MEMBERS:
                    raise ImportFailed(archive.name, None, f"more than {MAX_ARCHIVE_MEMBERS} files in the archive")
                _safe_member(into, entry.name, archive.name)
                if not (entry.isfile() or entry.isdir()):
                    raise ImportFailed(archive.name, None, f"archive member {entry.name!r} is a link or device, not a file")
                total += entry.size
                if total > MAX_UNPACKED_BYTES:
                    raise ImportFailed(archive.name, None, f"unpacks to more than {MAX_UNPACKED_BYTES // 1024**3} GiB")
                tf.extract(entry, into, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ImportFailed(archive.name, None, f"not a readable archive ({exc})") from None


def _only_file(folder: Path, fmt: str) -> Path:
    """A JSONL or TSV import reads one file: the single one the upload (or its archive) holds."""
    found = [p for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    if len(found) != 1:
        raise ImportFailed(folder, None, f"a {fmt} import reads one file; the upload holds {len(found)}")
    return found[0]


def prepare(key: str, names: list[str], fmt: str) -> tuple[Path, Path]:
    """(what to import, the folder errors are shown relative to) for a stored upload."""
    base = imports_dir() / key
    files = base / "files"
    if not files.is_dir():
        raise ImportFailed("upload", None, "the uploaded files are gone (the job ran already?)")
    root = files
    if len(names) == 1 and is_archive(names[0]):
        root = base / "unpacked"
        if root.exists():  # a retried task unpacks again from scratch
            shutil.rmtree(root)
        unpack(files / names[0], root)
    if fmt in ("jsonl", "tsv"):
        return _only_file(root, fmt), root
    return root, root


def discard_upload(key: str) -> None:
    if key and "/" not in key and key not in (".", ".."):
        shutil.rmtree(imports_dir() / key, ignore_errors=True)


def run_job(job_id: int, progress: Echo | None = None, retry_on: tuple[type[BaseException], ...] = ()) -> Outcome:
    """Unpack and import a stored upload as the job ``job_id`` (progress in articles/rows written)."""
    job = Job.objects.filter(pk=job_id).only("params").first()
    key = str(job.params.get("upload", "")) if job else ""

    def body(job: Job, recorder: jobs.ProgressRecorder) -> jobs.Finished:
        params = job.params
        options = ImportOptions(**params["options"])
        names = [str(n) for n in params.get("files", [])]
        try:
            target, root = prepare(key, names, options.format)
            summary = run_import(
                target, options, user=job.created_by, progress=recorder, display_root=root,
                source="upload: " + ", ".join(names)[:480],
            )
        except ImportFailed as exc:  # bad input, not a crash: the job says where, without a traceback
            jobs.fail(job.pk, f"Import failed, nothing was written. {exc}", message=f"import failed, nothing was written: {exc}")
            raise
        Job.objects.filter(pk=job.pk).update(corpus=Corpus.objects.filter(name=summary.corpus).first())
        return jobs.Finished(summary.as_dict(), summary.describe())

    try:
        outcome = jobs.run(job_id, body, echo=progress, retry_on=retry_on)
    except retry_on:
        raise  # the upload stays for the retry
    except BaseException:
        discard_upload(key)
        raise
    discard_upload(key)
    return outcome
