"""Corpus pages: thin views over curation.queries; htmx gets partials."""

from __future__ import annotations

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django_htmx.middleware import HtmxDetails

from accounts.params import TextField, query
from accounts.permissions import staff_required
from curation.models import Article, Corpus, DocumentPair, ReferenceAlignment
from curation.queries import articles_of, corpora_with_counts, document_paragraphs


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class SearchParams(forms.Form):
    q = TextField(max_length=200)


@staff_required
def corpus_list(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/corpus_list.html", {"corpora": corpora_with_counts()})


@staff_required
def corpus_detail(request: HtmxHttpRequest, corpus_id: int) -> HttpResponse:
    corpus = get_object_or_404(Corpus, pk=corpus_id)
    search = query(SearchParams, request.GET)["q"]
    page = Paginator(articles_of(corpus, search), 25).get_page(request.GET.get("page"))
    context = {"corpus": corpus, "page": page, "q": search}
    if request.htmx:
        return render(request, "curation/_article_table.html", context)
    return render(request, "curation/corpus_detail.html", context)


@staff_required
def article_detail(request: HttpRequest, article_id: int) -> HttpResponse:
    article = get_object_or_404(Article.objects.select_related("corpus"), pk=article_id)
    documents = [(doc, document_paragraphs(doc)) for doc in article.documents.order_by("level")]
    pairs = article.pairs.select_related("complex", "simple").order_by("complex__level", "simple__level")
    return render(request, "curation/article_detail.html", {"article": article, "documents": documents, "pairs": pairs})


@staff_required
def pair_detail(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = get_object_or_404(DocumentPair.objects.select_related("article", "corpus", "complex", "simple"), pk=pair_id)
    complex_paras = document_paragraphs(pair.complex, pair.pair_id, 1)
    simple_paras = document_paragraphs(pair.simple, pair.pair_id, 0)
    n_reference = ReferenceAlignment.objects.filter(pair=pair).count()
    return render(
        request,
        "curation/pair_detail.html",
        {"pair": pair, "complex_paras": complex_paras, "simple_paras": simple_paras, "n_reference": n_reference},
    )
