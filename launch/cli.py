"""What the launch scripts share: user errors as one line, and composing the config before Hydra runs."""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
RAY_DEPRECATIONS = "ray._common.deprecation"
"""The logger of Ray's deprecation warnings: loading a ckpt: player, RLlib warns that its own catalog code uses a
constructor it deprecates; commands quiet it."""


class UserError(Exception):
    """Input the user can fix; printed as one line."""


def one_line(err: BaseException) -> str:
    """Hydra and OmegaConf spread an error over lines and a cause; keep what says what is wrong."""
    text = str(err).strip()
    line = text.splitlines()[0].rstrip(".") if text else type(err).__name__
    if "Available options in" in text:  # an unknown group option: list the choices on the same line
        options = text.split("Available options in", 1)[1].split("Config search path", 1)[0]
        # *_schema entries are the typed schemas (launch/training/schema.py), not choices
        choices = [o for o in options.partition(":")[2].split() if not o.endswith("_schema")]
        line += f": choose one of {', '.join(choices)}"
    if ("LexerNoViableAltException" in line or "no viable alternative" in line) and any(c in line for c in "?&"):
        # search: and mcts: specs carry ?key=value&... which Hydra's override grammar only takes quoted
        detail = line.partition("LexerNoViableAltException")[2] if "LexerNoViableAltException" in line else f": {line}"
        line = ("cannot parse this override: quote a player spec that has ?, & or = in it, e.g. "
                "'players=[\"search:<path>?depth=2\",random]'" + detail)
    cause = str(err.__cause__ or "").strip()
    if cause and "$VALUE" not in cause and cause.splitlines()[0].rstrip(".") not in line:
        line += f": {cause.splitlines()[0].rstrip('.')}"
    return line


def compose(config_name: str, overrides: list[str], return_hydra_config: bool = False):
    """The config Hydra would build from `overrides`; any failure is a `UserError` of one line."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    check_key_spelling(overrides, f"conf/{config_name}.yaml", lambda: list(compose(config_name, [])))
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            return hydra_compose(config_name, overrides=overrides, return_hydra_config=return_hydra_config)
    except Exception as err:  # noqa: BLE001  any composition failure is a problem with the user's input
        raise UserError(one_line(err)) from None


# ------------------------------------------------------------------ Hydra key=value: the one way to pass options
def compose_options(config: str, argv: list[str], schema: type, command: str, also: str = ""):
    """The settings of a command whose options are Hydra ``key=value`` overrides of ``conf/<config>.yaml``: an
    instance of the dataclass `schema`, which types them (``<config>_schema`` in Hydra's config store). Nothing is
    written (no run folder, no log). Any failure is a `UserError` of one line: a key the schema lacks (a typo, an
    added ``+key=``, a ``hydra.`` key) names `command` and the allowed keys (and `also`, what else is allowed);
    a value of the wrong type says what to give (`bad_value`).

    A list may also be written the way these commands took it before Hydra (`hydra_spelling`)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    fields = field_names(schema)
    check_key_spelling(argv, command, lambda: fields, also)
    overrides = hydra_spelling(argv, schema)
    for arg in overrides:
        if override_key(arg).replace("/", ".").split(".")[0] == "hydra":  # no run folder, no logging: no hydra keys
            raise UserError(unknown_option(arg, "hydra", command, fields, also))
    # Hydra reads `key=value` as the choice of a config group whenever conf/<key>/ exists (league=, variant=), even
    # for a config whose defaults list has no such group; a plain setting of that name is set after composing,
    # as Hydra sets any other value (OmegaConf.update), so it is typed and checked the same way.
    plain = [arg for arg in overrides if "=" in arg and arg.partition("=")[0] in plain_group_names(schema)]
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = hydra_compose(config, overrides=[arg for arg in overrides if arg not in plain])
        for override in OverridesParser.create().parse_overrides(plain):
            OmegaConf.update(cfg, override.key_or_group, override.value(), merge=True)
    except Exception as err:  # noqa: BLE001  any composition failure is a problem with the user's input
        raise UserError(option_error(err, overrides, schema, command, also)) from None
    for key in OmegaConf.to_container(cfg, resolve=False):  # +key=value: Hydra adds a key without a check
        if key not in fields:
            given = next((a for a in overrides if override_key(a) == key), f"+{key}")
            raise UserError(unknown_option(given, key, command, fields, also))
    try:
        return OmegaConf.to_object(cfg)
    except Exception as err:  # noqa: BLE001  an interpolation that does not resolve, a key deleted with ~key
        raise UserError(one_line(err)) from None


OVERRIDE_KEY = re.compile(r"[A-Za-z0-9_.\-/@+~]+")
"""What the key of a ``key=value`` override is spelled with (Hydra's grammar): ASCII letters, digits, ``_ . - /``,
``@`` for a package and the ``+ ++ ~`` prefixes."""


def check_key_spelling(argv: list[str], command: str, allowed: Callable[[], list[str]], also: str = "") -> None:
    """Every ``key=value`` argument's key is spelled as Hydra's grammar spells one (`OVERRIDE_KEY`): anything else
    (``gämes=1``, ``games!=1``) is refused as an unknown option naming the allowed keys, not by Hydra's lexer."""
    for arg in argv:
        key, eq, _ = arg.partition("=")
        if eq and not OVERRIDE_KEY.fullmatch(key):
            raise UserError(unknown_option(arg, key, command, allowed(), also))


def plain_group_names(schema: type) -> set[str]:
    """Keys of `schema` that are plain settings (not a section such as ``variant``'s rule fields) and yet name a
    config group of ``conf/`` (``league``, ``variant``)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(schema)
    groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir()}
    return {f.name for f in dataclasses.fields(schema) if f.name in groups
            and typing.get_origin(hints[f.name]) is not dict and not dataclasses.is_dataclass(hints[f.name])}


def field_names(schema: type) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(schema)]


def override_key(arg: str) -> str:
    """The key a Hydra override sets: ``+x=1``, ``++x=1`` and ``~x`` all set ``x``."""
    return arg.partition("=")[0].lstrip("+~")


def unknown_option(arg: str, key: str, command: str, allowed: list[str], also: str = "") -> str:
    return (f"argument {arg!r} is not allowed: unknown option {key!r} for {command}; allowed {', '.join(allowed)}"
            + (f", and {also}" if also else ""))


def option_error(err: BaseException, overrides: list[str], schema: type, command: str, also: str = "") -> str:
    """One line for a failed composition: an unknown key, or a value of the wrong type for a key of `schema`,
    in the words of `unknown_option` and `bad_value`; anything else as `one_line` says it."""
    import typing

    from omegaconf.errors import (
        ConfigAttributeError,
        ConfigKeyError,
        ConfigTypeError,
        OmegaConfBaseException,
        ValidationError,
    )

    cause = err
    while cause is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__
    key = str(getattr(cause, "full_key", None) or "")
    fields = field_names(schema)
    given = next((a for a in reversed(overrides) if override_key(a) == key), None)
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and key and key.split(".")[0] not in fields:
        return unknown_option(given or key, key.split(".")[0], command, fields, also)
    if isinstance(cause, (ValidationError, ConfigTypeError)) and key in fields and given is not None:
        return bad_value(key, given.partition("=")[2], typing.get_type_hints(schema)[key])
    return one_line(err)


def type_kinds(hint: Any) -> tuple[list[Any], bool]:
    """The types a field's annotation allows, less None, and whether it allows None (``int | None``)."""
    import types
    import typing

    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kinds = [k for k in typing.get_args(hint) if k is not type(None)]
        return kinds, len(kinds) < len(typing.get_args(hint))
    return [hint], False


def bad_value(key: str, value: str, hint: Any) -> str:
    """``key='value' is not allowed: give <what the type takes>``."""
    import typing

    kinds, optional = type_kinds(hint)
    origin = typing.get_origin(kinds[0]) or kinds[0]
    wanted = {bool: "true or false", int: "an integer", float: "a number", str: "text", list: "a list, [a,b]",
              dict: "a mapping, {key: value}"}.get(origin, getattr(origin, "__name__", str(origin)))
    return f"{key}={value!r} is not allowed: give {wanted}{' or null' if optional else ''}"


def hydra_spelling(argv: list[str], schema: type) -> list[str]:
    """The arguments as Hydra overrides, a top-level key of `schema` written as these commands took it before
    they composed with Hydra: a list may be given bare (``bots=random,hybrid``, ``bots=random``) or empty
    (``agents=``), and its items may hold what Hydra's grammar takes only quoted (``search:<run>?depth=2&...``):
    such a list is rewritten with every item quoted. ``none`` is ``null`` for an optional number. Any other
    key is left as it is; an empty value of one that is not a list is a `UserError` (``league=`` needs a value)."""
    import typing

    hints = typing.get_type_hints(schema)
    rewritten = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        hint = hints.get(key) if eq else None
        if hint is None:
            rewritten.append(arg)
            continue
        kinds, optional = type_kinds(hint)
        if typing.get_origin(kinds[0]) is list:
            rewritten.append(f"{key}={hydra_list(key, value)}")
        elif not value:
            raise UserError(f"{key}= needs a value")
        elif value.strip().lower() == "none" and optional and kinds[0] in (int, float):
            rewritten.append(f"{key}=null")
        else:
            rewritten.append(arg)
    return rewritten


def hydra_list(key: str, value: str) -> str:
    """`value` of a list option as a Hydra list: kept when Hydra reads it as one, else split on commas (a player
    spec or a path holds none) and every item quoted."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if value.startswith("[") != value.endswith("]"):
        raise UserError(f"{key}={value}: give a list as [a,b]")
    if value.startswith("["):
        try:
            parsed = OverridesParser.create().parse_overrides([f"{key}={value}"])[0].value()
        except Exception:  # noqa: BLE001  (the grammar refuses it: quoted below)
            parsed = None
        if isinstance(parsed, list):
            return value
    inner = value[1:-1] if value.startswith("[") else value
    if not inner.strip():
        return "[]"
    items = [item.strip().strip("'\"") for item in inner.split(",")]
    if not all(items):
        raise UserError(f"{key}={value}: an empty item in the list")
    quoted = []
    for item in items:
        quote = "'" if "'" not in item else '"'
        if quote in item:
            raise UserError(f"{key}={value}: an item holds both kinds of quote")
        quoted.append(f"{quote}{item}{quote}")
    return f"[{','.join(quoted)}]"


def options_help(doc: str | None, config: str, schema: type) -> str:
    """A command's ``--help``: its docstring, then every option of `schema` with its type, its default as
    ``conf/<config>.yaml`` composes it and the docstring of its field."""
    import dataclasses
    import inspect
    import textwrap
    import typing

    from omegaconf import OmegaConf

    from ludo_env.rules import field_docs

    cfg = compose(config, [], return_hydra_config=True)
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    values = OmegaConf.to_container(cfg, resolve=False)
    docs, hints = field_docs(schema), typing.get_type_hints(schema)
    source = Path(inspect.getsourcefile(schema) or "").resolve()  # the script's path, also when run as __main__
    where = source.relative_to(CONF_DIR.parent) if CONF_DIR.parent in source.parents else source.name
    lines = [textwrap.dedent(doc or "").strip(), "",
             (f"Options: Hydra key=value overrides of conf/{config}.yaml, typed by {schema.__qualname__} "
              f"({where}):")]
    for f in dataclasses.fields(schema):
        shown = f"{choices[f.name]} (a file of conf/{f.name}/; {f.name}.<field>=value sets one field)" \
            if f.name in choices else yaml_text(values.get(f.name))
        lines.append(f"  {f.name}={shown}  [{type_text(hints[f.name])}]")
        text = " ".join((docs.get(f.name) or "").split())
        lines += textwrap.wrap(text, 112, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)


def yaml_text(value: Any) -> str:
    """A value as a key=value override writes it: null, true, [a, b]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_text(v) for v in value) + "]"
    return str(value)


def type_text(hint: Any) -> str:
    import re

    text = hint.__name__ if isinstance(hint, type) and not getattr(hint, "__args__", None) else str(hint)
    return re.sub(r"\btyping\.", "", text).replace("NoneType", "None")


INT64_MAX = 2**63 - 1
"""The largest integer setting numpy and numba take (seeds are 64-bit: larger ones would only wrap around)."""
MAX_GAMES = 10_000_000
"""Games one command holds at once: a tournament keeps a row per game (about 100 bytes); play more with seeds."""
MAX_PLIES = 2**31 - 1
"""Die rolls of one game: move counters are 32-bit."""


def check_integers(config, ranges: dict[str, Any] | None = None, prefix: str = "") -> None:
    """Every integer setting of `config` (a dataclass, nested ones and lists included, or a mapping) within its
    range: ``ranges[key]`` where given (``(low, high)``, or a `policies.ranges.Range` of two ends: a command's
    declared ``RANGES``, which its reference page shows), else 0..`INT64_MAX` for seeds and a 64-bit integer for
    the rest. `UserError` of one line naming the first key out of range."""
    import dataclasses

    ranges = ranges or {}
    if dataclasses.is_dataclass(config):
        items = [(f.name, getattr(config, f.name)) for f in dataclasses.fields(config)]
    elif isinstance(config, dict):
        items = [(str(k), v) for k, v in config.items()]
    else:
        return
    for name, value in items:
        key = f"{prefix}{name}"
        values = list(enumerate(value)) if isinstance(value, (list, tuple)) else [(None, value)]
        for index, item in values:
            if isinstance(item, bool):
                continue
            if isinstance(item, int):
                default = (0, INT64_MAX) if name == "seed" else (-INT64_MAX - 1, INT64_MAX)
                bounds = ranges.get(key, default)
                low, high = (bounds.low, bounds.high) if hasattr(bounds, "low") else bounds
                low, high = default[0] if low is None else low, default[1] if high is None else high
                if not low <= item <= high:
                    shown = key if index is None else f"{key}[{index}]"
                    raise UserError(f"{shown}={item} is not allowed: give an integer in [{low}, {high}]")
            elif dataclasses.is_dataclass(item) or isinstance(item, dict):
                check_integers(item, ranges, f"{key}.")


PORTS = (0, 65535)
"""What a ``port=`` option allows (`parse_port`; the commands' reference pages show it)."""


def parse_port(value) -> int:
    """A TCP port from a ``port=`` option (0 lets the system pick one); `UserError` otherwise."""
    low, high = PORTS
    try:
        port = int(value)
    except ValueError:
        raise UserError(f"port={value!r} is not allowed: give an integer in {low}..{high}") from None
    if not low <= port <= high:
        raise UserError(f"port={port} is not allowed: give an integer in {low}..{high}")
    return port


MIN_FREE_BYTES = 1 << 20
"""Free space an output location must have before a command starts work that ends in writing there."""


def check_output(path: str | Path, key: str, folder: bool = False, min_free: int = MIN_FREE_BYTES) -> Path:
    """That a file (`folder`: files in a folder) can be written at `path`, missing folders made when it is:
    checked before any work starts, so a tournament or a game is not played only to fail at the end.
    `UserError` naming `key` otherwise. Nothing is left behind: the probe file is removed at once.
    """
    import errno
    import shutil
    import tempfile

    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise UserError(f"{key}={path}: is a file, not a folder")
    if not folder and path.is_dir():
        raise UserError(f"{key}={path}: is a folder: give a file path")
    if not folder and path.exists() and not path.is_file():
        raise UserError(f"{key}={path}: is not a regular file: give a file path")
    nearest = path if folder else path.parent
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise UserError(f"{key}={path}: {nearest} is a file, not a folder")
    try:
        # a real create and write: os.access cannot see a read-only mount for root, nor a folder an ACL closes
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=nearest)
        try:
            os.write(fd, b"\0")
        finally:
            os.close(fd)
            os.unlink(probe)
        if not folder and path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as err:
        raise UserError(f"{key}={path}: cannot write there ({err.strerror or err})") from None
    free = shutil.disk_usage(nearest).free
    if free < min_free:
        raise UserError(f"{key}={path}: the disk holding {nearest} is full ({free} bytes free): free some space "
                        "or write elsewhere")
    return path


def write_text(path: Path, text: str) -> None:
    """Replace `path` atomically: a partial file is never seen under its name, and a failed write (a full disk)
    leaves neither it nor the temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_hydra_outputs(cfg, file_keys: tuple[str, ...] = ()) -> None:
    """The run folder Hydra makes (``hydra.run.dir``) and the output files `file_keys` of a composed config
    (with its hydra node) can be written; a file set by interpolation lies in the run folder, checked already."""
    from omegaconf import OmegaConf

    try:
        run_dir = cfg.hydra.run.dir
    except Exception as err:  # noqa: BLE001  an interpolation that does not resolve
        raise UserError(f"hydra.run.dir: {one_line(err)}") from None
    check_output(run_dir, "hydra.run.dir", folder=True)
    for key in file_keys:
        if OmegaConf.is_interpolation(cfg, key):
            continue
        value = OmegaConf.select(cfg, key)
        if value:
            check_output(value, key)


def input_errors() -> tuple[type[BaseException], ...]:
    """What a command prints as one line: a `UserError`, and the library's own one-line errors about what a user
    gave (a variant, a player spec or a player's answer, a policy folder, a league database, a record file).
    Imported when called, so that `except input_errors()` loads them only once an error is raised."""
    from ludo_env.rules import RulesError
    from policies.checkpoints import PolicyFileError
    from policies.league.store import LeagueStoreError
    from policies.players import PlayerError, PlayerSpecError
    from policies.records import RecordError
    from policies.tournament import TournamentError

    return (UserError, RulesError, PolicyFileError, LeagueStoreError, PlayerError, PlayerSpecError, RecordError,
            TournamentError)


def fail(err: BaseException) -> None:
    print(f"error: {err}", file=sys.stderr)
    sys.exit(2)


def gcs_answers(address: str, timeout: float = 5.0) -> bool:
    """Whether anything listens at a Ray head's HOST:PORT: ``ray.init`` towards nothing retries for many
    minutes, so launch scripts knock first."""
    import socket

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def benchmark_rules(variant: str, args: list[str], players: int):
    """The `Rules` a benchmark plays: `variant` (a name or a YAML path) with the ``variant.<field>=value`` arguments
    among `args` applied (values read as YAML, as Hydra reads them: ``variant.star_capture=jump_end``); returns
    ``(rules, the other arguments)``. A bad field or value is one line (`RulesError`, `UserError`)."""
    import yaml

    from ludo_env.rules import Rules

    check_variant_overrides(args, players_from="the seats the benchmark fills")
    overrides, rest = {}, []
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq and key.startswith("variant."):
            overrides[key[len("variant."):]] = yaml.safe_load(value) if value else ""
        else:
            rest.append(arg)
    return Rules.load(variant, players=players, **overrides), rest


def check_variant_overrides(argv: list[str], players_from: str | None) -> None:
    """``variant.<field>=`` must name a rule field, and ``variant.players`` is set by `players_from`, not by hand
    (None: by hand, as any other rule field)."""
    import dataclasses

    from ludo_env.rules import Rules

    rule_fields = sorted(f.name for f in dataclasses.fields(Rules))
    for arg in argv:
        key = arg.partition("=")[0].lstrip("+~")
        if key == "variant.players" and players_from is not None:
            raise UserError(f"variant.players is not set by hand: the player count is {players_from}")
        if key.startswith("variant.") and key[len("variant."):] not in rule_fields:
            raise UserError(
                f"unknown rule field '{key[len('variant.'):]}': allowed fields are {', '.join(rule_fields)}"
            )


# ------------------------------------------------------------------ more of what every command shares
INTERRUPTED = 130
"""The shell's exit status for a program stopped by SIGINT (Ctrl-C)."""


def catch_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt even in a process started in the background by a shell (``cmd &``), which
    inherits SIGINT ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_interrupted(what: str) -> None:
    """After Ctrl-C: one line on stderr (``interrupted: <what>``) and exit status 130, at once. The process ends
    with ``os._exit``, so a worker thread still inside a numba kernel or a user's bot cannot hold it up; what
    stdout holds is flushed first."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    print(f"\ninterrupted: {what}", file=sys.stderr, flush=True)
    os._exit(INTERRUPTED)


def emit(text: str) -> None:
    """Print `text` on stdout and flush it now. A stdout that cannot take it (a full disk) is a `UserError` of one
    line, not a traceback; a reader that closed the pipe ends the command quietly with 141, as SIGPIPE does. Either
    way nothing is left to fail again when Python flushes at exit."""
    try:
        print(text, flush=True)
    except OSError as err:
        try:  # what the buffer still holds goes nowhere, so the flush at exit cannot fail
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if isinstance(err, BrokenPipeError):  # the reader stopped on purpose (`| head`): no error, as SIGPIPE would
            raise SystemExit(128 + 13) from None
        raise UserError(f"cannot write to stdout ({err.strerror or err})") from None


def check_seconds(key: str, value: Any, positive: bool = False, none_ok: bool = False) -> float | None:
    """A number of seconds from a setting: finite and >= 0 (`positive`: > 0); None where `none_ok`. `UserError` of
    one line naming `key` otherwise (nan and inf included)."""
    import math

    if value is None and none_ok:
        return None
    wanted = "seconds > 0" if positive else "seconds >= 0"
    if none_ok:
        wanted += " (null: no limit)"
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{key}={value!r} is not allowed: give {wanted}") from None
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds < 0 or (positive and seconds == 0):
        raise UserError(f"{key}={value} is not allowed: give {wanted}")
    return seconds


def check_known_keys(settings: dict[str, Any], schema: Any) -> None:
    """Every top-level key of composed `settings` is a field of the dataclass `schema`: a ``+key=value`` override
    Hydra adds without a check is refused in one line, not ignored."""
    import dataclasses

    fields = [f.name for f in dataclasses.fields(schema)]
    for key in settings:
        if key not in fields:
            raise UserError(f"unknown setting '{key}': allowed settings are {', '.join(fields)}")


def remove_hydra_run_dir(run_dir: str | Path, log_name: str) -> None:
    """Undo what Hydra wrote for a run that was refused: its ``.hydra`` folder and `log_name` in `run_dir`, then the
    folder itself and the folders above it inside the working directory (``outputs/evaluate``), each only if
    nothing else is left in it (a folder the user filled stays)."""
    import shutil

    run_dir = Path(run_dir).absolute()
    shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
    (run_dir / log_name).unlink(missing_ok=True)
    cwd = Path.cwd().absolute()
    folder = run_dir
    while True:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent
        if folder == cwd or cwd not in folder.parents:
            return


def read_jsonl(path: Path, what: str = "row", warned: set | None = None) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one a line. A line that is not UTF-8, not JSON or not an object is left out
    with a one-line warning on stderr naming the file and the line (once per line number kept in `warned`, for a
    reader that reads the file again and again); a run still being written may end in half a line, which is left
    out quietly. `OSError` (a missing file) is the caller's."""
    import json

    from policies.json_data import JSONDepthError, read_json

    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    rows = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        last = number == len(lines)  # no newline after it: maybe half a line being written
        try:
            row = read_json(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            problem = f"byte {raw[err.start]:#04x} at column {err.start + 1} is not UTF-8"
        except JSONDepthError as err:
            problem = str(err)
        except json.JSONDecodeError as err:
            if last:
                continue
            problem = f"not JSON ({err.msg})"
        else:
            if isinstance(row, dict):
                rows.append(row)
                continue
            problem = f"a JSON {type(row).__name__}, not an object"
        if warned is None or (str(path), number) not in warned:
            print(f"warning: {path}:{number}: {problem}: this {what} is left out", file=sys.stderr)
        if warned is not None:
            warned.add((str(path), number))
    return rows


def positive(kind: type = int):
    """An argparse ``type=`` that takes a `kind` number > 0 (and finite): ``--seconds -5`` is refused in one line."""
    import math

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0 or not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not allowed: give a number > 0")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


class OneLineParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line (``error: <what> (--help lists the options)``, exit
    status 2) rather than a usage block: every argparse script uses it."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {message.splitlines()[0] if message else 'bad arguments'} (--help lists the options)",
              file=sys.stderr)
        sys.exit(2)
