#!/usr/bin/env python3
"""Speed and dev F1 of a trained CRF aligner model, end to end on CPU (the speed/F1 frontier).

Loads a model directory (or trains one first with ``--train``: ``train_model`` on DEplain-web train
with ``CRFConfig()`` and the ``--set KEY=VALUE`` options), then aligns, through ``CRFAligner.align``
(the path the CLI and the pipeline use), three sets and prints one JSON object:

Wall-clock figures depend on the machine's load (other jobs take the cores); ``cpu_s`` (this
process's user + system CPU time) and ``document_pairs_per_cpu_s`` are what one worker with a core
of its own would reach.

- ``ose``: OneStopEnglish document pairs (adjacent levels adv->int, int->ele of
  ``../shared/data/onestopenglish/texts``; ``--limit`` articles, 2 pairs each): the Newsela-like
  speed figure (document pairs/s, sentences/s, sentence pairs/s);
- ``ose_all`` (not in the default ``--sets``): the same articles with all three level combinations
  (adv->int, adv->ele, int->ele; 3 pairs each), as Newsela-Auto pairs every two levels of an article: a
  document takes part in two pairs, so a model that embeds each sentence once (the semantic channels)
  spends less per pair than on ``ose``'s chains;
- ``deplain_dev``: DEplain-web dev (17 pairs): speed and Task 1 / Task 2 P/R/F1 against its gold;
- ``ose_dev``: OneStopEnglish gold dev (12 pairs): speed and F1.

Also: the time breakdown of the aligner (features, encoder, CRF, learned decoder), peak RSS
(``resource.getrusage``), torch threads and the machine's load average before and after.
A warm-up pair is aligned first (lazy imports), outside the timed region.

``--dump FILE`` writes every predicted row (ids, label, score) of the three sets; ``--compare FILE``
checks that the rows are identical to such a dump (exit 1 and the first difference otherwise): the
before/after check of a speed change.

    python scripts/bench_engine_speed.py --model var/models/default [--limit 25] [--quantize] [--device cuda]
        [--threads N] [--sets ose,ose_all,deplain_dev,ose_dev] [--dump rows.json | --compare rows.json] [--profile 30]
    python scripts/bench_engine_speed.py --model var/models/encoder --train --set emission=encoder+lexical
    python scripts/bench_engine_speed.py --model DIR --sets deplain_dev --precision int8 \
        --gold-set fold0=f0_test_pairs.jsonl:f0_test_gold.tsv

``--precision`` sets the sentence encoder's precision whatever the CPU (``--quantize`` picks the CPU's fast
path); ``--gold-set`` adds a set with gold, scored like ``deplain_dev``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The corpora (``../shared/data``; ``SHARED_DATA`` names another folder, as on a lent GPU machine: scripts/device_kit.py).
SHARED = Path(os.environ.get("SHARED_DATA") or ROOT.parent / "shared" / "data")
DEFAULT_TEXTS = SHARED / "onestopenglish" / "texts"
DEPLAIN = SHARED / "deplain-web"
OSE_DEV = SHARED / "onestopenglish-gold-dev"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _parse_sets(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _train(model_dir: Path, options: dict, limit: int | None) -> None:
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl
    from alignment_engine.training import train_model

    t0 = time.perf_counter()
    pairs = read_pairs_jsonl(DEPLAIN / "train_pairs.jsonl")[:limit]
    ids = {p.pair_id for p in pairs}
    gold = [g for g in read_alignment_tsv(DEPLAIN / "train_gold.tsv") if g.simple_id.rsplit("-", 3)[0] in ids]
    train_model(pairs, gold,
                read_pairs_jsonl(DEPLAIN / "dev_pairs.jsonl"), read_alignment_tsv(DEPLAIN / "dev_gold.tsv"),
                out_dir=model_dir, seed=0, device="cpu", progress=lambda msg: print(msg, file=sys.stderr), **options)
    print(f"trained {model_dir} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def _rows(out: list) -> list:
    return [[[r.simple_id, r.complex_id, r.label, r.score] for r in rows] for rows in out]


def main(argv: list[str] | None = None) -> int:
    from alignment_engine.crf_config import PRECISIONS  # light: no torch before --threads is applied

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="trained CRF model directory")
    ap.add_argument("--train", action="store_true", help="train the model first when the directory has none")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="training option (with --train)")
    ap.add_argument("--train-limit", type=int, default=None, help="train on the first N DEplain train pairs only")
    ap.add_argument("--texts", default=str(DEFAULT_TEXTS), help="OneStopEnglish texts/ folder")
    ap.add_argument("--limit", type=int, default=25, help="OneStopEnglish articles (2 document pairs each)")
    ap.add_argument("--quantize", action="store_true", help="the fast path of align --quantize")
    ap.add_argument("--precision", default=None, choices=PRECISIONS,
                    help="the sentence encoder's precision (default: align's, or --quantize's)")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: the engine's)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"),
                    help="where the CRFs and the sentence encoder run (default cpu)")
    ap.add_argument("--sets", default="ose,deplain_dev,ose_dev", help="which sets to align (also: ose_all)")
    ap.add_argument("--gold-set", action="append", default=[], metavar="NAME=PAIRS.jsonl:GOLD.tsv",
                    help="one more set with gold, aligned after --sets (repeatable; e.g. a held-out fold of train)")
    ap.add_argument("--dump", default=None, help="write the predicted rows of every set to this JSON file")
    ap.add_argument("--compare", default=None, help="check the predicted rows against a --dump file")
    ap.add_argument("--profile", type=int, default=0, help="cProfile the OSE run; print the top N functions")
    args = ap.parse_args(argv)

    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from alignment_engine.crf_aligner import CRFAligner
    from alignment_engine.evaluation import evaluate
    from alignment_engine.io import ONESTOP_ALL_LEVELS, onestop_pairs, read_alignment_tsv, read_pairs_jsonl

    model_dir = Path(args.model)
    load_start = _load()
    if not (model_dir / "model.json").is_file():
        if not args.train:
            print(f"{model_dir}: no model.json (pass --train to train one)", file=sys.stderr)
            return 2
        _train(model_dir, _parse_sets(args.set), args.train_limit)
    t0 = time.perf_counter()
    aligner = CRFAligner.load(model_dir, args.device, quantize=args.quantize, precision=args.precision)
    load_model_s = time.perf_counter() - t0

    sets: dict[str, tuple[list, list | None]] = {}
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    if "ose" in wanted:
        sets["ose"] = (onestop_pairs(args.texts, limit=args.limit), None)
    if "ose_all" in wanted:
        sets["ose_all"] = (onestop_pairs(args.texts, ONESTOP_ALL_LEVELS, limit=args.limit), None)
    if "deplain_dev" in wanted:
        sets["deplain_dev"] = (read_pairs_jsonl(DEPLAIN / "dev_pairs.jsonl"), read_alignment_tsv(DEPLAIN / "dev_gold.tsv"))
    if "ose_dev" in wanted:
        sets["ose_dev"] = (read_pairs_jsonl(OSE_DEV / "dev_pairs.jsonl"), read_alignment_tsv(OSE_DEV / "dev_gold.tsv"))
    for spec in args.gold_set:
        name, _, files = spec.partition("=")
        pairs_file, _, gold_file = files.partition(":")
        if not (name and pairs_file and gold_file):
            ap.error(f"--gold-set {spec!r}: expected NAME=PAIRS.jsonl:GOLD.tsv")
        sets[name] = (read_pairs_jsonl(pairs_file), read_alignment_tsv(gold_file))
    if not sets:
        ap.error("nothing to align: --sets and --gold-set are empty")
    first = next(iter(sets.values()))[0]
    aligner.align(first[:1])  # warm-up: lazy imports, first calls

    report: dict = {
        "command": " ".join(["python", "scripts/bench_engine_speed.py", *(argv if argv is not None else sys.argv[1:])]),
        "model": str(model_dir), "emission": aligner.config.emission, "decoder": aligner.config.decoder,
        "quantize": bool(args.quantize), "semantic_precision": aligner.semantic_precision,
        "device": str(aligner.device), "semantic_device": aligner.semantic_device, "torch_threads": torch.get_num_threads(),
        "load_model_s": round(load_model_s, 2), "sets": {},
    }
    dumped: dict = {}
    for name, (pairs, gold) in sets.items():
        aligner.timings.clear()
        aligner.counters.clear()
        if aligner.config.semantic:  # each set from an empty embedding cache: the warm-up's and other sets' are not free
            from alignment_engine.semantic import shared_encoder

            shared_encoder(aligner.semantic_precision, aligner.semantic_device).clear()
        prof = cProfile.Profile() if (args.profile and name == "ose") else None
        load_before = _load()
        if prof:
            prof.enable()
        t, cpu = time.perf_counter(), time.process_time()
        out = aligner.align(pairs)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        if prof:
            prof.disable()
        n_sent = sum(len(p.simple_sentences()) + len(p.complex_sentences()) for p in pairs)
        cells = sum(len(p.simple_sentences()) * len(p.complex_sentences()) for p in pairs)
        entry: dict = {
            "document_pairs": len(pairs), "sentences": n_sent, "sentence_pairs": cells,
            "rows": sum(len(r) for r in out), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "document_pairs_per_s": round(len(pairs) / wall, 2) if wall else None,
            "document_pairs_per_cpu_s": round(len(pairs) / cpu, 2) if cpu else None,
            "sentences_per_s": round(n_sent / wall, 1) if wall else None,
            "time_breakdown_s": {k: round(v, 3) for k, v in aligner.timings.items()},
            "encoder_pairs": aligner.counters.get("encoder_pairs", 0),
            "semantic_sentences": aligner.counters.get("semantic_sentences", 0),
            "load_before": load_before, "load_after": _load(),
        }
        if gold is not None:
            flat = [r for rows in out for r in rows]
            scores = evaluate(gold, flat, pairs)
            for task in ("task1", "task2"):
                entry[task] = {k: round(float(scores[task][k]), 4) for k in ("precision", "recall", "f1")}
            entry["recall_by_gold_shape"] = {shape: round(float(v["recall"]), 4) for shape, v in scores["groups"]["gold"].items()}
        report["sets"][name] = entry
        dumped[name] = _rows(out)
        if prof:
            print(f"---- cProfile of {name} (top {args.profile} by cumulative time)", file=sys.stderr)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
    report["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    report["load_start"] = load_start
    report["load_end"] = _load()
    status = 0
    if args.dump:
        Path(args.dump).write_text(json.dumps(dumped), encoding="utf-8")
    if args.compare:
        ref = json.loads(Path(args.compare).read_text(encoding="utf-8"))
        diff = None
        for name, rows in dumped.items():
            if name in ref and ref[name] != rows:
                docs = [k for k, (a, b) in enumerate(zip(ref[name], rows, strict=False)) if a != b]
                diff = f"{name}: rows differ in {len(docs)} document(s), first document #{docs[0] if docs else '?'}"
                break
        report["identical_to"] = None if diff else args.compare
        if diff:
            report["difference"] = diff
            status = 1
    print(json.dumps(report, indent=1))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
