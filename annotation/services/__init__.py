"""Annotation services: thin views call these; each module holds one concern.

- ``candidates``   paragraph links, their revisions and candidate sentence pairs (from the engine);
- ``correction``   paragraph-alignment correction: pair locks, saving corrected links, the queue;
- ``job_setup``    labeling-job creation from candidate pairs and gold test questions;
- ``assignment``   serving questions (capacity, reservations, test-question pages);
- ``labeling``     accepting answers (minimum time, idempotency, test answers);
- ``removal``      test-question accuracy and automatic removal of inaccurate annotators;
- ``presenting``   what the labeling pages and API show (visible jobs, progress);
- ``job_agreement`` agreement and aggregation of a job's judgments (ORM <-> numpy);
- ``verification`` the in-house verification queue and verified labels;
- ``simulated_job`` a labeling job built from a simulated crowd (benchmarks, demos).
"""
