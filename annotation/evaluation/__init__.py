"""Human evaluation of simplification output, part of the annotation app.

Three designs (``designs``): Likert fluency/adequacy/simplicity (Jiang et al. 2020), a 0-100
slider with control items (BiSECT, Kim et al. 2021) and comparative simplicity against the
reference. Studies reuse the labeling job's reservation, minimum time, throttle and removal
machinery (``annotation.services``). Pure modules (no Django): ``designs``, ``balance``,
``importers``, ``controls``, ``stats``, ``metrics``, ``simulation``.
"""
