"""The Streamlit lab (`streamlit run app.py`): pages, URL state and the run hub.

Layout:
    state.py     the URL scheme: query parameters <-> RunConfig + page options (no Streamlit import)
    controls.py  sidebar widgets bound to that state, honouring lesson mode (`_hide`)
    jobs.py      background runs shared by all sessions, streamed round by round, stoppable
    runs.py      Streamlit glue: cached datasets / results / contexts, the streaming loop
    sweeps.py    the Compare page's configuration grids (CoLR Fig. 3 / Fig. 4 forms, ...)
    presets.py   one link per paper figure or table
    analytic.py  payload sizes per message part without training (checked against the ledger)
    pages/       one module per page; they render, labcore computes
"""
