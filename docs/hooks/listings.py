"""MkDocs hook: lists of names a page shows are read from where the names are declared, at build time.

A page writes a placeholder where a list belongs, and the build replaces it, so a new ``conf/`` choice, league
role, bot or encoder appears on every page that lists its kind with no edit to the page:

- ``{{ conf:<group> }}``: the choices of ``conf/<group>/``, the default (``conf/config.yaml``'s defaults list)
  first and marked, then the others in name order;
- ``{{ registry:roles }}``, ``{{ registry:bots }}``, ``{{ registry:encoders }}``: the names of
  `policies.league.roles.ROLES`, `policies.bots.REGISTRY` and `ludo_env.observations.REGISTRY`, in table
  order.

Each name is set as code. An unknown group or registry stops the build with one line naming the known ones.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
PLACEHOLDER = re.compile(r"\{\{\s*(conf|registry):([\w/]+)\s*\}\}")
REGISTRIES = {
    "roles": ("policies.league.roles", "ROLES"),
    "bots": ("policies.bots", "REGISTRY"),
    "encoders": ("ludo_env.observations", "REGISTRY"),
}
"""Placeholder name -> (module, the dict whose keys are the names, in order)."""


class ListingError(ValueError):
    pass


def conf_choices(group: str) -> list[str]:
    """``conf/<group>``'s choices: the default first, then the others in name order."""
    folder = CONF / group
    choices = sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
    if not choices:
        known = sorted(p.name for p in CONF.iterdir() if p.is_dir() and any(p.glob("*.yaml")))
        raise ListingError(f"{{{{ conf:{group} }}}}: conf/{group}/ has no choices; "
                           f"groups: {', '.join(known)}")
    entries = yaml.safe_load((CONF / "config.yaml").read_text()).get("defaults", [])
    default = next((e[group] for e in entries if isinstance(e, dict) and group in e), None)
    if default in choices:
        choices.remove(default)
        return [f"{default} (default)", *choices]
    return choices


def registry_names(name: str) -> list[str]:
    if name not in REGISTRIES:
        raise ListingError(f"{{{{ registry:{name} }}}}: unknown registry; "
                           f"choose one of {', '.join(REGISTRIES)}")
    module, attribute = REGISTRIES[name]
    return list(getattr(importlib.import_module(module), attribute))


def listing(kind: str, name: str) -> str:
    names = conf_choices(name) if kind == "conf" else registry_names(name)
    return ", ".join(re.sub(r"^(\S+)", r"`\1`", n) for n in names)


def render(markdown: str) -> str:
    """`markdown` with every placeholder replaced by its list."""
    return PLACEHOLDER.sub(lambda m: listing(m.group(1), m.group(2)), markdown)


def on_page_markdown(markdown, page, config, files, **kwargs):
    from mkdocs.exceptions import PluginError

    try:
        return render(markdown)
    except ListingError as error:
        raise PluginError(f"{page.file.src_path}: {error}") from None
