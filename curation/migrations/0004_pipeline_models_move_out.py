# The pipeline models (Job, ModelVersion, AlignmentRun, RunChunk, PredictedAlignment,
# ExportedDataset) move to the pipeline app: this drops them from curation's migration state
# only. Their tables stay as they are; pipeline.0001 adopts them under the same names.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0003_runs_chunk_worker'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='alignmentrun',
                    name='corpus',
                ),
                migrations.RemoveField(
                    model_name='alignmentrun',
                    name='job',
                ),
                migrations.RemoveField(
                    model_name='alignmentrun',
                    name='model_version',
                ),
                migrations.RemoveField(
                    model_name='predictedalignment',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='exporteddataset',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='exporteddataset',
                    name='corpus',
                ),
                migrations.RemoveField(
                    model_name='exporteddataset',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='exporteddataset',
                    name='job',
                ),
                migrations.RemoveField(
                    model_name='job',
                    name='corpus',
                ),
                migrations.RemoveField(
                    model_name='job',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='modelversion',
                    name='job',
                ),
                migrations.RemoveField(
                    model_name='modelversion',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='predictedalignment',
                    name='complex',
                ),
                migrations.RemoveField(
                    model_name='predictedalignment',
                    name='pair',
                ),
                migrations.RemoveField(
                    model_name='predictedalignment',
                    name='simple',
                ),
                migrations.DeleteModel(
                    name='RunChunk',
                ),
                migrations.DeleteModel(
                    name='AlignmentRun',
                ),
                migrations.DeleteModel(
                    name='ExportedDataset',
                ),
                migrations.DeleteModel(
                    name='Job',
                ),
                migrations.DeleteModel(
                    name='ModelVersion',
                ),
                migrations.DeleteModel(
                    name='PredictedAlignment',
                ),
            ],
            database_operations=[],
        ),
    ]
