"""The Streamlit lab (`streamlit run app.py`): pages, URL state and the run hub.

Layout:
    state.py     the URL scheme: query parameters <-> RunConfig + page options (no Streamlit import); a link
                 sets only the fields its page has controls for (or allow-lists)
    controls.py  sidebar widgets bound to that state, honouring lesson mode (`_hide`)
    jobs.py      background runs (and tasks: the Encryption page's attack) shared by all sessions, streamed
                 round by round, stopped when their last viewer leaves
    budget.py    the work budget of a request (sample-steps, memory), the server's setting, never a link's
    runs.py      Streamlit glue: cached datasets / results / contexts, the streaming loop
    sweeps.py    the Compare page's configuration grids (CoLR Fig. 3 / Fig. 4 forms, ...)
    presets.py   the Preset record; every topic's presets (labcore/<topic>/presets.py) in the sidebar
    url_widgets.py  widgets bound to the URL for topic pages (value from the link once, stable keys)
    analytic.py  payload sizes per message part without training (checked against the ledger)
    pages/       the navigation (core pages, then every topic's pages from labcore.topics) and the core
                 pages: Explorer, Compare, Encryption, Paper figures; they render, labcore computes
"""
