"""Time agreement and aggregation over one million judgments (200,000 items x 5 annotators).

    .venv/bin/python scripts/bench_agreement.py                 # numpy path, 1M judgments
    .venv/bin/python scripts/bench_agreement.py --crowdkit dawid_skene,mace
                                                                # also crowd-kit's implementations
    .venv/bin/python scripts/bench_agreement.py --orm 20000     # also the ORM path on 20k items (SQLite
                                                                # unless DATABASE_URL says otherwise)

The numpy path measures each measure and every aggregation (majority, Dawid-Skene, MACE, GLAD)
on arrays, with the accuracy each recovers against the simulation's truth; ``--crowdkit``
times Toloka's crowd-kit on the same judgments (its default settings, the DataFrame built
inside the timing) and prints its accuracy and how often it agrees with ours. The ORM path
builds a simulated job in the database, then times loading the judgments with values_list,
computing and writing AggregatedLabel rows in bulk (services.job_agreement). The load average
is printed before and after: the machine may be shared.
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


def bench_numpy(n_items: int, per_tier: int, seed: int, crowdkit: tuple[str, ...] = ()) -> dict[str, float]:
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
    ours: dict[str, aggregation.Aggregate] = {}
    for method in aggregation.METHODS:
        ours[method] = timed(f"{method}", lambda m=method: aggregation.aggregate(j, m, counts), results)  # type: ignore[misc]
    total = sum(results.values())
    print(f"  {'TOTAL agreement + aggregation':<34} {total:7.3f} s")
    print(f"  kappa={pairwise.mean:.4f} ({pairwise.n_used} pairs)")
    for method, agg in ours.items():
        extra = ""
        if isinstance(agg, aggregation.ModelAggregate):
            extra = f"  {agg.iterations} iterations" + (f", {agg.restarts} restarts" if isinstance(agg, aggregation.MaceResult) else "")
        print(f"  {method:<12} accuracy {float((agg.labels == sim.truth).mean()):.4f}{extra}")
    results["total"] = total
    for method in crowdkit:
        from annotation import crowdkit_reference

        print(f"  crowd-kit {method} ... (load {os.getloadavg()[0]:.2f})", flush=True)
        ref = crowdkit_reference.run(method, j)
        results[f"crowdkit {method}"] = ref.seconds
        print(
            f"  crowd-kit {method:<12} {ref.seconds:9.3f} s  accuracy {float((ref.labels == sim.truth).mean()):.4f}"
            f"  same label as ours {float((ref.labels == ours[method].labels).mean()):.4f}",
            flush=True,
        )
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
    for method in aggregation.METHODS:
        timed(method, lambda m=method: aggregation.aggregate(loaded.judgments, m), results)  # type: ignore[misc]
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
    parser.add_argument("--crowdkit", default="", metavar="METHODS",
                        help="comma-separated: also time crowd-kit's dawid_skene, mace, glad (or majority) on the numpy path")
    args = parser.parse_args()
    crowdkit = tuple(m for m in args.crowdkit.split(",") if m)
    unknown = sorted(set(crowdkit) - set(aggregation.METHODS))
    if unknown:
        parser.error(f"--crowdkit: unknown method(s) {', '.join(unknown)}; choose from {', '.join(aggregation.METHODS)}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    if not args.skip_numpy:
        bench_numpy(args.items, args.per_tier, args.seed, crowdkit)
    if args.orm or args.orm_job:
        bench_orm(args.orm, args.orm_job)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
