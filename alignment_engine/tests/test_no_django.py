import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["alignment_engine", "alignment_engine.types", "alignment_engine.io", "alignment_engine.errors",
           "alignment_engine.similarity", "alignment_engine.paragraphs", "alignment_engine.baselines",
           "alignment_engine.evaluation", "alignment_engine.sequence", "alignment_engine.api", "alignment_engine.cli",
           "alignment_engine.text", "alignment_engine.gold", "alignment_engine.rows", "alignment_engine.ids",
           "alignment_engine.crf_config", "alignment_engine.stacking", "alignment_engine.paragraph_model"]


def test_engine_imports_without_django():
    code = (
        "import sys\n"
        f"for name in {MODULES!r}:\n"
        "    __import__(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print('DJANGO' if bad else 'CLEAN', len(sys.modules))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("CLEAN"), proc.stdout


def test_lexical_engine_does_not_import_torch():
    """The default method, the baselines and the modules the Django side imports start fast: no torch or
    transformers import on the way."""
    code = ("import sys, alignment_engine.api, alignment_engine.cli, alignment_engine.types, alignment_engine.io\n"
            "import alignment_engine.text, alignment_engine.similarity, alignment_engine.paragraphs\n"
            "import alignment_engine.gold, alignment_engine.rows, alignment_engine.crf_config, alignment_engine.evaluation\n"
            "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
            "print(' '.join(heavy) if heavy else 'LIGHT')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "LIGHT"
