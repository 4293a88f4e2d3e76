"""Annotation services: thin views call these; each module holds one concern.

- ``prealign``   paragraph pre-alignment and candidate generation (from the engine);
- ``correction`` paragraph-alignment correction: locks, saving links, revisions, candidates;
- ``jobs``       labeling-job creation from candidate pairs and gold test questions;
- ``assignment`` serving questions (capacity, reservations, test-question pages);
- ``labeling``   accepting answers (minimum time, idempotency, test answers);
- ``quality``    test-question accuracy and automatic removal.
"""
