"""Time agreement and aggregation over one million judgments (200,000 items x 5 annotators).

    .venv/bin/python scripts/bench_agreement.py                 # numpy path, 1M judgments
    .venv/bin/python scripts/bench_agreement.py --orm 20000     # also the ORM path on 20k items (SQLite
                                                                # unless DATABASE_URL says otherwise)

The numpy path measures each measure and both aggregations on arrays; the ORM path builds a
simulated job in the database, then times loading the judgments with values_list, computing
and writing AggregatedLabel rows in bulk (services.job_agreement).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation import aggregation, agreement  # noqa: E402
from annotation.crowd_model import simulate  # noqa: E402


def timed(name: str, fn: Callable[[], Any], results: dict[str, float]) -> Any:
    start = time.perf_counter()
    value = fn()
    results[name] = time.perf_counter() - start
    print(f"  {name:<34} {results[name]:7.3f} s")
    return value


def bench_numpy(n_items: int, per_tier: int, seed: int) -> dict[str, float]:
    results: dict[str, float] = {}
    sim = timed("simulate (not counted)", lambda: simulate(n_items, per_tier=per_tier, seed=seed), {})
    j = sim.judgments
    print(f"{j.size:,} judgments, {j.n_items:,} items, {j.n_annotators} annotators")
    counts = timed("label counts", lambda: agreement.label_counts(j), results)
    pairwise = timed("Cohen's kappa (all annotator pairs)", lambda: agreement.pairwise_cohen(j), results)
    timed("Fleiss' kappa", lambda: agreement.fleiss_kappa(counts), results)
    timed("Krippendorff's alpha (nominal)", lambda: agreement.krippendorff_alpha_nominal(counts), results)
    timed("per annotator", lambda: agreement.per_annotator(j, counts, pairwise), results)
    timed("per label", lambda: agreement.per_label(counts), results)
    mv = timed("majority vote", lambda: aggregation.majority_vote(j, counts), results)
    ds = timed("Dawid-Skene EM", lambda: aggregation.dawid_skene(j, counts=counts), results)
    total = sum(results.values())
    print(f"  {'TOTAL agreement + aggregation':<34} {total:7.3f} s")
    print(
        f"  kappa={pairwise.mean:.4f} ({pairwise.n_used} pairs)  majority acc={float((mv.labels == sim.truth).mean()):.4f}"
        f"  DS acc={float((ds.labels == sim.truth).mean()):.4f} ({ds.iterations} iterations)"
    )
    results["total"] = total
    return results


def bench_orm(n_items: int, job_id: int | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from annotation.models import LabelingJob
    from annotation.services import job_agreement
    from annotation.services.simulated_job import create_simulated_job

    if job_id:
        job = LabelingJob.objects.get(pk=job_id)
        print(f"ORM path on {connection.vendor}: job {job.pk} ({job.name}), {job.judgments.count():,} judgments")
    else:
        print(f"ORM path on {connection.vendor}: building a job of {n_items:,} items x 5 judgments ...")
        start = time.perf_counter()
        job = create_simulated_job(name=f"bench {n_items} {time.time():.0f}", n_items=n_items, seed=3)
        print(f"  build (not counted) {time.perf_counter() - start:7.3f} s; job {job.pk}")
    results: dict[str, float] = {}
    loaded = timed("load judgments (values_list)", lambda: job_agreement.load_judgments(job), results)
    timed("agreement report", lambda: agreement.job_agreement(loaded.judgments), results)
    timed("majority vote", lambda: aggregation.majority_vote(loaded.judgments), results)
    timed("Dawid-Skene", lambda: aggregation.dawid_skene(loaded.judgments), results)
    timed("compute + write AggregatedLabels", lambda: job_agreement.write_aggregated_labels(job, "majority"), results)
    timed("job_statistics (page figures)", lambda: job_agreement.job_statistics(job), results)
    print(f"  {'TOTAL':<34} {sum(results.values()):7.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200_000, help="items (5 judgments each)")
    parser.add_argument("--per-tier", type=int, default=20, help="annotators per accuracy tier (5 tiers)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--orm", type=int, default=0, metavar="N", help="also time the ORM path on N items")
    parser.add_argument("--orm-job", type=int, default=None, metavar="ID", help="time the ORM path on an existing job")
    parser.add_argument("--skip-numpy", action="store_true")
    args = parser.parse_args()
    if not args.skip_numpy:
        bench_numpy(args.items, args.per_tier, args.seed)
    if args.orm or args.orm_job:
        bench_orm(args.orm, args.orm_job)


if __name__ == "__main__":
    main()
