"""Scale-out: the engine's methods as a real Flower federation, and card runs and sweeps on a Ray cluster.

    federation.py   the lab's round split between a server and nodes holding users (no Flower in it)
    flower_app.py   the Flower ServerApp / ClientApp around it; `flwr run` loads `server_app`, `client_app`
    simulate.py     run_flower(cfg, nodes): the same apps in Flower's simulation engine
    deploy.py       a SuperLink and SuperNodes as separate processes on one machine, `flwr run`, clean stop
    ray_runs.py     card runs and sweeps as Ray tasks, written to the run cache
    app/            the Flower app project (pyproject.toml) that `flwr run` submits
    cli.py          `labcore flower ...`, `labcore sweep ...`

Flower and Ray are an extra (`pip install -c constraints.txt -e ".[scale]"`); nothing else in labcore
imports this package. docs/scale-out.md says when to use which, with measured overheads.
"""
