"""Matrix completion benchmark (report 2 of rice-course-reports-gist-mc-wireless-sdp-fl.txt).

What is where in this folder:

    config.py        CompletionConfig: one algorithm on one problem (size, rank, share seen, kappa, noise,
                     dataset) under one CPU-time budget; validated, `key()` is the cache key
    problem.py       the problem generator (M* = U diag(s) V^T, uniform sampling, noise, PSD, rectangular) and
                     the information-limit check (seen entries against r(m + n - r))
    ratings.py       MovieLens ratings read for a completion problem (problem.py: share seen, the rest held out)
    errors.py        the relative error from the factors (QR of the factors), dense and trace references
    ops.py           sparse operations on the seen entries and a warm-started randomized SVD
    algorithms/      one file per algorithm behind one interface (init, step, factors): ASD, ScaledASD,
                     LMaFit, NIHT, CGIHT, FGD, ScaledGD, LRGeomCG, MatrixIRLS, soft-impute
    harness.py       the same budget for every algorithm, iterates logged at fixed times, a tidy DataFrame,
                     parallel processes and a cache by config
    paper.py         the report's numbers and captions;  cards.py  its Fig. 1-4 and Table 1 as figure cards
    plots.py         the race, the Table 1 bars and the phase map (plotly)
    page.py          the app page (live race, phase map, stored cards); exercises.py the notebook's checks
    topic.py         the topic's declaration (labcore.topics)
    __main__.py      the older `python -m labcore.completion <card> --size full --jobs 2 --save` (= `labcore figure`)
"""
