"""API shapes for annotators. Questions carry no gold label and no hint of being a test."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from annotation.models import LabelingJob
from annotation.models.pay import MAX_PAY_PER_HOUR, MAX_PAY_PER_JUDGMENT
from annotation.services.assignment import MAX_EXCLUDE
from curation.models import AlignmentLabel


class JobSerializer(serializers.ModelSerializer[LabelingJob]):
    corpus = serializers.CharField(source="corpus.name", read_only=True)

    class Meta:
        model = LabelingJob
        fields = [
            "id", "name", "corpus", "status", "strategy", "judgments_per_pair", "test_question_every", "min_seconds",
            "accuracy_threshold", "min_test_questions", "reservation_minutes", "instructions", "created_at",
        ]
        read_only_fields = fields


class QuestionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField(help_text="opaque id of this question; send it back with the answer")
    complex = serializers.CharField(help_text="the sentence of the more complex document")
    simple = serializers.CharField(help_text="the sentence of the simpler document")


class NextQuestionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    exclude = serializers.ListField(
        child=serializers.CharField(max_length=40, allow_blank=True), required=False, default=list, max_length=MAX_EXCLUDE,
        help_text="tokens already on screen (to preload the following question); a blank one excludes nothing",
    )


class AnswerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField(max_length=40)
    label = serializers.ChoiceField(choices=AlignmentLabel.choices)  # type: ignore[assignment]
    preload = serializers.BooleanField(
        required=False, default=False,
        help_text="also reserve (or resume) the following question and return it in ``next``: "
        "one request per question instead of an answer and a ``next``",
    )
    exclude = serializers.ListField(
        child=serializers.CharField(max_length=40, allow_blank=True), required=False, default=list, max_length=MAX_EXCLUDE,
        help_text="with ``preload``: tokens still on screen (the question preloaded before), as in ``next``",
    )


class FeedbackSerializer(serializers.Serializer):  # type: ignore[type-arg]
    complex = serializers.CharField()
    simple = serializers.CharField()
    given = serializers.CharField()
    expected = serializers.CharField()
    explanation = serializers.CharField()


class AnswerResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    duplicate = serializers.BooleanField(help_text="true when this token was answered before (nothing new stored)")
    page_end = serializers.BooleanField(help_text="true when this answer ended a page: accuracy, feedback and removal are settled")
    missed = serializers.BooleanField(help_text="true when the page that just ended had missed test questions; see feedback")
    feedback = FeedbackSerializer(many=True, help_text="the missed test questions of the page that just ended (empty otherwise)")
    removed = serializers.BooleanField()
    answered = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True, help_text="test-question accuracy as of the last page end")
    next = QuestionSerializer(
        allow_null=True,
        help_text="with ``preload``: the following question, reserved for you (a retried answer gets the one the first reserved); "
        "null without ``preload``, when nothing is left, the job closed or you were removed: then ask ``next``",
    )


class MyStatsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    answered = serializers.IntegerField()
    tests_answered = serializers.IntegerField(help_text="test questions answered, as of the last page end")
    accuracy = serializers.FloatField(allow_null=True, help_text="test-question accuracy, as of the last page end")
    removed = serializers.BooleanField()
    page_position = serializers.IntegerField()
    page_size = serializers.IntegerField()


class OnTaskSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What every cost-ledger row and total ends with (``annotation.services.ledger.OnTask``)."""

    seconds = serializers.FloatField(help_text="time on task measured by the server")
    cost = serializers.CharField(help_text="decimal, in the ledger's currency")


class PayTermsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """The pay settings at the head of every cost ledger (``pay_per_judgment`` is named by each ledger)."""

    currency = serializers.CharField()
    pay_per_hour = serializers.CharField(help_text="decimal: paid per hour on task")


def _decimal_pattern(top: Decimal, places: int) -> str:
    """A non-negative decimal string of at most ``places`` decimals and at most ``top`` (an integer),
    as a regular expression that means the same in Python and in JSON Schema ([0-9], not \\d), so the
    schema states exactly what the server accepts (``annotation.models.pay`` validators)."""
    digits = len(str(int(top))) - 1
    return rf"^(?:{int(top)}(?:\.0{{1,{places}}})?|[0-9]{{1,{digits}}}(?:\.[0-9]{{1,{places}}})?)$"


class PayUpdateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """New pay settings of a job or study: any of the three, the others keep their values (an empty
    body changes nothing). Decimal strings, bounded as the pay validators bound them."""

    pay_per_judgment = serializers.RegexField(
        _decimal_pattern(MAX_PAY_PER_JUDGMENT, 4), max_length=10, required=False,
        help_text=f"decimal string, 0-{MAX_PAY_PER_JUDGMENT}, up to 4 decimals: paid per answer (a job, test questions "
                  "included) or per rating (a study)")
    pay_per_hour = serializers.RegexField(
        _decimal_pattern(MAX_PAY_PER_HOUR, 2), max_length=10, required=False,
        help_text=f"decimal string, 0-{MAX_PAY_PER_HOUR}, up to 2 decimals: paid per hour on task, server-measured")
    currency = serializers.RegexField(r"^[A-Z]{3}$", max_length=3, required=False, help_text="ISO 4217 code, e.g. USD, EUR")


class LedgerTotalSerializer(OnTaskSerializer):
    """A labeling job's ledger summed over its annotators."""

    judgments = serializers.IntegerField()
    valid_judgments = serializers.IntegerField()
    discarded = serializers.IntegerField(help_text="judgments invalidated when the annotator was removed")
    test_answers = serializers.IntegerField()


class LedgerRowSerializer(LedgerTotalSerializer):
    """One annotator's line of a labeling job's ledger."""

    annotator = serializers.CharField()
    removed = serializers.BooleanField()


class LedgerSerializer(PayTermsSerializer):
    """A labeling job's annotation cost ledger."""

    pay_per_judgment = serializers.CharField(help_text="decimal: paid per answer, test questions included")
    total = LedgerTotalSerializer()
    verified_pairs = serializers.IntegerField()
    cost_per_valid_judgment = serializers.CharField(allow_null=True)
    cost_per_verified_pair = serializers.CharField(allow_null=True)
    annotators = LedgerRowSerializer(many=True)


class ContextSerializer(serializers.Serializer):  # type: ignore[type-arg]
    complex_before = serializers.ListField(child=serializers.CharField())
    complex_sentence = serializers.CharField()
    complex_after = serializers.ListField(child=serializers.CharField())
    simple_before = serializers.ListField(child=serializers.CharField())
    simple_sentence = serializers.CharField()
    simple_after = serializers.ListField(child=serializers.CharField())


class ErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    detail = serializers.CharField()
    code = serializers.CharField()
    wait_seconds = serializers.FloatField(required=False)
