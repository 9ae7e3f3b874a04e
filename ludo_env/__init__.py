"""ludo-league environments and the engine beneath them.

`ludo_env.rules` holds the rule sets, `ludo_env.engine` the numba kernels.
Importing this package stays light: the engine imports no RL library.
"""
from ludo_env.rules import Rules, RulesError

__all__ = ["Rules", "RulesError"]
