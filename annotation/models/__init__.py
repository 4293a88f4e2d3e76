"""The annotation app's models: labeling (``labeling``: paragraph links, candidate pairs, jobs,
judgments, aggregated and verified labels) and human evaluation of simplification output
(``evaluation``: studies, items, outputs, raters, pages, ratings). Import them from here.

A package, like ``curation.models``, so that the evaluation models are registered in this app
while the code that uses them (``annotation/evaluation/``) sits on top of them: the models
import nothing from ``annotation.evaluation`` (import-linter: no cycles between siblings).
"""

from annotation.models.evaluation import EvalItem, EvalOutput, EvalPage, Rating, Study, StudyRater
from annotation.models.labeling import (
    AggregatedLabel,
    Assignment,
    CandidatePair,
    JobItem,
    Judgment,
    LabelingJob,
    Membership,
    PairLock,
    ParagraphAlignmentRevision,
    ParagraphLink,
    TestAnswer,
    TestQuestion,
    VerifiedLabel,
)

__all__ = [
    "AggregatedLabel", "Assignment", "CandidatePair", "EvalItem", "EvalOutput", "EvalPage", "JobItem", "Judgment",
    "LabelingJob", "Membership", "PairLock", "ParagraphAlignmentRevision", "ParagraphLink", "Rating", "Study",
    "StudyRater", "TestAnswer", "TestQuestion", "VerifiedLabel",
]
