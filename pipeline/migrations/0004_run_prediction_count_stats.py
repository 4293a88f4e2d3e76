# AlignmentRun.prediction_count (maintained by each chunk's write) and AlignmentRun.stats (the
# run's label statistics, stored when the run ends). Existing runs get their count from their
# predictions here; their statistics are computed the first time they are asked for.

from django.db import migrations, models
from django.db.models import Count


def backfill_counts(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    run_model = apps.get_model("pipeline", "AlignmentRun")
    prediction_model = apps.get_model("pipeline", "PredictedAlignment")
    counts = prediction_model.objects.order_by().values_list("run_id").annotate(n=Count("pk"))
    for run_id, n in counts:
        run_model.objects.filter(pk=run_id).update(prediction_count=n)


class Migration(migrations.Migration):

    dependencies = [
        ("pipeline", "0003_job_heartbeat"),
    ]

    operations = [
        migrations.AddField(
            model_name="alignmentrun",
            name="prediction_count",
            field=models.PositiveIntegerField(
                default=0, help_text="stored predictions, maintained by each chunk's write (pages read it instead of counting)"),
        ),
        migrations.AddField(
            model_name="alignmentrun",
            name="stats",
            field=models.JSONField(
                blank=True, default=dict,
                help_text="the run's label statistics (pipeline.services.corpus_stats), stored when the run ends"),
        ),
        migrations.RunPython(backfill_counts, migrations.RunPython.noop),
    ]
