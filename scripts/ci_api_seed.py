"""Seed data for the API contract check (scripts/ci_schemathesis.sh): one user per role with a
known password, the demo corpus, a labeling job, a finished corpus alignment run, a model
version with metrics and a finished export, so that every API operation has rows to return.

    .venv/bin/python scripts/ci_api_seed.py PASSWORD
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from curation.management.commands.load_demo import DEMO_CORPUS  # noqa: E402
from curation.models import Corpus  # noqa: E402
from pipeline.exports.run import create_export, run_export  # noqa: E402
from pipeline.models import ExportedDataset, ModelVersion  # noqa: E402
from pipeline.services import align_corpus  # noqa: E402


def main(password: str) -> None:
    call_command("create_demo_users", password=password)
    call_command("load_demo")
    corpus = Corpus.objects.get(name=DEMO_CORPUS)
    call_command("create_labeling_job", "contract check", corpus=DEMO_CORPUS, min_seconds=0)
    run = align_corpus.plan_run(corpus, align_corpus.resolve_model(corpus, "jaccard"), chunk_size=2)
    align_corpus.run_inline(run)
    ModelVersion.objects.get_or_create(
        name="contract-check baseline", defaults={"method": "jaccard", "metrics": {"dev": {"task1": {"p": 0.5, "r": 0.5, "f1": 0.5}}}}
    )
    dataset = create_export(corpus.pk, ExportedDataset.Kind.AUTO, {}, run_id=run.pk)
    run_export(dataset.pk)
    print(f"seeded: corpus {corpus.pk}, run {run.pk}, export {dataset.pk}")


if __name__ == "__main__":
    main(sys.argv[1])
