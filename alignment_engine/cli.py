"""Command line: ``python -m alignment_engine align|train|evaluate|tune|methods``.

Exit status: 0 done, 1 unexpected failure, 2 bad input (message names the file and line).
Progress bars go to stderr; results (TSV, JSON) to the output file or stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from alignment_engine import api
from alignment_engine.crf_config import PRECISIONS
from alignment_engine.errors import EngineError, InputError
from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl, write_alignment_tsv


class Progress:
    """A tqdm bar on stderr usable as ``ProgressCallback`` (done, total) and as a line logger (str)."""

    def __init__(self, desc: str, enabled: bool = True, unit: str = "pair") -> None:
        self.desc = desc
        self.enabled = enabled
        self.unit = unit
        self.bar: Any = None

    def __call__(self, *args: object) -> None:
        if not self.enabled:
            return
        if len(args) == 1 and isinstance(args[0], str):
            if self.bar is not None:
                self.bar.write(args[0], file=sys.stderr)
            else:
                print(args[0], file=sys.stderr, flush=True)
            return
        if len(args) == 2 and all(isinstance(a, int) for a in args):
            done, total = int(args[0]), int(args[1])  # type: ignore[call-overload]
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
            if self.bar.total != total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _add_embeddings_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embeddings-cache", metavar="FILE",
                   help="crf with semantic channels: keep every sentence embedding in this SQLite file too (created "
                        "if missing), so a later run embeds only sentences it has not seen (about 2.1 KB per sentence)")


def _add_device(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where neural models run (default: auto = cuda when available)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m alignment_engine",
                                 description="Sentence alignment for text simplification (Jiang et al. 2020).",
                                 epilog="Exit status: 0 done, 1 failure, 2 bad input.")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = ap.add_subparsers(dest="command", required=True)

    al = sub.add_parser("align", help="align document pairs (JSONL) into an alignment TSV")
    al.add_argument("--input", required=True, help="document-pair JSONL")
    al.add_argument("--output", default="-", help="alignment TSV (default: stdout)")
    al.add_argument("--method", choices=api.METHODS, default=None,
                    help=f"alignment method (default: the model's method with --model, else {api.DEFAULT_METHOD})")
    al.add_argument("--model", help="model directory (from `train`); needed by crf")
    al.add_argument("--quantize", action="store_true",
                    help="crf on CPU: int8-quantized cross-encoder (about 1.8x faster); the semantic channels' "
                         "sentence encoder already runs in int8 on a CPU by default (--precision)")
    al.add_argument("--precision", choices=PRECISIONS, default=None,
                    help="crf: the semantic channels' sentence encoder (default: int8 on a CPU with ONNX Runtime, "
                         "float32 on a GPU, or as the model was trained; float32 embeds exactly as a float32 model "
                         "was trained, 3-4x slower on a CPU; docs/engine.md)")
    al.add_argument("--members", type=int, default=None, metavar="K",
                    help="crf: align with the first K members of a seed ensemble (default: all; 1: member 0 alone, the "
                         "single model, faster)")
    al.add_argument("--threshold", type=float, help="override a baseline's similarity threshold")
    al.add_argument("--train-pairs", help="lr only: pairs JSONL to fit the logistic regression on")
    al.add_argument("--train-gold", help="lr only: gold TSV to fit the logistic regression on")
    al.add_argument("--header", action="store_true", help="write a header line")
    _add_embeddings_cache(al)
    _add_device(al)

    tr = sub.add_parser("train", help="train an aligner (neural CRF by default) into a model directory",
                        description="Without --set this trains the best configuration measured (CRFConfig() in "
                                    "alignment_engine/crf_config.py; docs/engine-results.md). Dev pairs are scored, "
                                    "not tuned on, by the model trained on --pairs alone; the model written to --out "
                                    "is then retrained on train + dev (--set refit_with_dev=false keeps the first).")
    tr.add_argument("--pairs", required=True)
    tr.add_argument("--gold", required=True)
    tr.add_argument("--dev-pairs")
    tr.add_argument("--dev-gold")
    tr.add_argument("--out", required=True, help="model directory to write")
    tr.add_argument("--method", choices=("crf", "lr"), default="crf")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="change one CRFConfig option (value parsed as JSON when possible), repeatable")
    tr.add_argument("--workers", type=int, default=None, metavar="N",
                    help="training runs in N worker processes at a time: a seed ensemble's members (members > 1), "
                         "and a model's held-out run beside its refit on train + dev (default: the CPUs available; 1: "
                         "one after the other in this process, the same model)")
    _add_embeddings_cache(tr)
    _add_device(tr)

    ev = sub.add_parser("evaluate", help="Task 1 / Task 2 P/R/F1 of a prediction TSV against a gold TSV (JSON)")
    ev.add_argument("--gold", required=True)
    ev.add_argument("--pred", required=True)
    ev.add_argument("--pairs", help="document-pair JSONL: scored documents and sentence texts")
    ev.add_argument("--by-document", action="store_true",
                    help="also every scored document's Task 1 / Task 2 (\"documents\", by pair id)")

    tu = sub.add_parser("tune", help="tune a baseline's threshold or the paragraph-alignment thresholds on labelled pairs")
    tu.add_argument("--pairs", required=True)
    tu.add_argument("--gold", required=True)
    group = tu.add_mutually_exclusive_group(required=True)
    group.add_argument("--method", choices=[m for m in api.METHODS if m not in ("crf", "sequence")],
                       help="tune this baseline's sentence threshold for Task 1 F1")
    group.add_argument("--paragraphs", choices=("news", "wikipedia"),
                       help="tune Algorithm 2 (news) or Algorithms 3+4 (wikipedia) thresholds")
    tu.add_argument("--similarity", default="c3g", help="sentence similarity driving paragraph alignment")
    tu.add_argument("--beta", type=float, default=1.0, help="paragraph tuning objective F_beta (default F1)")
    tu.add_argument("--eval-pairs", help="held-out pairs to report the tuned thresholds on")
    tu.add_argument("--eval-gold", help="held-out gold to report the tuned thresholds on")
    tu.add_argument("--out", help="also write the result JSON here")
    _add_device(tu)

    mp = sub.add_parser("make-pairs", help="build document-pair JSONL from a OneStopEnglish-style texts/ folder")
    mp.add_argument("--onestop", required=True, help="folder with adv/, int-utf8/ (or int/) and ele/ subfolders")
    mp.add_argument("--output", required=True, help="document-pair JSONL to write")
    mp.add_argument("--combos", default="adv-int,int-ele",
                    help="comma-separated complex-simple level pairs (default: the adjacent levels adv-int,int-ele)")
    mp.add_argument("--int-folder", default="int-utf8", help="folder of the intermediate level (default int-utf8)")
    mp.add_argument("--limit", type=int, help="only the first N articles")

    sub.add_parser("methods", help="list the alignment methods")
    return ap


def _parse_value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _semantic_stays_float32(aligner: api.Aligner) -> bool:
    """A CRF with semantic channels whose sentence encoder found no faster precision (``--quantize``:
    :func:`alignment_engine.semantic.fast_precision`)."""
    from alignment_engine.crf_aligner import CRFAligner  # already imported by load_aligner for crf

    return isinstance(aligner, CRFAligner) and aligner.config.semantic and aligner.semantic_precision == "float32"


def cmd_align(args: argparse.Namespace) -> int:
    pairs = read_pairs_jsonl(args.input)
    if args.embeddings_cache:
        api.use_embeddings_cache(args.embeddings_cache)
    method = args.method or (api.model_method(args.model) if args.model else api.DEFAULT_METHOD)
    if args.precision and method != "crf":
        raise InputError(f"--precision applies to the crf method's sentence encoder, not to {method}")
    if args.members is not None and method != "crf":
        raise InputError(f"--members applies to the crf method's seed ensembles, not to {method}")
    if method == "lr" and (args.train_pairs or args.train_gold):
        if not (args.train_pairs and args.train_gold):
            raise InputError("--train-pairs and --train-gold go together")
        aligner: api.Aligner = api.train_lr(read_pairs_jsonl(args.train_pairs), read_alignment_tsv(args.train_gold))
        if args.threshold is not None:
            aligner.threshold = args.threshold  # type: ignore[attr-defined]
    else:
        aligner = api.load_aligner(method, args.model, args.device, threshold=args.threshold, quantize=args.quantize,
                                   precision=args.precision, members=args.members)
        if args.quantize and method == "crf" and _semantic_stays_float32(aligner):
            print("note: --quantize leaves the sentence encoder in float32 here: this device computes no bf16 "
                  "natively and int8 needs the CPU and ONNX Runtime (docs/engine.md)", file=sys.stderr)
    progress = Progress(f"align ({method})", not args.quiet)
    start = time.perf_counter()
    try:
        results = aligner.align(pairs, progress=progress)
    finally:
        progress.close()
    rows = write_alignment_tsv(args.output, (a for doc in results for a in doc), header=args.header)
    if not args.quiet:
        print(f"{len(pairs)} document pairs, {rows} alignment rows, {time.perf_counter() - start:.2f}s ({method})",
              file=sys.stderr)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    pairs, gold = read_pairs_jsonl(args.pairs), read_alignment_tsv(args.gold)
    if bool(args.dev_pairs) != bool(args.dev_gold):
        raise InputError("--dev-pairs and --dev-gold go together")
    dev_pairs = read_pairs_jsonl(args.dev_pairs) if args.dev_pairs else None
    dev_gold = read_alignment_tsv(args.dev_gold) if args.dev_gold else None
    options: dict[str, Any] = {}
    for item in args.set:
        if "=" not in item:
            raise InputError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        options[key.strip()] = _parse_value(value)
    if args.embeddings_cache:
        api.use_embeddings_cache(args.embeddings_cache)
    if args.method == "lr":
        api.train_lr(pairs, gold, args.out, dev_pairs, dev_gold)
        print(json.dumps({"model": str(args.out), "method": "lr", **api.read_model_meta(args.out)}, indent=1))
        return 0
    progress = Progress("train", not args.quiet, unit="step")
    try:
        if args.workers is not None:
            if args.workers < 1:
                raise InputError(f"--workers must be at least 1, got {args.workers}")
            options["workers"] = args.workers
        out = api.train(pairs, gold, dev_pairs, dev_gold, out_dir=args.out, seed=args.seed, device=args.device,
                        progress=progress, **options)
    finally:
        progress.close()
    meta = api.read_model_meta(out)
    print(json.dumps({"model": str(out), "trained_on": api.trained_on(meta), "dev_metrics": meta.get("dev_metrics")},
                     indent=1))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    gold = read_alignment_tsv(args.gold)
    if not gold:
        raise InputError(f"{args.gold}: no gold rows")
    pred = read_alignment_tsv(args.pred)
    pairs = read_pairs_jsonl(args.pairs) if args.pairs else None
    result = {"gold": args.gold, "pred": args.pred, "pairs": args.pairs,
              **api.evaluate(gold, pred, pairs, by_document=args.by_document)}
    print(json.dumps(result, indent=1))
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from alignment_engine import paragraphs
    from alignment_engine.baselines import tune_threshold

    pairs, gold = read_pairs_jsonl(args.pairs), read_alignment_tsv(args.gold)
    if bool(args.eval_pairs) != bool(args.eval_gold):
        raise InputError("--eval-pairs and --eval-gold go together")
    result: dict
    if args.paragraphs:
        tuned = paragraphs.tune_thresholds(pairs, gold, args.similarity, args.paragraphs, beta=args.beta)
        result = {"tuned_on": args.pairs, **tuned.to_dict()}
        if args.eval_pairs:
            e_pairs, e_gold = read_pairs_jsonl(args.eval_pairs), read_alignment_tsv(args.eval_gold)
            from alignment_engine.gold import gold_paragraph_links

            gold_links = gold_paragraph_links(e_pairs, e_gold)
            for tag, th in (("eval", tuned.thresholds), ("eval_default", paragraphs.defaults(args.paragraphs))):
                pred = {(p.pair_id, c, s) for p in e_pairs
                        for c, s, _ in paragraphs.align_paragraphs(p, args.similarity, args.paragraphs, th)}
                from alignment_engine.evaluation import paragraph_prf

                result[tag] = {"pairs": args.eval_pairs, **paragraph_prf(pred, gold_links)}
    else:
        aligner = api.load_aligner(args.method, device=args.device)
        tuned_t = tune_threshold(aligner, pairs, gold)  # type: ignore[arg-type]
        result = {"tuned_on": args.pairs, "method": args.method, "threshold": tuned_t.threshold,
                  "task1": tuned_t.task1, "task2": tuned_t.task2}
        if args.eval_pairs:
            e_pairs, e_gold = read_pairs_jsonl(args.eval_pairs), read_alignment_tsv(args.eval_gold)
            rows = [a for doc in aligner.align(e_pairs) for a in doc]
            scores = api.evaluate(e_gold, rows, e_pairs)
            result["eval"] = {"pairs": args.eval_pairs, "task1": scores["task1"], "task2": scores["task2"]}
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def cmd_make_pairs(args: argparse.Namespace) -> int:
    from alignment_engine.io import ONESTOP_LEVELS, onestop_pairs, write_pairs_jsonl

    combos = []
    for item in args.combos.split(","):
        parts = item.strip().split("-")
        if len(parts) != 2 or not all(p in ONESTOP_LEVELS for p in parts):
            raise InputError(f"--combos: expected items like adv-int, got {item!r}")
        combos.append((parts[0], parts[1]))
    root = Path(args.onestop)
    if not (root / "adv").is_dir():
        raise InputError(f"{root}: no adv/ subfolder (expected the OneStopEnglish texts/ folder)")
    pairs = onestop_pairs(root, combos, args.int_folder, args.limit)
    write_pairs_jsonl(args.output, pairs)
    print(f"{len(pairs)} document pairs written to {args.output}", file=sys.stderr)
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    for name in api.METHODS:
        mark = " (default)" if name == api.DEFAULT_METHOD else ""
        print(f"{name:14s} {api.METHOD_HELP.get(name, '')}{mark}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "align": cmd_align, "train": cmd_train, "evaluate": cmd_evaluate, "tune": cmd_tune, "methods": cmd_methods,
    "make-pairs": cmd_make_pairs,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (InputError, EngineError, ValueError) as e:
        print(f"alignment_engine: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `... | head`
        return 0
    except OSError as e:
        print(f"alignment_engine: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130
