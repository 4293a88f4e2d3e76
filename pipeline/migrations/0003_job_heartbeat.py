from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0002_job_import_kind")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="heartbeat_at",
            field=models.DateTimeField(
                blank=True, null=True, help_text="last sign of life from the process running it (pipeline.jobs.heartbeat)"
            ),
        ),
    ]
