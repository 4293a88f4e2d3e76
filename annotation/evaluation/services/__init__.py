"""Evaluation services: ``studies`` (create, open, close, edit), ``assignment`` (serving pages),
``rating`` (accepting a page), ``raters`` (control flags, exclusion, rater figures),
``results`` (statistics from the rows), ``exporting`` (files and card), ``presenting`` (what a
rater sees: never a system name), ``simulated`` (simulated raters through these services)."""
