"""A seeded fuzzer of what a careless or hostile user can type: invalid configs of the core and of every topic,
invalid command lines, corrupted data files. Every one must be refused with the lab's own clear error (a
ValueError naming the field, or the file and line; the command line's one-line error), never accepted, never
another exception. The work is bounded by counts, not by time."""
from __future__ import annotations

import contextlib
import io
import random
import subprocess
import sys
import typing
from dataclasses import fields
from pathlib import Path

import pytest

from labcore.typed_config import ConfigError, build

SEED = 56


def config_classes() -> list[type]:
    """The core's RunConfig and every topic's configs (each a TypedConfig)."""
    from labcore.completion.config import CompletionConfig
    from labcore.config import RunConfig
    from labcore.fair.config import FairConfig
    from labcore.fellrec.config import FellrecConfig
    from labcore.flalgos.config import FLConfig
    from labcore.gist.config import GistConfig, KipfConfig
    from labcore.sdp.config import SdpConfig
    from labcore.sttfedrec.config import STTConfig
    from labcore.wireless.config import WirelessConfig

    return [RunConfig, FairConfig, STTConfig, FLConfig, WirelessConfig, CompletionConfig, GistConfig, KipfConfig,
            SdpConfig, FellrecConfig]


def test_every_typed_config_of_the_lab_is_fuzzed():
    """A new topic's config joins the fuzzer: every TypedConfig subclass the topics define is listed above."""
    import importlib

    from labcore import topics
    from labcore.typed_config import TypedConfig

    for t in topics.all_topics():
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(f"{t.package}.config")

    def subclasses(c):
        return set(c.__subclasses__()).union(*(subclasses(s) for s in c.__subclasses__()))

    lab = {c for c in subclasses(TypedConfig) if c.__module__.startswith("labcore.")}
    assert lab <= set(config_classes()), sorted(c.__name__ for c in lab - set(config_classes()))


# --- configs -------------------------------------------------------------------------------------------------------
_NESTED_JUNK = ["[" * 3000, "[" * 3000 + "]" * 3000, '[[1.0, 1e309, 1]]', "[[1, true, 1]]", "[NaN]", "[[Infinity]]",
                "{}", "5", '[["a"]]', "[[[[[[[1]]]]]]]", "[1, 2" + ", 3" * 3000 + "]", [[1, float("inf"), 1]],
                [[{"a": 1}]], [1] * 5000]


def invalid_values(t: type, rng: random.Random) -> list:
    """Values no field of type `t` accepts, as strings (a link, the command line) and as Python values."""
    junk = ["~" + "".join(chr(rng.randrange(33, 127)) for _ in range(rng.randrange(1, 40))) for _ in range(2)]
    common = [None, "x" * 5000, ["a"], {"a": 1}, b"\x00\xff"] + junk
    if t is float:
        return common + [float("inf"), float("-inf"), float("nan"), "inf", "-inf", "nan", "1e309", "-1e309",
                         1e300, -1e300, "1e300", -1.0, "-0.5", True, "", "1,5", 10**400]
    if t is int:
        return common + [1.5, "1.5", "1e3", "0x10", True, "", 2**64, -(2**64), str(2**64), "9" * 5000, "- 1",
                         -2]  # -1 is a valid target_item
    if t is bool:
        return common + ["maybe", 2, "2", 1.0, "", "yes please", 0.0]
    if t is str:
        return common + ["", "zzz", 5, 1.5, True, "\x00", "colr\n"]
    if t is tuple:
        return common + _NESTED_JUNK
    raise AssertionError(t)


def config_cases() -> list[tuple[type, str, object]]:
    rng = random.Random(SEED)
    cases = []
    for cls in config_classes():
        types = typing.get_type_hints(cls)
        for f in fields(cls):
            cases += [(cls, f.name, v) for v in invalid_values(types[f.name], rng)]
    return cases


def _short(v) -> str:
    text = repr(v)
    return text if len(text) < 60 else text[:50] + "..."


def test_fuzzed_configs_are_refused_by_name():
    accepted, crashed, unnamed = [], [], []
    cases = config_cases()
    for cls, name, value in cases:
        try:
            build(cls, {name: value})
        except ConfigError as e:
            if f"{name}=" not in str(e):
                unnamed.append(f"{cls.__name__}.{name}={_short(value)}: {e}")
        except Exception as e:  # noqa: BLE001 - what the fuzzer looks for
            crashed.append(f"{cls.__name__}.{name}={_short(value)}: {type(e).__name__}: {e}")
        else:
            accepted.append(f"{cls.__name__}.{name}={_short(value)}")
    print(f"\nconfigs: {len(cases)} invalid over {len(config_classes())} config classes; accepted {len(accepted)}, "
          f"crashed {len(crashed)}, error not naming the field {len(unnamed)}")
    assert len(cases) >= 1000
    assert not accepted, accepted[:20]
    assert not crashed, crashed[:20]
    assert not unnamed, unnamed[:20]


def test_link_and_command_line_strings_are_refused_by_name_before_validation():
    """`labcore.config.coerce_field` (a link's or the command line's text): deep or overlong lists, bad numbers."""
    from labcore.config import RunConfig, coerce_field

    n = 0
    for name, t in typing.get_type_hints(RunConfig).items():
        for raw in {tuple: ["[" * 3000, "[" * 3000 + "]" * 3000, "[" + "1," * 5000 + "1]", "x" * 5000],
                    float: ["x" * 5000, "1e3.5"], int: ["9" * 5000, "1.0"], bool: ["maybe"], str: []}[t]:
            n += 1
            with pytest.raises(ConfigError, match=f"^{name}="):
                coerce_field(name, raw)
    assert n >= 100


# --- the command line -------------------------------------------------------------------------------------------
def run_cli(argv: list[str]) -> tuple[int, str]:
    """`labcore <argv>` in this process: (exit code, what it wrote to stderr)."""
    from labcore.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's own refusals
            code = e.code
    return code, err.getvalue()


def cli_cases() -> list[tuple[list[str], str]]:
    """(argv, text the error must hold): bad values of the run options, and every command's bad uses."""
    from labcore.config import RunConfig

    bad = {float: "inf", int: "1.5", bool: "maybe", str: "zzz", tuple: "[[1, true, 1]]"}
    types = typing.get_type_hints(RunConfig)
    rng = random.Random(SEED)
    names = sorted(types)
    cases = [(["run", "--" + n.replace("_", "-"), bad[types[n]]], f"{n}=") for n in rng.sample(names, 36)]
    cases += [(["run", "--" + n.replace("_", "-"), v], f"{n}=") for n, v in [
        ("lr", "inf"), ("lr", "nan"), ("weight_decay", "inf"), ("sec_per_sample", "inf"),
        ("bandwidth_tiers", "[[1.0,1e309,1]]"), ("bandwidth_tiers", "[[1,true,1]]"), ("bandwidth_tiers", "[" * 3000),
        ("ckks_coeff_bits", "[" * 3000), ("seed", str(2**64)), ("rounds", "9" * 5000)]]
    cases += [
        (["figure", "colr-fig3-ml1m", "--html", ""], "--html"),
        (["figure", "colr-fig3-ml1m", "--html", "  "], "--html"),
        (["figure", "--report", "zzz"], "labcore figure --list"),
        (["figure", "--address", "auto"], "--address"),
        (["figure", "colr-fig3-ml1m", "--address", "127.0.0.1:1"], "--backend ray"),
        (["figure", "colr-fig3-ml1m", "--backend", "ray", "--address", "127.0.0.1:1"], "127.0.0.1:1"),
        (["figure", "colr-fig3-ml1m", "--backend", "ray", "--address", "host:99999"], "--address"),
        (["figure", "colr-fig3-ml1m", "--backend", "ray", "--address", "nohost"], "--address"),
        (["figure", "colr-fig3-ml1m", "--backend", "dask"], "--backend"),
        (["figure", "no-such-card"], "no-such-card"),
        (["figure", "zzz-*"], "zzz-*"),
        (["figure", "colr-fig3-ml1m", "--jobs", "0"], "--jobs"),
        (["figure", "colr-fig3-ml1m", "--save"], "--save"),
        (["sweep", "--grid", "rank"], "--grid"),
        (["sweep", "--grid", "rank=abc"], "rank="),
        (["sweep", "--grid", "rnak=1,2"], "rnak"),
        (["sweep", "--jobs", "0"], "--jobs"),
        (["sweep", "--address", "auto"], "--address"),
        (["sweep", "--lr", "inf"], "lr="),
        (["flower", "sim", "--lr", "inf"], "lr="),
        (["flower", "app", "--rank", "100"], "rank="),
        (["flower", "bogus"], "mode"),
        (["table2", "--ranks", "a,b"], "--ranks"),
        (["table2", "--ranks", "100"], "rank="),
        (["run", "--rnak", "4"], "--rnak"),
        (["nosuchcommand"], "nosuchcommand"),
        ([], "required"),
    ]
    return cases


def test_fuzzed_command_lines_fail_with_one_clear_error():
    crashed, wrong = [], []
    cases = cli_cases()
    for argv, must in cases:
        try:
            code, err = run_cli(argv)
        except Exception as e:  # noqa: BLE001 - what the fuzzer looks for
            crashed.append(f"{argv[:3]}: {type(e).__name__}: {e}")
            continue
        ours = err.startswith("labcore: ") and err.count("\n") == 1  # main's one line
        argparse_ = "error:" in err.splitlines()[-1] if err else False  # usage + argparse's one error line
        if code in (0, None) or not (ours or argparse_) or must not in err or "Traceback" in err:
            wrong.append(f"{[a[:30] for a in argv]} -> exit {code}: {err[-300:]!r}")
    print(f"\ncommand lines: {len(cases)} invalid; crashed {len(crashed)}, accepted or unclear {len(wrong)}")
    assert len(cases) >= 50
    assert not crashed, crashed
    assert not wrong, wrong


def test_invalid_command_lines_as_real_processes():
    """A few of them as `labcore ...` processes (the console script's exit code and its stderr), started together."""
    import os

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    calls = [(["run", "--lr", "inf"], "lr=inf is invalid"),
             (["figure", "--report", "zzz"], "no card id starts with 'zzz'"),
             (["figure", "colr-fig3-ml1m", "--backend", "ray", "--address", "127.0.0.1:1"], "no Ray cluster answers")]
    procs = [(subprocess.Popen([sys.executable, "-m", "labcore.cli", *argv], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True), must) for argv, must in calls]
    for p, must in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 2, (p.args, err)
        assert must in err and "Traceback" not in err and err.count("\n") == 1, err


# --- corrupted data files ---------------------------------------------------------------------------------------
def _ratings_lines(sep: str, n: int = 12) -> list[str]:
    rng = random.Random(SEED)
    return [sep.join(str(x) for x in (1 + i % 4, 1 + rng.randrange(50), 1 + rng.randrange(5),
                                      880000000 + rng.randrange(10**6))) for i in range(n)]


def _base_files() -> dict[str, tuple[str, list[str], str]]:
    """format -> (file name, its valid lines, separator)."""
    rng = random.Random(SEED)
    negative = [f"({u},{100 + u})\t" + "\t".join(str(rng.randrange(100)) for _ in range(5)) for u in range(8)]
    lists = [f"{u} " + " ".join(str(rng.randrange(60)) for _ in range(1 + u % 5)) for u in range(10)]
    return {
        "ml1m": ("ratings.dat", _ratings_lines("::"), "::"),
        "ml100k": ("u.data", _ratings_lines("\t"), "\t"),
        "ncf-train": ("toy.train.rating", _ratings_lines("\t"), "\t"),
        "ncf-test": ("toy.test.rating", [f"{u}\t{100 + u}\t1\t0" for u in range(8)], "\t"),
        "ncf-negative": ("toy.test.negative", negative, "\t"),
        "lightgcn": ("train.txt", lists, " "),
    }


def _reader(fmt: str):
    from labcore.data import (read_lightgcn_lists, read_ml100k_ratings, read_ml1m_ratings, read_ncf_negatives,
                              read_ncf_ratings, read_ncf_test)

    return {"ml1m": read_ml1m_ratings, "ml100k": read_ml100k_ratings, "ncf-train": read_ncf_ratings,
            "ncf-test": read_ncf_test, "ncf-negative": read_ncf_negatives, "lightgcn": read_lightgcn_lists}[fmt]


def _replace_field(line: str, sep: str, k: int, value: str) -> str:
    parts = line.split(sep)
    parts[k] = value
    return sep.join(parts)


def corruptions(fmt: str, lines: list[str], sep: str, rng: random.Random) -> list[tuple[str, bytes, int | None]]:
    """(what, the corrupted file's bytes, the line the error must name or None for the file alone)."""
    def text(ls):
        return ("\n".join(ls) + "\n").encode()

    whole = text(lines)
    out = [("truncated mid-line", whole[: len(whole) - 4], len(lines)),
           ("cut mid-line at half", whole[: whole.index(b"\n", len(whole) // 2) - 2], None),
           ("empty", b"", None), ("blank lines only", b"\n  \n\n", None),
           ("garbage line", text(lines[:2] + ["hello world, this is not data"] + lines[2:]), 3),
           ("binary", bytes(rng.randrange(256) for _ in range(300)) + b"\n", None),
           ("NUL bytes", text(lines[:4] + ["\x00\x00\x00"] + lines[4:]), 5),
           ("UTF-16", ("\n".join(lines) + "\n").encode("utf-16"), None)]
    k = 0 if fmt == "lightgcn" else (2 if fmt == "ncf-negative" else 1)  # an integer id column
    for bad in ("1e3", "1.0", "+196", "8.8e8", "-3", "9" * 20, "0x1F", "１２"):
        out.append((f"number {bad!r}", text(lines[:1] + [_replace_field(lines[1], sep, k, bad)] + lines[2:]), 2))
    if fmt != "lightgcn":  # its lines have any number of items
        out.append(("missing field", text(lines[:3] + [sep.join(lines[3].split(sep)[:-1])] + lines[4:]), 4))
        out.append(("extra field", text(lines[:3] + [lines[3] + sep + "7"] + lines[4:]), 4))
        out.append(("wrong separator", text(lines[:5] + [lines[5].replace(sep, ";")] + lines[6:]), 6))
    if fmt != "ml1m":
        out.append(("timestamp 8.8e8" if fmt != "lightgcn" else "item 8.8e8",
                    text(lines[:6] + [_replace_field(lines[6], sep, -1, "8.8e8")] + lines[7:]), 7))
    return out


def test_corrupted_data_files_are_refused_naming_file_and_line(tmp_path):
    from labcore.data import DatasetFormatError

    rng = random.Random(SEED)
    n, accepted, crashed, unnamed = 0, [], [], []
    for fmt, (name, lines, sep) in _base_files().items():
        _reader(fmt)(_write(tmp_path / fmt / name, ("\n".join(lines) + "\n").encode()))  # the base file is valid
        for what, data, line in corruptions(fmt, lines, sep, rng):
            n += 1
            path = _write(tmp_path / f"{fmt}-{n}" / name, data)
            try:
                _reader(fmt)(path)
            except DatasetFormatError as e:
                msg = str(e)
                if str(path) not in msg or (line is not None and f"line {line}:" not in msg):
                    unnamed.append(f"{fmt} {what}: {msg[:300]}")
            except Exception as e:  # noqa: BLE001 - what the fuzzer looks for
                crashed.append(f"{fmt} {what}: {type(e).__name__}: {e}")
            else:
                accepted.append(f"{fmt} {what}")
    print(f"\ndata files: {n} corrupted over {len(_base_files())} formats; accepted {len(accepted)}, "
          f"crashed {len(crashed)}, error not naming the file (and line) {len(unnamed)}")
    assert n >= 30
    assert not accepted, accepted
    assert not crashed, crashed
    assert not unnamed, unnamed


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_corrupted_files_through_the_dataset_loaders(tmp_path):
    """The loaders a user calls (load_dataset, load_ncf, load_lightgcn) refuse them too, by file and line."""
    from labcore.data import DatasetFormatError, load_dataset, load_lightgcn, load_ncf

    good = _ratings_lines("\t", 200)
    folder = tmp_path / "ml-100k"
    _write(folder / "u.data", ("\n".join(good) + "\n").encode())
    _write(folder / "u.info", f"4 users\n50 items\n{len(good)} ratings\n".encode())
    whole = (folder / "u.data").read_bytes()
    _write(folder / "u.data", whole[: whole.index(b"\n", len(whole) // 2) - 2])  # cut in half, mid-line
    with pytest.raises(DatasetFormatError, match=r"u\.data line \d+: .*ends in the middle of this line"):
        load_dataset("ml-100k", root=folder, cache=False)
    _write(folder / "u.data", ("\n".join(good[:100]) + "\n").encode())  # cut after a line break: u.info tells
    with pytest.raises(DatasetFormatError, match=r"u\.data: expected 200 ratings \(as u\.info beside it states\)"):
        load_dataset("ml-100k", root=folder, cache=False)

    _write(tmp_path / "ncf" / "toy.train.rating", b"0\t1\t1\t0\n1\t2\t1\t0\n")
    _write(tmp_path / "ncf" / "toy.test.rating", b"0\t3\t1\t0\n1\t1e3\t1\t0\n")
    with pytest.raises(DatasetFormatError, match=r"toy\.test\.rating line 2: .*'1e3'"):
        load_ncf(tmp_path / "ncf" / "toy")
    _write(tmp_path / "lists" / "train.txt", b"0 1 2\n1 2 3\n")
    _write(tmp_path / "lists" / "test.txt", b"0 4\n1 +5\n")
    with pytest.raises(DatasetFormatError, match=r"test\.txt line 2: .*'\+5'"):
        load_lightgcn(tmp_path / "lists")
