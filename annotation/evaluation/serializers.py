"""API shapes. A rater's page carries positions and texts only: no system name, no output id,
nothing that marks the control."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import Study
from annotation.serializers import OnTaskSerializer, PayTermsSerializer


class StudySerializer(serializers.ModelSerializer[Study]):
    n_systems = serializers.SerializerMethodField(help_text="how many versions each page shows (systems, plus the control in slider studies)")

    class Meta:
        model = Study
        fields = ["id", "name", "design", "status", "raters_per_item", "min_seconds", "show_reference", "instructions", "n_systems", "created_at"]
        read_only_fields = fields

    def get_n_systems(self, obj: Study) -> int:
        return len(obj.systems) + (1 if obj.design == Study.Design.SLIDER else 0)


class SegmentSerializer(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=["same", "added", "deleted"])
    text = serializers.CharField()  # type: ignore[assignment]


class PageOutputSerializer(serializers.Serializer):  # type: ignore[type-arg]
    position = serializers.IntegerField(help_text="0-based place on the page; send it back with the ratings")
    text = serializers.CharField()
    segments = SegmentSerializer(many=True, help_text="slider design: the version against the source (added words, deletions)")


class DimensionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    question = serializers.CharField()
    minimum = serializers.IntegerField()
    maximum = serializers.IntegerField()
    level = serializers.CharField()
    low = serializers.CharField()
    high = serializers.CharField()
    choices = serializers.ListField(child=serializers.ListField(), help_text="[[value, label], ...] in keyboard order")


class PageSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField(help_text="opaque id of this page; send it back with the ratings")
    source = serializers.CharField()  # type: ignore[assignment]
    reference = serializers.CharField(allow_blank=True, help_text="empty unless the study shows the reference")
    outputs = PageOutputSerializer(many=True)
    dimensions = DimensionSerializer(many=True)


class NextPageSerializer(serializers.Serializer):  # type: ignore[type-arg]
    exclude = serializers.ListField(child=serializers.CharField(max_length=40), required=False, default=list, max_length=4,
                                    help_text="tokens already on screen (to preload the following page)")


class RatingEntrySerializer(serializers.Serializer):  # type: ignore[type-arg]
    position = serializers.IntegerField(min_value=0)
    values = serializers.DictField(child=serializers.FloatField(), help_text="{dimension key: value}")


class PageAnswerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField(max_length=40)
    ratings = RatingEntrySerializer(many=True)


class PageResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    token = serializers.CharField()
    duplicate = serializers.BooleanField(help_text="true when this page was submitted before (nothing new stored)")
    answered = serializers.IntegerField(help_text="pages you have rated in this study")


class MyProgressSerializer(serializers.Serializer):  # type: ignore[type-arg]
    answered = serializers.IntegerField()
    excluded = serializers.BooleanField()


class ScoreSerializer(serializers.Serializer):  # type: ignore[type-arg]
    system = serializers.CharField()
    dimension = serializers.CharField()
    mean = serializers.FloatField(allow_null=True)
    sd = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_raters = serializers.IntegerField()


class PairSerializer(serializers.Serializer):  # type: ignore[type-arg]
    dimension = serializers.CharField()
    system_a = serializers.CharField()
    system_b = serializers.CharField()
    mean_diff = serializers.FloatField(allow_null=True)
    n_items = serializers.IntegerField()
    p_value = serializers.FloatField()
    p_holm = serializers.FloatField()
    method = serializers.CharField()
    significant = serializers.BooleanField()


class AgreementSerializer(serializers.Serializer):  # type: ignore[type-arg]
    dimension = serializers.CharField()
    alpha = serializers.FloatField(allow_null=True)
    units = serializers.IntegerField()
    level = serializers.CharField()


class MetricsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    system = serializers.CharField()
    sari = serializers.FloatField(allow_null=True)
    sari_add = serializers.FloatField(allow_null=True)
    sari_keep = serializers.FloatField(allow_null=True)
    sari_del = serializers.FloatField(allow_null=True)
    bleu = serializers.FloatField(allow_null=True)
    fkgl = serializers.FloatField()
    length = serializers.FloatField()
    n = serializers.IntegerField()


class CorrelationSerializer(serializers.Serializer):  # type: ignore[type-arg]
    metric = serializers.CharField()
    dimension = serializers.CharField()
    pearson = serializers.FloatField(allow_null=True)
    spearman = serializers.FloatField(allow_null=True)
    systems = serializers.IntegerField()


class ResultsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    study = serializers.IntegerField()
    design = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField())
    dimensions = serializers.ListField(child=serializers.CharField())
    bootstrap = serializers.CharField()
    test = serializers.CharField()
    n_boot = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField())
    scores = ScoreSerializer(many=True)
    pairwise = PairSerializer(many=True)
    agreement = AgreementSerializer(many=True)
    positions = serializers.DictField(child=serializers.ListField(child=serializers.IntegerField()))
    controls = serializers.DictField()
    metrics = MetricsSerializer(many=True)
    correlations = CorrelationSerializer(many=True)


class StudyLedgerTotalSerializer(OnTaskSerializer):
    """A study's ledger summed over its raters."""

    pages_served = serializers.IntegerField(help_text="pages ever served (expired reservations included)")
    pages_answered = serializers.IntegerField()
    ratings = serializers.IntegerField(help_text="ratings of system outputs (one version, one dimension), valid or not")
    valid_ratings = serializers.IntegerField()
    discarded = serializers.IntegerField(help_text="ratings set apart when their rater was excluded")
    control_ratings = serializers.IntegerField(help_text="ratings of controls (slider studies), paid like test answers")


class StudyLedgerRowSerializer(StudyLedgerTotalSerializer):
    """One rater's line of a study's ledger."""

    rater = serializers.CharField()
    excluded = serializers.BooleanField()


class StudyLedgerSerializer(PayTermsSerializer):
    """A human-evaluation study's cost ledger."""

    pay_per_judgment = serializers.CharField(help_text="decimal: paid per rating, control ratings included")
    total = StudyLedgerTotalSerializer()
    items = serializers.IntegerField()
    items_complete = serializers.IntegerField(help_text="items with raters_per_item valid pages")
    cost_per_valid_rating = serializers.CharField(allow_null=True)
    cost_per_item = serializers.CharField(allow_null=True, help_text="total cost per item fully rated")
    raters = StudyLedgerRowSerializer(many=True)
