"""Simulate a crowd job with annotators of known accuracy; compare measured agreement and recovered
labels with what the simulation implies analytically.

    .venv/bin/python scripts/simulate_job.py                          # 50k items, accuracies 0.95/0.9/0.8/0.7/0.6
    .venv/bin/python scripts/simulate_job.py --items 20000 --accuracies 0.9,0.9,0.9,0.9,0.9
    .venv/bin/python scripts/simulate_job.py --write-job "demo job" --items 400   # also create it in the database
    .venv/bin/python scripts/simulate_job.py --crowdkit            # also crowd-kit's Dawid-Skene, MACE, GLAD

Model (annotation/crowd_model.py): each item has a true label drawn from the priors (aligned,
partialAligned, notAligned); every item is judged by one annotator of each accuracy tier, who
gives the true label with probability equal to their accuracy and otherwise one of the two
other labels uniformly.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation import aggregation, agreement, crowd_model  # noqa: E402


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--accuracies", type=_floats, default=crowd_model.DEFAULT_ACCURACIES)
    parser.add_argument("--priors", type=_floats, default=crowd_model.DEFAULT_PRIORS, help="aligned,partialAligned,notAligned")
    parser.add_argument("--per-tier", type=int, default=5, help="annotators per accuracy tier")
    parser.add_argument("--min-shared", type=int, default=agreement.DEFAULT_MIN_SHARED)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-job", metavar="NAME", help="also create the simulated job in the database")
    parser.add_argument("--pay-per-judgment", default="0", help="with --write-job: pay per answer (cost ledger)")
    parser.add_argument("--pay-per-hour", default="0", help="with --write-job: pay per hour on task (cost ledger)")
    parser.add_argument("--currency", default="USD")
    parser.add_argument("--crowdkit", action="store_true",
                        help="also run crowd-kit's Dawid-Skene, MACE and GLAD (slow: minutes at 50k items)")
    args = parser.parse_args()

    sim = crowd_model.simulate(args.items, args.accuracies, args.priors, args.per_tier, args.seed)
    report = agreement.job_agreement(sim.judgments, min_shared=args.min_shared)
    results: dict[str, aggregation.Aggregate] = {}
    seconds: dict[str, float] = {}
    for method in aggregation.METHODS:
        start = time.perf_counter()
        results[method] = aggregation.aggregate(sim.judgments, method, counts=report.counts)
        seconds[method] = time.perf_counter() - start
    mv, ds = results["majority"], results["dawid_skene"]
    assert isinstance(ds, aggregation.DawidSkeneResult)
    mv_acc, ds_acc = float((mv.labels == sim.truth).mean()), float((ds.labels == sim.truth).mean())
    exp_kappa = crowd_model.expected_mean_kappa(args.accuracies, args.priors)
    exp_fleiss = crowd_model.expected_fleiss(args.accuracies, args.priors)
    exp_mv = crowd_model.expected_majority_accuracy(args.accuracies, args.priors)
    bayes = crowd_model.expected_bayes_accuracy(args.accuracies, args.priors)

    print(f"{sim.judgments.size:,} judgments: {args.items:,} items x {len(args.accuracies)} tiers "
          f"(accuracies {args.accuracies}, {args.per_tier} annotators each), priors {args.priors}, seed {args.seed}")
    print(f"{'':<40}{'measured':>10}{'expected':>10}{'diff':>9}")
    rows = [
        (f"Cohen's kappa, mean of {report.cohen_pairs} pairs", report.cohen_mean, exp_kappa),
        ("Fleiss' kappa", report.fleiss, exp_fleiss),
        ("Krippendorff's alpha (nominal)", report.alpha, exp_fleiss),
        ("majority vote accuracy", mv_acc, exp_mv),
        (f"Dawid-Skene accuracy ({ds.iterations} it.)", ds_acc, bayes),
    ]
    for method in ("mace", "glad"):
        agg = results[method]
        assert isinstance(agg, aggregation.ModelAggregate)
        name = f"{aggregation.NAMES[method]} accuracy ({agg.iterations} it.)"
        rows.append((name, float((agg.labels == sim.truth).mean()), bayes))
    for name, measured, expected in rows:
        print(f"{name:<40}{measured:>10.4f}{expected:>10.4f}{measured - expected:>+9.4f}")
    print("The model-based methods' expected value is the Bayes-optimal accuracy with the true confusion matrices.")
    tiers = len(args.accuracies)
    agree = report.annotators.agreement.reshape(tiers, args.per_tier).mean(axis=1)
    estimates = {}
    for method, agg in results.items():
        if isinstance(agg, aggregation.ModelAggregate) and agg.annotator_accuracy is not None:
            estimates[method] = agg.annotator_accuracy.reshape(tiers, args.per_tier).mean(axis=1)
    print("per tier: true accuracy, estimates by " + ", ".join(aggregation.NAMES[m] for m in estimates)
          + ", agreement with the others' majority")
    for t, a in enumerate(args.accuracies):
        print(f"  {a:.2f}  " + "  ".join(f"{e[t]:.3f}" for e in estimates.values()) + f"  {agree[t]:.3f}")
    print("seconds: " + ", ".join(f"{aggregation.NAMES[m]} {seconds[m]:.2f}" for m in aggregation.METHODS))

    if args.crowdkit:
        from annotation import crowdkit_reference

        print(f"crowd-kit (its defaults), load average {os.getloadavg()[0]:.2f}:")
        print(f"  {'method':<36}{'accuracy':>10}{'seconds':>10}{'same label as ours':>20}")
        runs = [(m, True) for m in ("dawid_skene", "mace", "glad")] + [("mace", False)]
        for method, renumber in runs:
            ref = crowdkit_reference.run(method, sim.judgments, renumber=renumber)
            name = aggregation.NAMES[method] + ("" if renumber else " (ids as given: see crowdkit_reference)")
            same = float((ref.labels == results[method].labels).mean())
            print(f"  {name:<36}{float((ref.labels == sim.truth).mean()):>10.4f}{ref.seconds:>10.2f}{same:>20.4f}", flush=True)

    if args.write_job:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from annotation.services.simulated_job import create_simulated_job

        job = create_simulated_job(args.write_job, n_items=args.items, accuracies=args.accuracies, priors=args.priors,
                                   per_tier=args.per_tier, seed=args.seed, pay_per_judgment=args.pay_per_judgment,
                                   pay_per_hour=args.pay_per_hour, currency=args.currency)
        print(f"created labeling job {job.pk} ({job.name}); see /annotate/jobs/{job.pk}/stats/ or "
              f"`manage.py job_agreement {job.pk}`; its cost ledger at /annotate/jobs/{job.pk}/#ledger")


if __name__ == "__main__":
    main()
