"""environment.yml mirrors pyproject.toml and constraints.txt; the README's commands are what CI runs; no module
defines a name twice."""
import re
import tomllib

import yaml

from conftest import ROOT


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower().replace("_", "-")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    return pins


def test_environment_yml_pins_every_dependency_at_the_locked_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [_name(r) for r in project["dependencies"]]
    for extra, reqs in project["optional-dependencies"].items():
        wanted += [_name(r) for r in reqs if not r.startswith("labcore")]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_list = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    env_pins = {_name(r): r.split("==")[1] for r in pip_list if "==" in r}
    pins = _pins()
    for name in wanted:
        assert name in env_pins, f"{name} is in pyproject.toml but not in environment.yml"
        assert env_pins[name] == pins[name], f"{name}: environment.yml {env_pins[name]} != constraints.txt {pins[name]}"
    assert pins["torch"] == "2.13.0" and env_pins["torch"] == "2.13.0"
    assert any(str(d).startswith("python=3.11") for d in env["dependencies"])


def test_ci_runs_the_test_command_written_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)\n```", readme, re.S)
    assert len(commands) >= 2
    setup_lab, setup_tests = commands[0].strip(), commands[1].strip()
    assert "labcore" in setup_lab and "pytest" in setup_tests
    assert setup_tests in ci


def test_no_module_defines_a_function_or_class_twice():
    """A second `def` of a name silently replaces the first: a card's compute or plot function would then run
    another card's code (a new `drift` plot once replaced the SCAFFOLD-on-digits one this way)."""
    import ast
    import collections

    twice = []
    for path in sorted((ROOT / "labcore").rglob("*.py")):
        body = ast.parse(path.read_text()).body
        names = collections.Counter(n.name for n in body
                                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        twice += [f"{path.relative_to(ROOT)}: {name}" for name, n in names.items() if n > 1]
    assert not twice, twice
