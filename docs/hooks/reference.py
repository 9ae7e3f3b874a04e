"""MkDocs hook: the pages that are generated at build time, never written by hand.

``docs/mkdocs.yml`` names this file under ``hooks:``. On every build it

- writes the **reference** pages from what the code itself reads: every command's options from its typed Hydra
  schema and the ``conf/`` files it composes (submit's own ``cluster.*`` keys from the table it parses them with),
  every benchmark's options from its parser, and one page per package of the Python API for mkdocstrings
  (``::: module``) to fill from the docstrings;
- fills the Reference and Results sections of the nav (``on_config``) and the list of studies on the results
  index (``on_page_markdown``), so a new command, module or dated results page needs no nav edit;
- adds the figures the benchmarks write (``benchmarks/results/*.png``) to the site, and any page placed directly in
  ``docs/`` (beside ``mkdocs.yml``, such as ``docs/security.md``) as a top-level page.

What a command takes is declared once, in `COMMANDS`: one entry per script of ``launch/``, of the kind that says
where its options live (`Hydra`, `HydraSubcommands`, `KeyValue`). Every ``benchmarks/*.py`` script is found by
itself and read from the `launch.cli.OneLineParser` its ``main`` builds. Anything the generator cannot describe (a
script without an entry, a benchmark without that parser, a ``conf/`` group the schema lacks, a ``conf/`` choice
without a description, a key its command's text never mentions, a key with no description, a key the code checks
whose row shows nothing allowed, a reStructuredText ``::`` block in a docstring) stops the build with one line, so
the reference cannot drift from the code. What a key allows is read from the declarations the code checks: a
class's ``RANGES``, ``CHOICES`` and ``ALLOWED``, a schema module's ``<GROUP>_RANGES`` and ``<GROUP>_CHOICES``.
``tests/test_docs.py`` runs the strict build.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
import sys
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the checkout's code, not whatever copy is installed
    sys.path.insert(0, str(ROOT))

def _register_griffe_extension() -> None:
    """Make ``hooks/rst_tables.py`` importable as ``rst_tables``, the name ``docs/mkdocs.yml`` gives mkdocstrings."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rst_tables", Path(__file__).with_name("rst_tables.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["rst_tables"] = module
    spec.loader.exec_module(module)


_register_griffe_extension()
CONF = ROOT / "conf"
DOCS = ROOT / "docs"
FIGURES = ROOT / "benchmarks" / "results"
"""Figures the benchmarks write; the site serves them as ``results/figures/<name>``."""
PACKAGES = ("ludo_env", "policies", "launch")
"""The Python API: every module of these packages has a place on an API page."""
HYDRA_GROUP = "hydra"
"""``conf/hydra/``: Hydra's own config groups (the SLURM launcher), not a group of a command's schema."""


class ReferenceError(Exception):
    """The code and what the reference can say about it disagree; the build stops with this one line."""


# ------------------------------------------------------------------ what each command takes
@dataclass(frozen=True)
class Hydra:
    """A Hydra command: ``key=value`` overrides of ``conf/<config>.yaml``, typed by the dataclass `schema`."""

    script: str
    config: str
    schema: str
    """``module:Class``."""
    bundles: tuple[str, ...] = ()
    """Groups of ``# @package _global_`` files added with ``+group=choice`` (experiments), not in the defaults."""


@dataclass(frozen=True)
class HydraSubcommands:
    """A Hydra command whose first word is a sub-command, each with its own ``conf/<config>.yaml`` and schema."""

    script: str
    subcommands: tuple[tuple[str, str, str], ...]
    """``(word, config, "module:Class")`` per sub-command."""


@dataclass(frozen=True)
class Argparse:
    """A benchmark whose options are the `launch.cli.OneLineParser` that its ``main`` builds."""

    script: str


@dataclass(frozen=True)
class KeyValue:
    """Keys a command parses itself, from a table of keys in its module (submit's ``cluster.*``, kept apart from the
    training overrides it composes with Hydra).

    `keys` names that table: a mapping of key to default, or (`subcommands`) of sub-command to its keys. Every key
    must be named in the module's docstring, which describes them; `prefix` is put before each key
    (``cluster.``); `extra` is a sentence for keys the table does not list."""

    script: str
    keys: str
    subcommands: bool = False
    prefix: str = ""
    extra: str = ""


COMMANDS: tuple[Hydra | HydraSubcommands | KeyValue, ...] = (
    Hydra("launch/train.py", "config", "launch.training.schema:TrainConfig", bundles=("exp",)),
    Hydra("launch/evaluate.py", "evaluate", "launch.evaluate:EvaluateConfig"),
    Hydra("launch/export.py", "export", "launch.export:ExportConfig"),
    Hydra("launch/play.py", "play", "launch.play:PlayConfig"),
    KeyValue("launch/submit.py", "CLUSTER_OPTIONS", prefix="cluster.",
             extra="Every other `key=value` is a training override, composed with Hydra as [train](train.md) "
                   "takes it; `status`, `logs` and `stop` take a job id; `--follow` streams the logs."),
    Hydra("launch/simulate.py", "simulate", "launch.simulate:SimulateConfig"),
    HydraSubcommands("launch/league.py", tuple((word, f"league_{word}", f"launch.league:League{word.title()}Config")
                                              for word in ("add", "play", "show", "remove"))),
    Hydra("launch/leaderboard.py", "leaderboard", "launch.leaderboard:LeaderboardConfig"),
    Hydra("launch/serve.py", "serve", "launch.serve:ServeConfig"),
    Hydra("launch/wait_for_nodes.py", "wait_for_nodes", "launch.wait_for_nodes:WaitConfig"),
)
"""Every command of ``launch/``, in the order the reference lists them."""


def command_name(script: str) -> str:
    return Path(script).stem


def module_of(script: str):
    return importlib.import_module(script.removesuffix(".py").replace("/", "."))


def is_script(path: Path) -> bool:
    return '__name__ == "__main__"' in path.read_text()


def benchmark_commands() -> list[Argparse]:
    """Every benchmark script: each parses its options with the `launch.cli.OneLineParser` its ``main`` builds
    (`captured_parser` stops the build when one does not)."""
    return [Argparse(str(path.relative_to(ROOT))) for path in sorted((ROOT / "benchmarks").glob("*.py"))
            if not path.name.startswith("_") and is_script(path)]


def check_every_command_is_declared() -> None:
    declared = {c.script for c in COMMANDS}
    for path in sorted((ROOT / "launch").glob("*.py")):
        script = str(path.relative_to(ROOT))
        if is_script(path) and script not in declared:
            raise ReferenceError(f"{script} is a command with no entry in docs/hooks/reference.py COMMANDS: add one")


# ------------------------------------------------------------------ reading the code
class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__("captured")
        self.parser = parser


def captured_parser(script: str) -> argparse.ArgumentParser:
    """The parser `script`'s ``main`` builds, taken from it at the moment it would parse: nothing after that runs."""
    entry = module_of(script).main

    def capture(self, *args, **kwargs):
        raise _Captured(self)

    saved = {name: getattr(argparse.ArgumentParser, name) for name in ("parse_args", "parse_known_args")}
    try:
        for name in saved:
            setattr(argparse.ArgumentParser, name, capture)
        try:
            entry([]) if inspect.signature(entry).parameters else entry()
        except _Captured as captured:
            return captured.parser
    finally:
        for name, method in saved.items():
            setattr(argparse.ArgumentParser, name, method)
    raise ReferenceError(f"{script}: its main() built no argparse parser before returning: parse with "
                         "launch.cli.OneLineParser, as every benchmark does")


@cache
def griffe_module(name: str):
    import griffe

    return griffe.load(name, search_paths=[str(ROOT)], resolve_aliases=False, allow_inspection=False)


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each attribute of dataclass `cls` (and of the classes it inherits from), read from the
    source. A class made at run time from another (``X = _editable_copy(Rules, "X")``) takes that class's, and the
    meanings of the fields it adds from its ``FIELD_DOCS`` (the league's role settings: `policies.league.roles`)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        node = griffe_module(klass.__module__)
        try:
            target = node[klass.__qualname__]
        except KeyError:
            continue
        if getattr(target, "is_attribute", False):  # built by a call: the first argument names the class
            made_from = re.match(r"\w+\((\w+)", str(target.value or ""))
            source = getattr(sys.modules[klass.__module__], made_from.group(1), None) if made_from else None
            if isinstance(source, type) and source is not klass:
                docs.update(attribute_docs(source))
            continue
        for name, member in target.members.items():
            if member.docstring is not None:
                docs[name] = " ".join(member.docstring.value.split())
    docs.update({name: " ".join(doc.split()) for name, doc in getattr(cls, "FIELD_DOCS", {}).items()})
    return docs


def type_text(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or str(annotation)
    if not isinstance(annotation, type) or typing.get_args(annotation):
        text = str(annotation)
    text = re.sub(r"\btyping\.", "", text).replace("NoneType", "None")
    return re.sub(r"<class '([\w.]+)'>", lambda m: m.group(1).rpartition(".")[2], text)


def value_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    return str(value)


def cell(text: str) -> str:
    """Text for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    text = str(text)
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if text else ""


def allowed_values(cls: type, name: str, group_ranges: dict, group_choices: dict | None = None) -> str:
    """What the code lets `name` be, from the declarations it checks: the class's ``RANGES`` and ``CHOICES`` and its
    group's tables (`group_ranges`, `group_choices`: ``launch.training.schema.EVAL_RANGES``, a command's module-level
    ``RANGES``), or the class's ``ALLOWED`` sentence where the bound is not a fixed one (an index into a list)."""
    ranges = {**getattr(cls, "RANGES", {}), **group_ranges}
    choices = {**getattr(cls, "CHOICES", {}), **(group_choices or {})}
    if name in choices:
        return ", ".join(code(c) for c in choices[name])
    if name in ranges:
        allowed = ranges[name]
        if isinstance(allowed, tuple):  # (low, high) of `launch.cli.check_integers`
            return f"an integer in [{allowed[0]}, {allowed[1]}]"
        return allowed.text()
    return getattr(cls, "ALLOWED", {}).get(name, "")


CHECKS = (re.compile(r'\.check\(\s*f?"([\w.]+)"'), re.compile(r'check_seconds\(\s*"([\w.]+)"'),
          re.compile(r'"([a-z_][\w.]*)=\{[^"{}]*\} is not allowed'))
"""Hand-written checks of one key in a command's source: ``<range>.check("key", ...)``, ``check_seconds("key", ...)``
and a ``"key={value} is not allowed..."`` message."""


def checked_keys(*modules: str) -> set[str]:
    """Keys whose values the source of `modules` checks by hand (`CHECKS`)."""
    found = set()
    for name in modules:
        source = inspect.getsource(importlib.import_module(name))
        for pattern in CHECKS:
            found |= set(pattern.findall(source))
    return found


def check_allowed_shown(page: str, checked: set[str], script: str) -> None:
    """Every key the command checks shows what is allowed on its page, and every key says what it is: else the
    build stops (a check with no declaration the reference reads, or a field with no docstring)."""
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")] if line.startswith("| `") else []
        if len(cells) != 5:
            continue
        key = cells[0].strip("`")
        if not cells[4]:
            raise ReferenceError(f"{script}: key {key} has no description: give its field a docstring")
        if key in checked and not cells[3]:
            raise ReferenceError(f"{script}: the code checks key {key}, and its reference row shows nothing "
                                 "allowed: declare the check in its class's RANGES, CHOICES or ALLOWED (or its "
                                 "group's table) and check from there")


def yaml_description(path: Path) -> str:
    """The comment block at the top of a ``conf/`` file (after ``# @package``), as prose."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if text.startswith("@package"):
            continue
        lines.append(text)
    return "\n".join(lines).strip()


def yaml_body(path: Path) -> str:
    """The file less its leading comment block: what choosing it sets."""
    lines = path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "\n".join(lines[start:]).strip()


def conf_groups() -> dict[str, list[str]]:
    """``conf/<group>/<choice>.yaml``: every group (Hydra's own left out) and its choices."""
    return {group.name: sorted(p.stem for p in group.glob("*.yaml"))
            for group in sorted(CONF.iterdir()) if group.is_dir() and group.name != HYDRA_GROUP}


def hydra_groups() -> dict[str, list[str]]:
    """Hydra's own groups under ``conf/hydra/`` (``hydra/launcher``) and their choices."""
    found = {}
    for folder in sorted((CONF / HYDRA_GROUP).rglob("*")):
        if folder.is_dir():
            found[str(folder.relative_to(CONF))] = sorted(p.stem for p in folder.glob("*.yaml"))
    return {group: choices for group, choices in found.items() if choices}


def defaults_of(config: str) -> dict[str, str]:
    """Group -> default choice, from ``conf/<config>.yaml``'s defaults list."""
    import yaml

    entries = yaml.safe_load((CONF / f"{config}.yaml").read_text()).get("defaults", [])
    return {k: v for entry in entries if isinstance(entry, dict) for k, v in entry.items()}


def composed(config: str, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """The config a command composes with no other overrides, interpolations left as written."""
    from omegaconf import OmegaConf

    from launch.cli import compose

    return OmegaConf.to_container(compose(config, list(overrides)), resolve=False)


def load_object(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def first_line(text: str | None) -> str:
    return (text or "").strip().split("\n\n")[0].replace("\n", " ").strip()


# ------------------------------------------------------------------ writing the pages
def fields_table(cls: type, values: dict[str, Any], prefix: str, group_ranges: dict | None = None,
                 group_choices: dict | None = None) -> list[str]:
    """One row per field of dataclass `cls`: key, type, default (the composed `values`), allowed values, meaning."""
    docs = attribute_docs(cls)
    hints = typing.get_type_hints(cls)
    rows = ["| key | type | default | allowed | what it is |", "| --- | --- | --- | --- | --- |"]
    for f in dataclasses.fields(cls):
        if f.name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            default = "(required)"
        elif f.name in values:
            default = values[f.name]
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        default_text = "(a group)" if isinstance(default, dict) and dataclasses.is_dataclass(hints.get(f.name)) \
            else code(value_text(default))
        types = " or ".join(code(t) for t in type_text(hints.get(f.name, f.type)).split(" | "))
        rows.append(f"| {code(prefix + f.name)} | {cell(types)} | "
                    f"{cell(default_text)} | {cell(allowed_values(cls, f.name, group_ranges or {}, group_choices))} | "
                    f"{cell(docs.get(f.name, ''))} |")
    return rows


def anchor(*parts: str) -> str:
    """An explicit heading id (``{ #id }``): ``variant-classic``, ``hydra-launcher-slurm``."""
    return "-".join(re.sub(r"[^\w]+", "-", p).strip("-") for p in parts)


def choice_sections(group: str, choices: list[str], default: str | None, heading: str = "####") -> list[str]:
    lines = []
    for choice in choices:
        path = CONF / group / f"{choice}.yaml"
        description = yaml_description(path)
        if not description:
            raise ReferenceError(f"conf/{group}/{choice}.yaml has no description: start it with a comment saying "
                                 "what the choice is")
        mark = " (default)" if choice == default else ""
        lines += [f"{heading} `{group}={choice}`{mark} {{ #{anchor(group, choice)} }}", "", "```text", description,
                  "```", "",
                  f"`conf/{group}/{choice}.yaml` sets:", "", "```yaml", yaml_body(path) or "# nothing", "```", ""]
    return lines


def hydra_page(command: Hydra) -> str:
    from omegaconf import OmegaConf  # noqa: F401  (composition below needs it importable)

    module = module_of(command.script)
    schema = load_object(command.schema)
    name = command_name(command.script)
    values = composed(command.config)
    defaults = defaults_of(command.config)
    # conf/ groups this command composes: a plain key may share a group's name (serve's league=)
    groups = {group: choices for group, choices in conf_groups().items()
              if group in defaults or group in command.bundles}
    schema_module = sys.modules[schema.__module__]
    hints = typing.get_type_hints(schema)
    lines = [f"# {name}", "", f"`python {command.script} key=value ...`: {first_line(module.__doc__)}", "",
             (f"Options are Hydra overrides of `conf/{command.config}.yaml`, typed by "
              f"`{schema.__module__}.{schema.__qualname__}`: a wrong key, type or value stops the command with one "
              "line before it starts. Groups pick a file of `conf/<group>/` (`group=choice`); any key of a group is "
              "then set as `group.key=value`. Generated from the schema and the `conf/` files at build time."), ""]
    used_groups = [g for g in defaults if g in groups] + list(command.bundles)
    if used_groups:
        lines += ["## Groups", "", "| group | default | choices | schema |", "| --- | --- | --- | --- |"]
        for group in used_groups:
            group_type = hints.get(group)
            if group in command.bundles:
                schema_text, default = "(`# @package _global_` bundles of settings)", f"none (`+{group}=<choice>`)"
            else:
                schema_text = f"`{group_type.__qualname__}`" if dataclasses.is_dataclass(group_type) else \
                    ("each algorithm's settings class" if group == "algo" else "rule fields")
                default = f"`{defaults[group]}`"
            links = ", ".join(f"[{c}](#{anchor(group, c)})" for c in groups[group])
            lines.append(f"| [`{group}`](#{group}) | {default} | {links} | {schema_text} |")
        lines.append("")
    plain = [f for f in dataclasses.fields(schema) if not dataclasses.is_dataclass(hints.get(f.name))
             and f.name not in groups]
    if plain:
        lines += ["## Top-level keys", ""]
        top = fields_table(schema, values, "", getattr(schema_module, "TOP_RANGES", None)
                           or getattr(schema_module, "RANGES", {}))
        keep = {code(f.name) for f in plain}
        lines += top[:2] + [r for r in top[2:] if r.split(" | ")[0].lstrip("| ").strip() in keep] + [""]
    for f in dataclasses.fields(schema):
        group_type = hints.get(f.name)
        if f.name == "algo" and f.name in groups:
            lines += algo_sections(command, groups["algo"], defaults.get("algo"))
            continue
        if not dataclasses.is_dataclass(group_type) and f.name not in groups:
            continue
        section_values = values.get(f.name) or {}
        if f.name in groups:
            lines += [f"## `{f.name}` {{ #{f.name} }}", ""]
            if dataclasses.is_dataclass(group_type):
                ranges = getattr(schema_module, f"{f.name.upper()}_RANGES", {})
                choices = getattr(schema_module, f"{f.name.upper()}_CHOICES", {})
                lines += [(f"Keys (`{f.name}.<key>=value`), schema `{group_type.__qualname__}`, defaults as composed "
                           f"with `{f.name}={defaults.get(f.name)}`:"), ""]
                lines += fields_table(group_type, section_values, f"{f.name}.", ranges, choices) + [""]
            elif f.name == "variant":
                lines += variant_keys(section_values)
            lines += [f"### Choices of `{f.name}`", ""]
            lines += choice_sections(f.name, groups[f.name], defaults.get(f.name))
        else:
            ranges = getattr(schema_module, f"{f.name.upper()}_RANGES", {})
            choices = getattr(schema_module, f"{f.name.upper()}_CHOICES", {})
            lines += [f"## `{f.name}` {{ #{f.name} }}", "",
                      (f"Keys set one by one (`{f.name}.<key>=value`; no `conf/` group), "
                       f"schema `{group_type.__qualname__}`:"), ""]
            lines += fields_table(group_type, section_values, f"{f.name}.", ranges, choices) + [""]
    for group in command.bundles:
        lines += [f"## `{group}` {{ #{group} }}", "",
                  (f"Added with `+{group}=<choice>`: each file sets groups and keys across the whole config "
                   "(`# @package _global_`); overrides after it on the command line win."), ""]
        lines += choice_sections(group, groups[group], None, heading="###")
    if name == "train":
        lines += hydra_launcher_sections()
    lines += ["## Description", "", f"The docstring of `{command.script}`:", "", "```text",
              inspect.cleandoc(module.__doc__ or ""), "```", ""]
    return "\n".join(lines)


def hydra_subcommands_page(command: HydraSubcommands) -> str:
    module = module_of(command.script)
    name = command_name(command.script)
    schemas = [(word, config, load_object(schema)) for word, config, schema in command.subcommands]
    lines = [f"# {name}", "", f"`python {command.script} <sub-command> ... key=value ...`: {first_line(module.__doc__)}",
             "",
             ("The first word is the sub-command. Each takes Hydra overrides of its own `conf/<config>.yaml`, "
              "typed by its schema: a key it does not take (another sub-command's too), a wrong type or value stops "
              "the command with one line before it starts. Generated from the schemas and the `conf/` files at "
              "build time."), "", "| sub-command | config | schema | keys |", "| --- | --- | --- | --- |"]
    for word, config, schema in schemas:
        keys = ", ".join(code(f.name) for f in dataclasses.fields(schema))
        lines.append(f"| [`{word}`](#{anchor(word)}) | `conf/{config}.yaml` | "
                     f"`{schema.__module__}.{schema.__qualname__}` | {keys} |")
    lines.append("")
    for word, config, schema in schemas:
        lines += [f"## `{word}` {{ #{anchor(word)} }}", "",
                  f"Keys of `conf/{config}.yaml`, typed by `{schema.__qualname__}`:", ""]
        lines += fields_table(schema, composed(config), "", getattr(module, "RANGES", {})) + [""]
    lines += ["## Description", "", f"The docstring of `{command.script}`:", "", "```text",
              inspect.cleandoc(module.__doc__ or ""), "```", ""]
    return "\n".join(lines)


def variant_keys(values: dict[str, Any]) -> list[str]:
    from ludo_env.rules import Rules

    return [("Any rule is `variant.<field>=value` on top of the chosen variant; the fields are those of "
             "`ludo_env.rules.Rules` (its docstring is the rules' specification: [Rules and variants]"
             "(../../concepts/rules.md)):"), ""] + fields_table(Rules, values, "variant.") + [""]


def algo_sections(command: Hydra, choices: list[str], default: str | None) -> list[str]:
    from launch.training.algorithms import REGISTRY

    lines = ["## `algo` { #algo }", "",
             ("Each algorithm's settings class types `algo.<key>=value` (`launch.training.algorithms`); the table "
              "under each choice gives its keys with the defaults that choice composes to."), ""]
    for choice in choices:
        values = composed(command.config, (f"algo={choice}",))["algo"]
        settings = REGISTRY[values["name"]].settings
        lines += choice_sections("algo", [choice], default, heading="###")
        lines += [f"Keys of `algo={choice}` (`{settings.__module__}.{settings.__qualname__}`):", ""]
        lines += fields_table(settings, values, "algo.") + [""]
    return lines


def hydra_launcher_sections() -> list[str]:
    lines = ["## Hydra's own groups", "",
             ("Groups of Hydra itself, under `conf/hydra/` (used with `-m` sweeps; any field is "
              "`hydra.<group path>.<field>=`):"), ""]
    for group, choices in hydra_groups().items():
        lines += [f"### `{group}` {{ #{anchor(group)} }}", ""]
        lines += choice_sections(group, choices, None)
    return lines


def documented_keys(doc: str, keys: list[str]) -> None:
    for key in keys:
        if not re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", doc):
            raise ReferenceError(f"the docstring of its command never names the key {key!r}: describe it there")


def key_value_page(command: KeyValue, title_level: str = "#") -> str:
    module = module_of(command.script)
    table = getattr(module, command.keys, None)
    if not isinstance(table, dict):
        raise ReferenceError(f"{command.script}: no table {command.keys} of its keys: update its entry in "
                             "docs/hooks/reference.py")
    doc = inspect.cleandoc(module.__doc__ or "")
    usage = getattr(module, "USAGE", None)
    lines = [f"{title_level} {command_name(command.script)} {{ #{anchor(command_name(command.script))} }}", "",
             f"{first_line(doc)}", "",
             f"Arguments are `key=value`, parsed by the command itself (`{command.keys}` in `{command.script}`)."]
    if usage:
        lines += ["", "```text", usage.removeprefix("usage: "), "```"]
    lines.append("")
    if command.subcommands:
        lines += ["| sub-command | keys |", "| --- | --- |"]
        for sub, keys in table.items():
            documented_keys(doc, [sub, *keys])
            lines.append(f"| `{sub}` | {', '.join(code(command.prefix + k) for k in sorted(keys))} |")
    else:
        documented_keys(doc, [command.prefix + k for k in table])
        typed = all(isinstance(v, type) for v in table.values())  # a table of how each value is read, not defaults
        lines += ["| key | value |" if typed else "| key | default |", "| --- | --- |"]
        for key, default in table.items():
            if typed:
                shown = {str: "text", float: "a number", int: "an integer", bool: "true or false"}.get(
                    default, default.__name__)
            else:
                shown = code(value_text(default)) if default not in ("", None) else ""
            lines.append(f"| `{command.prefix}{key}` | {shown} |")
    lines.append("")
    if command.extra:
        lines += [command.extra, ""]
    lines += [f"The docstring of `{command.script}`, which describes every key:", "", "```text", doc, "```", ""]
    return "\n".join(lines)


def argparse_page(command: Argparse, title_level: str = "#") -> str:
    parser = captured_parser(command.script)
    parser.prog = f"python {command.script}"  # not the builder's own argv[0]
    module = module_of(command.script)
    lines = [f"{title_level} {command_name(command.script)} {{ #{anchor(command_name(command.script))} }}", "",
             first_line(module.__doc__), "",
             "Options are flags, parsed by `launch.cli.OneLineParser` (one line and exit 2 on a bad one).", "",
             "| argument | default | what it is |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = ", ".join(action.option_strings) or action.dest
        if action.nargs in ("+", "*") and not action.option_strings:
            name += " ..."
        if action.choices:
            name += " {" + ",".join(map(str, action.choices)) + "}"
        default = action.default
        shown = "" if default in (None, argparse.SUPPRESS, False) and not action.required else \
            ("(required)" if action.required or (not action.option_strings and action.nargs != "*") else
             code(value_text(default)))
        lines.append(f"| {cell(code(name))} | {cell(shown)} | {cell(action.help or '')} |")
    lines += ["", "`--help` prints:", "", "```text", parser.format_help().strip(), "```", "",
              f"The docstring of `{command.script}`:", "", "```text", inspect.cleandoc(module.__doc__ or ""), "```",
              ""]
    return "\n".join(lines)


def command_page(command: Hydra | HydraSubcommands | Argparse | KeyValue, title_level: str = "#") -> str:
    if isinstance(command, Hydra):
        page = hydra_page(command)
        schema = command.schema.partition(":")[0]
        check_allowed_shown(page, checked_keys(*{schema, module_of(command.script).__name__}), command.script)
        return page
    if isinstance(command, HydraSubcommands):
        page = hydra_subcommands_page(command)
        check_allowed_shown(page, checked_keys(module_of(command.script).__name__), command.script)
        return page
    if isinstance(command, KeyValue):
        return key_value_page(command, title_level)
    return argparse_page(command, title_level)


def benchmarks_page() -> str:
    lines = ["# Benchmarks", "",
             ("Every script in `benchmarks/`, with its options as its parser has them. The benchmarks measure speed "
              "and strength; the results pages give what they printed and when. Generated at build time."),
             "", "| script | options |", "| --- | --- |"]
    benches = benchmark_commands()
    for bench in benches:
        lines.append(f"| [`{bench.script}`](#{anchor(command_name(bench.script))}) | flags |")
    lines.append("")
    for bench in benches:
        lines += [command_page(bench, "##"), ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ the Python API
API_PAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("engine", "Rules and engine", ("ludo_env.rules", "ludo_env.engine")),
    ("environments", "Environments", ("ludo_env",)),
    ("league", "League", ("policies.league",)),
    ("agents", "Agents", ("policies",)),
    ("training", "Training library", ("launch.training", "launch.cli")),
    ("web", "Web site", ("launch.web",)),
    ("commands", "Commands", ("launch",)),
)
"""API page -> the modules it holds: the first page whose prefix matches a module takes it."""


def all_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if any(p.startswith("_") for p in parts):
                continue
            names.append(".".join(parts))
    return names


def api_pages() -> dict[str, list[str]]:
    pages: dict[str, list[str]] = {slug: [] for slug, _, _ in API_PAGES}
    for module in all_modules():
        slug = next((s for s, _, prefixes in API_PAGES
                     if any(module == p or module.startswith(p + ".") for p in prefixes)), None)
        if slug is None:
            raise ReferenceError(f"module {module} is on no API page: add its prefix to API_PAGES")
        pages[slug].append(module)
    return pages


def check_markdown_docstrings() -> None:
    """mkdocstrings reads docstrings as Markdown: a reStructuredText literal block (a line ending ``::``) would show
    its ``::`` and run its lines together, so the build stops on one and asks for a fenced block."""
    for module in all_modules():
        path = ROOT / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.rstrip().endswith("::") and not line.lstrip().startswith("#"):
                raise ReferenceError(f"{path.relative_to(ROOT)}:{number}: a reStructuredText literal block ('::'): "
                                     "write it as a Markdown fenced block (```python ... ```), which the API pages "
                                     "render")


def api_page(slug: str, title: str, modules: list[str]) -> str:
    lines = [f"# {title}", "", "From the docstrings, by mkdocstrings: " +
             ", ".join(f"[`{m}`](#{m})" for m in modules) + ".", ""]
    for module in modules:
        lines += [f"::: {module}", "    options:", "      show_submodules: false", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ every generated page
def reference_index() -> str:
    lines = ["# Reference", "", "Generated at build time from the code, so it says what the code does today:", "",
             "- **Commands**: every command's options, from its Hydra schema (`conf/` and the typed dataclasses);",
             "- **Benchmarks**: every benchmark script's options;",
             "- **Python API**: every module, class and function, from its docstrings.", "",
             "| command | options |", "| --- | --- |"]
    for command in COMMANDS:
        kind = {Hydra: "Hydra `key=value` (typed schema)",
                HydraSubcommands: "a sub-command, then Hydra `key=value` (a typed schema each)",
                KeyValue: "training overrides as Hydra `key=value`, and its own `cluster.*` keys"}[type(command)]
        lines.append(f"| [`{command.script}`](commands/{command_name(command.script)}.md) | {kind} |")
    lines += ["", "Benchmarks: [benchmarks](benchmarks.md). Python API: " +
              ", ".join(f"[{title}](api/{slug}.md)" for slug, title, _ in API_PAGES) + ".", ""]
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """Path under the docs folder -> Markdown, for every generated reference page."""
    check_every_command_is_declared()
    check_markdown_docstrings()
    pages = {"reference/index.md": reference_index()}
    for command in COMMANDS:
        pages[f"reference/commands/{command_name(command.script)}.md"] = command_page(command)
    pages["reference/benchmarks.md"] = benchmarks_page()
    for slug, title, _ in API_PAGES:
        pages[f"reference/api/{slug}.md"] = api_page(slug, title, api_pages()[slug])
    return pages


def reference_nav() -> list:
    return ["reference/index.md",
            {"Commands": [f"reference/commands/{command_name(c.script)}.md" for c in COMMANDS]},
            "reference/benchmarks.md",
            {"Python API": [f"reference/api/{slug}.md" for slug, _, _ in API_PAGES]}]


def extra_pages() -> list[Path]:
    """Pages placed directly in ``docs/`` beside ``mkdocs.yml`` (``docs/security.md``): top-level pages of the site."""
    return sorted(DOCS.glob("*.md"))


# ------------------------------------------------------------------ the results pages
RESULT_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})-[\w-]+\.md")


def results_pages(docs_dir: Path) -> list[Path]:
    """The dated results pages, newest first (``results/<yyyy-mm-dd>-<topic>.md``)."""
    pages = [p for p in (docs_dir / "results").glob("*.md") if RESULT_NAME.fullmatch(p.name)]
    return sorted(pages, key=lambda p: (p.name[:10], p.name), reverse=True)


def page_title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ReferenceError(f"{path.name} has no title: start it with '# <title>'")


def studies_table(docs_dir: Path) -> str:
    rows = ["| date | study |", "| --- | --- |"]
    for page in results_pages(docs_dir):
        rows.append(f"| {page.name[:10]} | [{cell(page_title(page))}]({page.name}) |")
    return "\n".join(rows)


# ------------------------------------------------------------------ the hook's events
STUDIES_MARKER = "<!-- studies -->"


def on_config(config, **kwargs):
    docs_dir = Path(config["docs_dir"])
    nav = config["nav"]
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and "Reference" in entry:
            nav[i] = {"Reference": reference_nav()}
        if isinstance(entry, dict) and "Results" in entry:
            nav[i] = {"Results": ["results/index.md", *(f"results/{p.name}" for p in results_pages(docs_dir))]}
    listed = set(nav_paths(nav))
    for name in [p.name for p in extra_pages()] + sorted(p.name for p in docs_dir.glob("*.md")):
        if name not in listed:  # a top-level page no section lists (docs/security.md): before the changelog
            nav.insert(len(nav) - 1, name)
            listed.add(name)
    return config


def nav_paths(nav) -> list[str]:
    """Every page path a nav (a list of paths, {title: path} and {title: [...]} entries) names."""
    found = []
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            found += nav_paths(value) if isinstance(value, list) else [value]
    return found


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    for path, text in reference_pages().items():
        files.append(File.generated(config, path, content=text))
    for figure in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"results/figures/{figure.name}", abs_src_path=str(figure)))
    for page in extra_pages():
        files.append(File.generated(config, page.name, abs_src_path=str(page)))
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    if page.file.src_uri == "results/index.md":
        return markdown.replace(STUDIES_MARKER, studies_table(Path(config["docs_dir"])))
    return markdown
