"""Pipeline services: plain functions the Celery tasks, management commands and views call.

They take ids and plain parameters, talk to ``alignment_engine`` with plain data
(``DocPair``/``Alignment``) and write results in bulk. Nothing here knows about Celery.
"""
