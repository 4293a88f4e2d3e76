"""Admin for evaluation studies (imported by ``annotation/admin.py``). Ratings are read-mostly."""

from __future__ import annotations

from django.contrib import admin

from annotation.models import EvalItem, EvalOutput, EvalPage, Rating, Study, StudyRater


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin[Study]):
    list_display = ["name", "design", "status", "raters_per_item", "sample_size", "seed", "min_seconds", "created_at"]
    list_filter = ["design", "status"]
    search_fields = ["name"]


@admin.register(EvalItem)
class EvalItemAdmin(admin.ModelAdmin[EvalItem]):
    list_display = ["study", "key", "position", "ratings_count", "reserved_count", "served_count"]
    list_filter = ["study"]
    search_fields = ["key", "source"]


@admin.register(EvalOutput)
class EvalOutputAdmin(admin.ModelAdmin[EvalOutput]):
    list_display = ["item", "system", "is_control"]
    list_filter = ["is_control"]
    raw_id_fields = ["item"]


@admin.register(StudyRater)
class StudyRaterAdmin(admin.ModelAdmin[StudyRater]):
    list_display = ["study", "rater", "pages_answered", "control_pages", "control_failed", "flagged", "excluded"]
    list_filter = ["flagged", "excluded", "study"]
    raw_id_fields = ["rater"]


@admin.register(EvalPage)
class EvalPageAdmin(admin.ModelAdmin[EvalPage]):
    list_display = ["study", "rater", "item", "slot", "served_at", "answered_at", "seconds", "control_failed"]
    list_filter = ["study"]
    raw_id_fields = ["rater", "item"]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin[Rating]):
    list_display = ["study", "item", "output", "rater", "dimension", "value", "is_valid"]
    list_filter = ["is_valid", "dimension", "study"]
    raw_id_fields = ["page", "item", "output", "rater"]
