"""Commands: training, evaluation, play, league, export, serving and cluster launchers (``launch/*.py``); the
training library they run is `launch.training`."""
import sys

if sys.version_info[:2] != (3, 11):  # first: another Python fails later, in some dependency, with a stranger message
    sys.exit("error: ludo-league runs on Python 3.11 (requires-python >=3.11,<3.12 in pyproject.toml); this is "
             f"Python {sys.version_info[0]}.{sys.version_info[1]}: run it with python3.11")

if sys.stdout is None:
    # A command started with its stdout closed (``>&-``): Python then drops every print without a word, so the
    # command would end with status 0 having shown nothing. It says so before any work (/dev/null drops output).
    # Only a command: a program that imports this package keeps its own way with stdout.
    import os.path

    _here = os.path.dirname(os.path.abspath(__file__))
    _main = os.path.abspath(getattr(sys.modules.get("__main__"), "__file__", None) or "")
    if os.path.dirname(_main) in (_here, os.path.join(os.path.dirname(_here), "benchmarks")):
        print("error: stdout is closed, so the command's output cannot be written: give it a file, or >/dev/null "
              "to drop it", file=sys.stderr)
        sys.exit(2)

import importlib
import importlib.abc
import importlib.machinery
import importlib.util

import policies  # noqa: F401  (sets the OpenMP wait policy before anything loads torch)

MOVED = {
    "launch.schema": "launch.training.schema",
    "launch.build": "launch.training.build",
    "launch.runs": "launch.training.runs",
    "launch.loop": "launch.training.loop",
    "launch.sampler": "launch.training.sampler",
    "launch.replay": "launch.training.replay_buffer",
    "launch.dqn_learner": "launch.training.dqn_learner",
    "launch.watchdog": "launch.training.watchdog",
    "launch.trainers": "launch.training.trainers",
}
"""Where the training modules that once sat in launch/ itself live now. A run folder's checkpoints name classes by
their module (RLlib pickles its learner class and writes the replay buffer's class path into its config), so an old
name still imports: as the very module at its new place, never a copy (one class, one identity)."""


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``launch.replay`` (and the other old names in `MOVED`, and their submodules) as the moved module."""

    @staticmethod
    def _target(fullname: str) -> str | None:
        for old, new in MOVED.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        if self._target(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self._target(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the module: give it its own back.
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    # First: found by the path finder, ``launch.trainers.ga`` would load the moved file a second time.
    sys.meta_path.insert(0, _MovedModules())
