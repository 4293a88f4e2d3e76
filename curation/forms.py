from __future__ import annotations

from typing import Any

from django import forms

from curation.importers.run import FORMATS
from curation.importers.types import ImportOptions
from curation.models import Corpus


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class ImportForm(forms.Form):
    # The upload field is named "files" (Form.files is replaced by the bound data at runtime).
    files = MultipleFileField(  # type: ignore[assignment]
        help_text="one JSONL or TSV file, all text / plan CSV files of a corpus, or the corpus as one .zip or .tar.gz archive"
    )
    format = forms.ChoiceField(choices=list(FORMATS.items()))
    corpus = forms.CharField(max_length=200)
    language = forms.CharField(max_length=8, initial="en")
    kind = forms.ChoiceField(choices=Corpus.Kind.choices, initial=Corpus.Kind.NEWS)
    role = forms.ChoiceField(choices=[("gold", "gold standard"), ("labels", "training labels")], initial="gold", help_text="for TSV files")
    all_levels = forms.BooleanField(required=False, help_text="pair every two levels, not only adjacent ones")
    replace = forms.BooleanField(required=False, help_text="overwrite articles whose text changed")
    drop_short = forms.BooleanField(required=False, help_text="drop sentences under 4 tokens or ending in ':'")
    exclude = forms.CharField(
        required=False, max_length=2000, widget=forms.TextInput,
        help_text="paths inside an archive to skip, comma-separated globs, e.g. int/*",
    )

    def clean_files(self) -> list[Any]:
        """Files of one level with the same name would overwrite each other: refused, naming them."""
        files = self.cleaned_data["files"]
        seen: dict[str, int] = {}
        for uploaded in files:
            name = (uploaded.name or "upload").replace("\\", "/").rsplit("/", 1)[-1]
            seen[name] = seen.get(name, 0) + 1
        twice = sorted(name for name, n in seen.items() if n > 1)
        if twice:
            raise forms.ValidationError(
                f"{len(twice)} file name(s) chosen more than once ({', '.join(twice[:5])}): files from different folders "
                "cannot be told apart in an upload; choose the files of one folder, or upload the corpus as an archive "
                "and skip a folder with 'exclude'"
            )
        return list(files)

    def clean_exclude(self) -> list[str]:
        return [part.strip() for part in self.cleaned_data["exclude"].split(",") if part.strip()]

    def options(self) -> ImportOptions:
        """The import's options from the cleaned form."""
        names = ("corpus", "format", "language", "kind", "all_levels", "replace", "drop_short", "role", "exclude")
        return ImportOptions(**{name: self.cleaned_data[name] for name in names})
