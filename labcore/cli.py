"""Command line: `labcore run ...`, `labcore figure ...`, `labcore topics`, `labcore datasets`, `labcore flower
...` and `labcore sweep ...` (labcore/scale/), and the commands topics add (`labcore table2 ...` is CoLR's: `labcore/colr/cli.py`).

Every RunConfig field is an option (`--rank 4`, `--bandwidth-tiers '[[0.5,1,1],[0.5,0.2,0.2]]'`).
A topic adds commands by naming a module with `add_commands(subparsers)` as its `cli` (labcore.topics).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from .config import ConfigError, RunConfig, from_dict
from .units import readable_bytes


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs={text!r}: allowed values are whole numbers >= 1")
    return n


def add_config_options(p: argparse.ArgumentParser) -> None:
    for f in fields(RunConfig):
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None,
                       help=f"default: {getattr(RunConfig(), f.name)!r}")


def config_from_args(ns: argparse.Namespace) -> RunConfig:
    given = {f.name: getattr(ns, f.name) for f in fields(RunConfig) if getattr(ns, f.name) is not None}
    return from_dict(given)


def _summary(res) -> str:
    f = res.final
    lines = [f"{res.config.describe()} on {res.config.dataset}: {f['rounds']} rounds"
             + (" (cached)" if res.cached else "") + ("" if res.complete else " (stopped early)"),
             f"  HR@{res.config.top_k} {f['hr']:.4f}   NDCG@{res.config.top_k} {f['ndcg']:.4f}",
             f"  bytes up {readable_bytes(f['bytes_up'])} ({f['bytes_up']:,})   "
             f"bytes down {readable_bytes(f['bytes_down'])} ({f['bytes_down']:,})   "
             f"simulated wall-clock {f['wallclock_min']:.1f} min"]
    if res.notes:
        lines.append(f"  data: {res.notes}")
    return "\n".join(lines)


def cmd_run(ns) -> int:
    from .fed.engine import run
    from .runtime import default_cache_dir

    cfg = config_from_args(ns)
    res = run(cfg, cache_dir=ns.cache_dir, use_cache=not ns.no_cache, progress=not ns.quiet)
    print(_summary(res))
    out = Path(ns.out) if ns.out else (Path(ns.cache_dir or default_cache_dir()) / cfg.key() / "table.csv")
    if ns.out or ns.no_cache:
        out.parent.mkdir(parents=True, exist_ok=True)
        res.table.to_csv(out, index=False)
    print(f"  per-round table: {out}")
    if ns.plot:
        from . import plots

        plots.metric_curves([res], x="round", y="hr").write_html(ns.plot)
        print(f"  plot: {ns.plot}")
    return 0


def _print_card_result(card, res, quiet: bool) -> None:
    import pandas as pd

    cmp = res.comparison()
    with pd.option_context("display.max_colwidth", 70, "display.width", 200):
        print(cmp.to_string(index=False))
        if not quiet:
            cols = [c for c in card.columns if c in res.ours.columns]
            print()
            print(res.ours[cols].to_string(index=False, max_rows=40, float_format=lambda v: f"{v:.4g}"))
    tolerance = "" if res.size == "smoke" else f" ({card.tolerance_text})"
    print(f"{card.id} [{res.size}]: {res.verdict}{tolerance}; {res.runtime_s:.1f} s")


def cmd_figure(ns) -> int:
    from . import figures
    from .scale.cli import check_backend

    check_backend(ns.backend, ns.address)
    if ns.html is not None and not ns.html.strip():
        raise ValueError("--html='' is invalid: give a file (one card), a folder ('all' or a pattern), or 'none' "
                         "for no plot")
    if ns.doc is not None and not ns.report:
        raise ValueError(f"--doc={ns.doc!r} is invalid without --report: the doc's block holds a report's tables")
    if ns.report:
        from .figures.report import markdown, write_doc

        if len(ns.card) > 1:
            raise ValueError(f"--report takes one card id prefix (e.g. colr-) or all, not {len(ns.card)}: "
                             f"{' '.join(ns.card)}")
        prefix = ns.card[0] if ns.card and ns.card[0] != "all" else ""
        if not any(c.id.startswith(prefix) for c in figures.list_cards()):
            raise ValueError(f"--report {prefix!r}: no card id starts with {prefix!r}; `labcore figure --list` "
                             "lists the card ids")
        if ns.doc:
            write_doc(ns.doc, prefix=prefix)
            print(f"wrote the reproduction tables of {f'the cards {prefix}*' if prefix else 'every card'} "
                  f"into {ns.doc}")
        else:
            print(markdown(prefix=prefix), end="")
        return 0
    if ns.list or not ns.card:
        for c in figures.list_cards():
            st = figures.stored(c.id, figure=False) if ns.list else None
            mark = "" if st is None else f"  [stored: {st.verdict}]"
            print(f"{c.id:<22} {c.kind:<6} {c.title}{mark}")
        if not ns.list:
            print("\nlabcore figure <id> [--full] [--save]   |   labcore figure all --full --save")
        return 0
    ids = list(dict.fromkeys(i for name in ns.card for i in _card_ids(figures, name)))
    ids.sort(key=lambda i: "pinterest" in i)  # the long Pinterest runs last
    size = "full" if ns.full else "smoke"
    if ns.save and size != "full":
        raise ValueError("--save writes results/<id>.csv for full-size reproductions only: add --full")
    if size == "full" and not ns.stored and (ns.jobs > 1 or ns.backend == "ray"):
        _train_cards_in_parallel(figures, ids, ns.jobs, ns.backend, ns.address)
    for cid in ids:
        card = figures.get(cid)
        if ns.stored:
            res = figures.stored(cid)
            if res is None:
                print(f"{cid}: no stored result in {figures.results_dir()} (labcore figure {cid} --full --save)")
                continue
        else:
            print(card.describe() if not ns.quiet else card.id, flush=True)
            try:
                res = figures.reproduce(cid, size=size, progress=not ns.quiet)
            except Exception as e:  # with 'all', one failing card must not lose the others' results
                if len(ids) == 1:
                    raise
                print(f"{cid}: failed: {type(e).__name__}: {e}\n", flush=True)
                continue
        _print_card_result(card, res, ns.quiet)
        if ns.html != "none":
            out = Path(ns.html or f"{cid}.html") if len(ids) == 1 else Path(ns.html or ".") / f"{cid}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            res.figure.write_html(out, include_plotlyjs=True)  # self-contained: opens offline
            print(f"  plot: {out}")
        if ns.save and not ns.stored:
            path = figures.save(res, command=f"labcore figure {cid} --full --save")
            print(f"  saved: {path} (+ .json)")
        print(flush=True)
    return 0


def _card_ids(figures, name: str) -> list[str]:
    """The cards `name` means: one id, every card ('all'), or those matching a pattern such as 'colr-*'."""
    if name != "all" and "*" not in name:
        return [figures.get(name).id]
    import fnmatch

    pattern = "*" if name == "all" else name
    ids = [c.id for c in figures.list_cards() if fnmatch.fnmatch(c.id, pattern)]
    if not ids:
        raise ValueError(f"no figure card matches {pattern!r}; valid ids: {', '.join(figures.card_ids())}")
    return ids


def reproduce_cards(argv: list[str], prefix: str) -> int:
    """The topics' older entry points (`python -m labcore.gist.reproduce ids... --jobs 2`, `... --size full
    --save`): each card id (default: every card starting with `prefix`) through `labcore figure`."""
    p = argparse.ArgumentParser(prog=f"labcore figure (the {prefix.rstrip('-')} cards)")
    p.add_argument("cards", nargs="*")
    p.add_argument("--size", choices=("smoke", "full"), default="full")
    p.add_argument("--jobs", type=_positive_int, default=1)
    p.add_argument("--save", action="store_true", help="(full size: always saved)")
    ns = p.parse_args(argv)
    from . import figures

    ids = ns.cards or [c.id for c in figures.list_cards() if c.id.startswith(prefix)]
    full = ["--full", "--save"] if ns.size == "full" else []
    return max(main(["figure", cid, *full, "--jobs", str(ns.jobs), "--html", "none"]) for cid in ids)


def _train_cards_in_parallel(figures, ids: list[str], jobs: int, backend: str = "processes",
                             address: str | None = None) -> None:
    """Train the union of the cards' runs in `jobs` processes (or on a Ray cluster) first; the cards then
    read the cache. The engine's runs go to the shared runner; a topic's own configs to its `prefetch`."""
    import time

    from . import topics
    from .config import RunConfig
    from .figures.runs import train_parallel, train_ray

    cfgs, own = [], {}
    for cid in ids:
        for c in figures.get(cid).configs("full"):
            if isinstance(c, RunConfig):
                cfgs.append(c)
            elif (topic := topics.card_topic(cid)) is not None and topic.prefetch:
                own.setdefault(topic.name, (topic, {}))[1].setdefault(cid, []).append(c)
    for topic, by_card in own.values():
        topic.function(topic.prefetch)(by_card, jobs)
    t0 = time.perf_counter()
    if backend == "ray":
        n = train_ray(cfgs, address=address, num_cpus=jobs if address is None else None)
        where = f"Ray cluster {address}" if address else f"a local Ray cluster of {jobs} CPUs"
    else:
        n, where = train_parallel(cfgs, jobs), f"{jobs} processes"
    if n:
        print(f"trained {n} runs in {(time.perf_counter() - t0) / 60:.1f} min on {where}", flush=True)


def cmd_topics(ns) -> int:
    from . import figures, topics

    cards = figures.list_cards()
    for t in topics.all_topics():
        mine = [c for c in cards if topics.card_topic(c.id) is t]
        stored = [c for c in mine if (figures.results_dir() / f"{c.id}.csv").exists()]
        pages = ", ".join(p.title for p in t.pages) or "the core pages"
        print(f"{t.name:<11} {t.title}")
        print(f"{'':<11} paper:    {t.paper}")
        print(f"{'':<11} section:  {t.section}; pages: {pages}")
        print(f"{'':<11} notebook: {t.notebook or '-'}")
        print(f"{'':<11} cards:    {len(mine)} ({len(stored)} with a stored full-size result)")
        if ns.cards:
            for c in mine:
                print(f"{'':<13} {c.id:<28} {'stored' if c in stored else 'not stored':<10} {c.title}")
        print()
    return 0


def cmd_datasets(ns) -> int:
    from .config import DATASETS

    print("datasets:", ", ".join(DATASETS))
    print("synthetic needs no download; the others are read from $LABCORE_DATA/<name>/ or ./data/<name>/.")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="labcore", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="train and evaluate one configuration (cached by config)")
    add_config_options(p)
    p.add_argument("--out", help="also write the per-round table to this CSV")
    p.add_argument("--plot", help="write an HTML chart of HR@10 per round")
    p.add_argument("--no-cache", action="store_true", help="ignore stored results and checkpoints")
    p.add_argument("--cache-dir", help="where results live (default $LABCORE_CACHE or ~/.cache/labcore/runs)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("figure", help="reproduce a paper figure or table beside the paper's numbers (every topic's cards: --list)")
    p.add_argument("card", nargs="*", help="card ids (see --list), patterns such as 'colr-*', or 'all'")
    p.add_argument("--list", action="store_true", help="list the cards (and whether a stored full result exists)")
    p.add_argument("--full", action="store_true", help="the real reproduction (paper datasets and settings); "
                                                      "default: the smoke size (synthetic data, seconds)")
    p.add_argument("--save", action="store_true", help="with --full: write results/<id>.csv and .json")
    p.add_argument("--stored", action="store_true", help="show the committed full-size result instead of running")
    p.add_argument("--report", action="store_true",
                   help="print the reproduction tables (markdown) of the stored results: per topic and per card, "
                        "numbers within, claims holding, rows shown (card: an id prefix, e.g. colr-, or all)")
    p.add_argument("--doc", help="with --report: write the tables into this doc's generated block instead of "
                                 "printing them; the block's markers name the report it holds (--report all: "
                                 "docs/reproduction.md; --report <topic>-: docs/topics/<topic>.md, e.g. "
                                 "--report colr- --doc docs/topics/colr.md)")
    p.add_argument("--jobs", type=_positive_int, default=1,
                   help="with --full: train the cards' runs in this many processes first (2 on a 2-core machine)")
    p.add_argument("--backend", choices=("processes", "ray"), default="processes",
                   help="with --full: train the cards' runs in local processes (--jobs) or on a Ray cluster "
                        "(labcore[scale]; a local one of --jobs CPUs unless --address)")
    p.add_argument("--address", help="with --backend ray: the Ray cluster to use (e.g. auto or ray://host:10001)")
    p.add_argument("--html", help="where to write the plot (default ./<id>.html; a folder with 'all'; 'none': no plot)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_figure)
    p = sub.add_parser("topics", help="list every topic: its paper, notebook, pages and cards (and which are stored)")
    p.add_argument("--cards", action="store_true", help="also list each topic's card ids")
    p.set_defaults(fn=cmd_topics)
    p = sub.add_parser("datasets", help="list datasets and where they are looked up")
    p.set_defaults(fn=cmd_datasets)
    from .scale.cli import add_commands as add_scale_commands

    add_scale_commands(sub, add_config_options, config_from_args)  # labcore flower / labcore sweep (Flower, Ray: labcore[scale])
    from . import topics

    for t in topics.all_topics():
        mod = t.module(t.cli)
        if mod is not None:
            mod.add_commands(sub)
    ns = ap.parse_args(argv)
    try:
        return ns.fn(ns)
    except (ConfigError, ValueError, FileNotFoundError) as e:  # bad config, malformed or missing data
        print(f"labcore: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
