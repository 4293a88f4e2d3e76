# The pipeline models, moved out of curation (see curation.0004): state only, the tables
# created by curation.0002/0003 are adopted as they are (db_table = curation_<model>), rows and
# all. Content types (and so permissions and admin log entries) move with them.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ["job", "modelversion", "alignmentrun", "runchunk", "predictedalignment", "exporteddataset"]


def _relabel(apps, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=new, model=model).exists():
            content_type.objects.filter(app_label=old, model=model).update(app_label=new)


def move_content_types(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    _relabel(apps, "curation", "pipeline")


def move_content_types_back(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    _relabel(apps, "pipeline", "curation")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('curation', '0004_pipeline_models_move_out'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AlignmentRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('method', models.CharField(max_length=32)),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alignment_runs', to='curation.corpus')),
                    ],
                    options={
                        'db_table': 'curation_alignmentrun',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='Job',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('prepopulate', 'pre-populate candidates'), ('align_corpus', 'align a corpus'), ('retrain', 'retrain the aligner'), ('export', 'export a dataset')], max_length=16)),
                        ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('succeeded', 'succeeded'), ('failed', 'failed'), ('cancelled', 'cancelled')], default='queued', max_length=12)),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('result', models.JSONField(blank=True, default=dict)),
                        ('progress_done', models.PositiveIntegerField(default=0)),
                        ('progress_total', models.PositiveIntegerField(default=0)),
                        ('message', models.CharField(blank=True, max_length=500)),
                        ('error', models.TextField(blank=True)),
                        ('cancel_requested', models.BooleanField(default=False)),
                        ('celery_task_id', models.CharField(blank=True, max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('corpus', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='curation.corpus')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'curation_job',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='ExportedDataset',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('manual', 'Manual (human labels)'), ('auto', 'Auto (predicted by a corpus run)'), ('pool', 'Simple-sentence pool (back-translation)')], max_length=8)),
                        ('format', models.CharField(choices=[('tsv', 'alignment TSV'), ('jsonl', 'JSONL'), ('parquet', 'Parquet')], default='tsv', max_length=8)),
                        ('params', models.JSONField(blank=True, default=dict, help_text='filters, splits, seed')),
                        ('path', models.CharField(blank=True, help_text='folder under EXPORTS_DIR', max_length=500)),
                        ('files', models.JSONField(blank=True, default=list, help_text='[{name, bytes, sha256, rows}]')),
                        ('card', models.JSONField(blank=True, default=dict, help_text='dataset card: counts, splits, filters, phenomena')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='exports', to='curation.corpus')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='pipeline.alignmentrun')),
                        ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='exports', to='pipeline.job')),
                    ],
                    options={
                        'db_table': 'curation_exporteddataset',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddField(
                    model_name='alignmentrun',
                    name='job',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='alignment_runs', to='pipeline.job'),
                ),
                migrations.CreateModel(
                    name='ModelVersion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('method', models.CharField(default='crf', max_length=32)),
                        ('language', models.CharField(default='en', max_length=8)),
                        ('path', models.CharField(blank=True, help_text='model directory (empty for baselines)', max_length=500)),
                        ('config', models.JSONField(blank=True, default=dict)),
                        ('metrics', models.JSONField(blank=True, default=dict, help_text='{split: {task1: {p, r, f1}, task2: {...}}}')),
                        ('data_counts', models.JSONField(blank=True, default=dict)),
                        ('seed', models.IntegerField(default=0)),
                        ('is_promoted', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='model_versions', to='pipeline.job')),
                    ],
                    options={
                        'db_table': 'curation_modelversion',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddField(
                    model_name='alignmentrun',
                    name='model_version',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='pipeline.modelversion'),
                ),
                migrations.CreateModel(
                    name='PredictedAlignment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('label', models.CharField(choices=[('aligned', 'aligned'), ('partialAligned', 'partially aligned'), ('notAligned', 'not aligned')], max_length=16)),
                        ('score', models.FloatField(blank=True, null=True)),
                        ('complex', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='curation.sentence')),
                        ('pair', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='curation.documentpair')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='predictions', to='pipeline.alignmentrun')),
                        ('simple', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='curation.sentence')),
                    ],
                    options={
                        'db_table': 'curation_predictedalignment',
                    },
                ),
                migrations.CreateModel(
                    name='RunChunk',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('index', models.PositiveIntegerField()),
                        ('pair_ids', models.JSONField(help_text='DocumentPair primary keys')),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('done', 'done'), ('failed', 'failed')], default='pending', max_length=8)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('worker', models.CharField(blank=True, help_text='hostname:pid of the last process that took it', max_length=200)),
                        ('error', models.TextField(blank=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='pipeline.alignmentrun')),
                    ],
                    options={
                        'db_table': 'curation_runchunk',
                        'ordering': ['run', 'index'],
                    },
                ),
                migrations.AddIndex(
                    model_name='job',
                    index=models.Index(fields=['status', 'kind'], name='curation_jo_status_6f5228_idx'),
                ),
                migrations.AddConstraint(
                    model_name='modelversion',
                    constraint=models.UniqueConstraint(condition=models.Q(('is_promoted', True)), fields=('language',), name='one_promoted_model_per_language'),
                ),
                migrations.AddIndex(
                    model_name='predictedalignment',
                    index=models.Index(fields=['run', 'pair'], name='curation_pr_run_id_55277c_idx'),
                ),
                migrations.AddConstraint(
                    model_name='predictedalignment',
                    constraint=models.UniqueConstraint(fields=('run', 'simple', 'complex'), name='prediction_unique_sentence_pair'),
                ),
                migrations.AddConstraint(
                    model_name='runchunk',
                    constraint=models.UniqueConstraint(fields=('run', 'index'), name='chunk_unique_index'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
