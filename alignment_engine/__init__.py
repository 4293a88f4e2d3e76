"""Sentence alignment for text simplification (Jiang et al. 2020), free of Django.

Plain data in, plain data out: documents are lists of paragraphs, each a list of sentence
strings. See README and docs/engine.md.
"""

__version__ = "0.1.0"
