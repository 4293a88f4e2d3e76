"""The corpus: corpora, article groups, documents (one per reading level), paragraphs,
sentences, document pairs, and reference sentence alignments (imported gold or labels).

Sentence ids (``../shared/formats.md``, built and read by ``alignment_engine.ids``) are derived,
not stored: within a document pair a sentence is ``<pair_id>-<side>-<paragraph>-<sentence>`` with
side 1 for the complex and 0 for the simple document; a pair id may not contain '-'. Paragraph and sentence positions are 0-based and consecutive, so ids
are stable across re-imports of the same text.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from alignment_engine.ids import pair_id_problem, sentence_id


class Corpus(models.Model):
    class Kind(models.TextChoices):
        NEWS = "news", "News (Newsela-style: paragraph Algorithm 2)"
        WIKIPEDIA = "wikipedia", "Wikipedia (paragraph Algorithms 3-4)"
        OTHER = "other", "Other"

    name = models.CharField(max_length=200, unique=True)
    language = models.CharField(max_length=8, help_text="ISO 639-1 code, e.g. en or de")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NEWS)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class Article(models.Model):
    """An article group: an original and its simplified versions (one Document per level)."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="articles")
    slug = models.CharField(max_length=200, help_text="opaque id, no '-' (used in pair ids)")
    title = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=500, blank=True, help_text="file or record it came from")
    content_hash = models.CharField(max_length=64, help_text="sha256 of the imported documents")
    raw_hash = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the raw files it was parsed from (re-imports skip them unparsed)"
    )
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["corpus", "slug"]
        constraints = [models.UniqueConstraint(fields=["corpus", "slug"], name="article_unique_slug")]

    def __str__(self) -> str:
        return self.title or self.slug


class Document(models.Model):
    """One reading level of an article. ``level`` 0 is the most complex (the original)."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="documents")
    level = models.PositiveSmallIntegerField()
    level_label = models.CharField(max_length=32, help_text="e.g. adv, int, ele, 0..4, complex, simple")
    title = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["article", "level"]
        constraints = [models.UniqueConstraint(fields=["article", "level"], name="document_unique_level")]

    def __str__(self) -> str:
        return f"{self.article.slug} [{self.level_label}]"

    @property
    def level_name(self) -> str:
        """The label a reader knows the level by: ``adv``, or ``level 2`` where the label is the number."""
        return self.level_label if self.level_label not in ("", str(self.level)) else f"level {self.level}"

    @property
    def level_caption(self) -> str:
        """``level 2 · ele``, or ``level 2`` where the label is the number itself (no ``level 0 · 0``)."""
        name = self.level_name
        return name if name == f"level {self.level}" else f"level {self.level} · {name}"


class Paragraph(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="paragraphs")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["document", "position"]
        constraints = [models.UniqueConstraint(fields=["document", "position"], name="paragraph_unique_position")]

    def __str__(self) -> str:
        return f"{self.document} ¶{self.position}"


class Sentence(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sentences")
    paragraph = models.ForeignKey(Paragraph, on_delete=models.CASCADE, related_name="sentences")
    paragraph_position = models.PositiveIntegerField(help_text="index of the paragraph in the document")
    position = models.PositiveIntegerField(help_text="index of the sentence in its paragraph")
    doc_position = models.PositiveIntegerField(help_text="index of the sentence in the document")
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    source_id = models.CharField(max_length=100, blank=True, help_text="id in the source file, if different")

    class Meta:
        ordering = ["document", "doc_position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "doc_position"], name="sentence_unique_doc_position"),
            models.UniqueConstraint(fields=["paragraph", "position"], name="sentence_unique_position"),
        ]

    def __str__(self) -> str:
        return self.text[:80]

    def local_id(self, pair_id: str, side: int) -> str:
        return sentence_id(pair_id, side, self.paragraph_position, self.position)


def validate_pair_id(value: str) -> None:
    """The pair-id rule of ``alignment_engine.ids`` (no '-', whitespace or control characters)."""
    problem = pair_id_problem(value)
    if problem:
        raise ValidationError(problem, code="invalid_pair_id")


class DocumentPair(models.Model):
    """A complex and a simple document of one article (by default adjacent levels)."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="pairs")
    complex = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pairs_as_complex")
    simple = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pairs_as_simple")
    pair_id = models.CharField(max_length=250, validators=[validate_pair_id],
                               help_text="unique in the corpus; prefix of sentence ids (no '-', no spaces)")
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="pairs")

    class Meta:
        ordering = ["corpus", "pair_id"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "pair_id"], name="pair_unique_id"),
            models.UniqueConstraint(fields=["complex", "simple"], name="pair_unique_documents"),
        ]

    def __str__(self) -> str:
        return self.pair_id

    @property
    def is_adjacent(self) -> bool:
        return self.simple.level - self.complex.level == 1


class AlignmentLabel(models.TextChoices):
    ALIGNED = "aligned", "aligned"
    PARTIAL = "partialAligned", "partially aligned"
    NOT_ALIGNED = "notAligned", "not aligned"


class ReferenceAlignment(models.Model):
    """A sentence pair label that came from a file: a gold standard, or training labels."""

    class Role(models.TextChoices):
        GOLD = "gold", "gold standard"
        LABELS = "labels", "training labels"

    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="reference_alignments")
    simple = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    complex = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=16, choices=AlignmentLabel.choices)
    score = models.FloatField(null=True, blank=True, help_text="GLEU or confidence, where the file has one")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.GOLD)
    source_label = models.CharField(max_length=32, blank=True, help_text="label as written in the file")
    source = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["role", "simple", "complex"], name="reference_unique_sentence_pair"),
        ]
        indexes = [models.Index(fields=["pair", "role"])]

    def __str__(self) -> str:
        return f"{self.role} {self.label} {self.simple_id}<-{self.complex_id}"


class ImportRecord(models.Model):
    """One import run: who, what, and what it changed (for the upload page and audit)."""

    corpus = models.ForeignKey(Corpus, on_delete=models.SET_NULL, null=True, related_name="imports")
    format = models.CharField(max_length=32)
    source = models.CharField(max_length=500)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    summary = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.format} import of {self.source}"
