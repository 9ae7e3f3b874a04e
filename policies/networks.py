"""Configurable networks for the masked PPO and DQN RLModules (``conf/network/*.yaml``, schema `NetworkConfig`).

Passing a network
-----------------
A masked module (`policies.modules.module_spec` kinds ``"ppo"`` and ``"dqn"``) takes an
optional ``model_config["network"]``: a preset name (``conf/network``), a mapping of
`NetworkConfig` fields, or a `NetworkConfig`. The module stores it as the full mapping of
fields, so a checkpoint rebuilds the same network whatever the presets say later. Without it
the module builds RLlib's default networks from the ``fcnet_*`` / ``head_fcnet_*`` keys,
as RLlib does. With it those keys are ignored: the network config decides the encoder
and every head (PPO policy and value; DQN Q or, with ``dueling``, advantage and value).
The catalogs (`policies.modules.MaskedPPOCatalog`, `MaskedDQNCatalog`) turn it into RLlib
`ModelConfig` objects here: `NetworkConfig.encoder_config` and `NetworkConfig.head_config`.
PPO wraps the encoder in its actor-critic encoder (one copy each unless
``vf_share_layers``); DQN copies encoder and heads for its target network. Masking stays in
`policies.modules.mask_illegal`: the networks output raw scores.

The four kinds
--------------
``mlp`` (default)
    RLlib's own MLP encoder: ``hidden`` layers, each Linear, optional LayerNorm, activation
    (RLlib's order), RLlib's default initialisation. ``{"kind": "mlp", "hidden": [256, 256],
    "activation": "tanh"}`` is the same network as no ``network`` key with PPO's defaults.
    Heads: ``head_hidden`` layers, then a linear output.
``seed000_qnet``
    Seed 000's QNetwork: Linear, activation, then LayerNorm, for every hidden layer but the
    last, which has no LayerNorm (256-ReLU-LN, 256-ReLU-LN, 128-ReLU in the seed); its
    output layer (128 -> 4) is the head. Every Linear, heads included, starts orthogonal
    with gain sqrt(2) and zero bias, as the seed's ``__init__`` does.
``seed001_ann``
    Seed 001's FANN network, 60 -> 6 -> 4 with sigmoid hidden units, every weight and bias
    drawn uniformly from [-0.77, 0.77] (Thimm and Fiesler, as the paper says). Made for the
    ``seed001_flags60`` encoder; builds on any observation size. The paper's output units
    are sigmoids too; the preset keeps the output linear (``output_activation: linear``):
    the greedy move is the same (sigmoid is monotone), and bounded logits or Q-values in
    (0, 1) would cripple PPO's policy and DQN's returns. Set ``output_activation: sigmoid``
    for the paper's exact outputs.
``token_set``
    Ours, on an encoder with per-token blocks (`ludo_env.observations.TOKEN_ENCODERS`, whose
    columns `ludo_env.observations.token_layout` gives):

    * a shared per-token MLP (``token_hidden``) encodes each own token's block, and a second
      one each opponent token's block;
    * opponents are pooled into a context: ``mean`` or ``max`` over the opponent tokens (one
      context for all own tokens), or ``attention``: each own token attends over the
      opponent tokens (``attention_heads`` heads), its own context. Absent opponents (all-zero
      blocks: seats the variant does not use) are left out of the pool;
    * for each own token t, a shared MLP (``hidden``) fuses [token t, mean of own tokens,
      context (t), global features] into z_t. The encoder's latent is the flat
      ``concat(z_0, ..., z_3)``: RLlib passes flat latents, the heads know the blocks.
    * the action head (PPO logits, DQN Q or advantages) applies one shared MLP
      (``head_hidden``) to each z_t and scores token t from z_t alone; the value heads read
      ``[mean_t z_t, max_t z_t]``.

    So permuting the own token blocks (and the mask) permutes the logits and Q-values the
    same way and leaves values unchanged; permuting opponent tokens, within or across
    opponents, changes nothing. The action space must have one action per own token.

Parameters of the presets on egocentric (176 features, 4 actions), with the algorithms'
defaults: PPO with separate actor and critic encoders (``vf_share_layers`` false), DQN
dueling, online network only (its target network doubles it); pinned by the tests.

============  ========  ============  ==========================================
preset        PPO       DQN           encoder (one copy)
============  ========  ============  ==========================================
mlp           223,493   112,389       111,104 (the shape of RLlib's default net)
seed000_qnet  290,693   145,669       145,024
seed001_ann   2,159     1,097         1,062 (394 in all on seed001_flags60, plain DQN)
token_set     98,306    61,570        36,736 (latent 4 x 128; mean pooling)
  attention   131,586   78,210        53,376 (pooling=attention)
============  ========  ============  ==========================================
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import torch
import yaml
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT, Encoder
from ray.rllib.core.models.configs import MLPEncoderConfig, MLPHeadConfig, ModelConfig
from ray.rllib.core.models.torch.base import TorchModel
from torch import nn

from ludo_env.observations import TOKEN_ENCODERS, TokenLayout, obs_dim, token_layout

NETWORK_KINDS = ("mlp", "seed000_qnet", "seed001_ann", "token_set")
NETWORK_DIR = Path(__file__).resolve().parent.parent / "conf" / "network"
# Our names -> torch's class names, which RLlib's configs also accept.
ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid", "elu": "ELU", "silu": "SiLU", "gelu": "GELU"}
OUTPUT_ACTIVATIONS = ("linear", *ACTIVATIONS)
POOLINGS = ("mean", "max", "attention")
# (weight initializer, its kwargs, bias initializer, its kwargs) of the seeds' designs, by torch.nn.init name.
SEED_INITS = {
    "seed000_qnet": ("orthogonal_", {"gain": math.sqrt(2)}, "zeros_", {}),
    "seed001_ann": ("uniform_", {"a": -0.77, "b": 0.77}, "uniform_", {"a": -0.77, "b": 0.77}),
}


class NetworkConfigError(ValueError):
    pass


def _choices(values) -> str:
    values = list(values)
    return ", ".join(values[:-1]) + f" or {values[-1]}" if len(values) > 1 else values[0]


def _not_allowed(name: str, value: Any, allowed) -> NetworkConfigError:
    return NetworkConfigError(f"network.{name}={value!r} is not allowed: choose {_choices(allowed)}")


def _widths(name: str, value: Any, allow_empty: bool) -> list[int]:
    """A list of positive layer widths, or one clear line saying what is wrong."""
    widths: list[int] = []
    try:
        # A string is iterable too: "256" must not become [2, 5, 6].
        widths = [] if isinstance(value, str) else [int(w) for w in value]
        ok = not isinstance(value, str) and all(w > 0 and w == float(v) for w, v in zip(widths, value))
    except (TypeError, ValueError):
        ok = False
    if not ok or (not widths and not allow_empty):
        need = "a list of positive widths" + ("" if allow_empty else ", at least one")
        raise NetworkConfigError(f"network.{name}={value!r} is not allowed: give {need}")
    return widths


@dataclass(frozen=True)
class NetworkConfig:
    kind: str = "mlp"
    """mlp | seed000_qnet | seed001_ann | token_set (see the module docstring)."""
    hidden: list[int] = field(default_factory=lambda: [256, 256])
    """Encoder layer widths; token_set: the per-token fuse MLP, whose last width is each token's latent."""
    activation: str = "relu"
    """Hidden-layer activation everywhere: relu, tanh, sigmoid, elu, silu or gelu."""
    layernorm: bool = False
    """LayerNorm in the encoder's layers (seed000_qnet: after the activation, all but the last layer)."""
    head_hidden: list[int] = field(default_factory=list)
    """Hidden layer widths of every head, between the encoder's latent and the outputs."""
    output_activation: str = "linear"
    """Activation of the action head's outputs (logits, Q or advantages); value heads stay linear."""
    token_hidden: list[int] = field(default_factory=lambda: [64, 64])
    """token_set: widths of the shared per-token encoders (own tokens, opponent tokens)."""
    pooling: str = "mean"
    """token_set: how opponent tokens become context: mean, max or attention (each own token attends)."""
    attention_heads: int = 4
    """token_set, attention pooling: heads; must divide token_hidden[-1]."""

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "kind": NETWORK_KINDS, "activation": tuple(ACTIVATIONS), "output_activation": OUTPUT_ACTIVATIONS,
        "pooling": POOLINGS}
    """The named fields' choices, the same tuples `__post_init__` checks (read there at call time, so a test may
    extend one): the docs' reference lists them."""
    ALLOWED: ClassVar[dict[str, str]] = {
        "hidden": "a list of positive widths, at least one", "head_hidden": "a list of positive widths",
        "token_hidden": "a list of positive widths, at least one",
        "attention_heads": "a positive divisor of token_hidden[-1]"}
    """What the other fields take (`_widths` and the heads' check say the same)."""

    def __post_init__(self):
        if self.kind not in NETWORK_KINDS:
            raise _not_allowed("kind", self.kind, NETWORK_KINDS)
        if self.activation not in ACTIVATIONS:
            raise _not_allowed("activation", self.activation, ACTIVATIONS)
        if self.output_activation not in OUTPUT_ACTIVATIONS:
            raise _not_allowed("output_activation", self.output_activation, OUTPUT_ACTIVATIONS)
        if self.pooling not in POOLINGS:
            raise _not_allowed("pooling", self.pooling, POOLINGS)
        # Normalise what YAML / OmegaConf hand over (ListConfig, numpy ints) to plain lists of int.
        object.__setattr__(self, "hidden", _widths("hidden", self.hidden, allow_empty=False))
        object.__setattr__(self, "head_hidden", _widths("head_hidden", self.head_hidden, allow_empty=True))
        object.__setattr__(self, "token_hidden", _widths("token_hidden", self.token_hidden, allow_empty=False))
        if not isinstance(self.layernorm, bool):
            raise NetworkConfigError(f"network.layernorm={self.layernorm!r} is not allowed: give true or false")
        heads = self.attention_heads
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1 or self.token_hidden[-1] % heads:
            raise NetworkConfigError(
                f"network.attention_heads={heads!r} is not allowed: give a positive divisor of "
                f"token_hidden[-1]={self.token_hidden[-1]}"
            )

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None = None, **overrides) -> NetworkConfig:
        merged = {**dict(values or {}), **overrides}
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(merged) - set(known))
        if unknown:
            raise NetworkConfigError(f"unknown network field {unknown[0]!r}: choose from {', '.join(known)}")
        return cls(**merged)

    @classmethod
    def load(cls, spec: str | Mapping[str, Any] | NetworkConfig) -> NetworkConfig:
        """A config from a preset name (``conf/network/<name>.yaml``), a mapping of fields, or itself."""
        if isinstance(spec, NetworkConfig):
            return spec
        if isinstance(spec, str):
            path = NETWORK_DIR / f"{spec}.yaml"
            if not path.is_file():
                presets = sorted(p.stem for p in NETWORK_DIR.glob("*.yaml"))
                raise NetworkConfigError(f"unknown network {spec!r}: choose {_choices(presets)}")
            return cls.from_mapping(yaml.safe_load(path.read_text()))
        if isinstance(spec, Mapping):
            return cls.from_mapping(spec)
        raise NetworkConfigError(f"network={spec!r} is not allowed: give a preset name or a mapping of fields")

    @classmethod
    def from_model_config(cls, model_config: Mapping[str, Any]) -> NetworkConfig | None:
        """The module's ``model_config["network"]`` as a config; None when absent (RLlib's default nets)."""
        spec = model_config.get("network")
        return None if spec is None else cls.load(spec)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self) -> None:
        """Validate again (e.g. after Hydra/OmegaConf built or changed the object); one-line NetworkConfigError."""
        NetworkConfig(**self.to_dict())

    # ------------------------------------------------------------------ RLlib model configs
    def encoder_config(self, input_dim: int, obs: str | None = None) -> ModelConfig:
        """The encoder's RLlib config on ``input_dim`` features of encoder `obs` (token_set needs `obs`)."""
        if self.kind == "mlp":
            # The layout of RLlib's own default encoder (last width as its output layer), so that
            # kind mlp with the same widths and activation is the same network.
            return MLPEncoderConfig(
                input_dims=[input_dim],
                hidden_layer_dims=self.hidden[:-1],
                hidden_layer_activation=ACTIVATIONS[self.activation],
                hidden_layer_use_layernorm=self.layernorm,
                output_layer_dim=self.hidden[-1],
                output_layer_activation=ACTIVATIONS[self.activation],
                output_layer_use_layernorm=self.layernorm,
            )
        if self.kind in SEED_INITS:
            return SeedMLPEncoderConfig(
                input_dims=[input_dim],
                hidden_layer_dims=tuple(self.hidden),
                activation=self.activation,
                layernorm=self.layernorm,
                init=self.kind,
            )
        if self.kind != "token_set":
            raise _unbuilt_kind(self.kind, "encoder")
        layout = token_layout(obs) if obs is not None else None
        if layout is None:
            raise NetworkConfigError(
                f"network.kind='token_set' needs an encoder with per-token blocks: obs={obs!r} has none; "
                f"choose {_choices(TOKEN_ENCODERS)}"
            )
        if obs_dim(obs) != input_dim:
            raise NetworkConfigError(
                f"network.kind='token_set' reads obs={obs!r} ({obs_dim(obs)} features) "
                f"but the observations have {input_dim}"
            )
        return TokenSetEncoderConfig(
            input_dims=[input_dim],
            layout=layout,
            token_hidden=tuple(self.token_hidden),
            hidden=tuple(self.hidden),
            activation=self.activation,
            layernorm=self.layernorm,
            pooling=self.pooling,
            attention_heads=self.attention_heads,
        )

    def head_config(self, latent_dims, output_dim: int, actions: int | None = None) -> ModelConfig:
        """A head's RLlib config: the action head (`actions` = the action count) or, `actions` None, a value head.

        `output_dim` is the head's total outputs: actions, actions x atoms (distributional
        DQN), or 1 for a value.
        """
        scores_actions = actions is not None
        output_activation = self.output_activation if scores_actions else "linear"
        if self.kind == "token_set":
            token_dim = self.hidden[-1]
            tokens = latent_dims[0] // token_dim
            if scores_actions and actions != tokens:
                raise NetworkConfigError(
                    f"network.kind='token_set' scores one action per own token: the action space has "
                    f"{actions} actions, the encoder {tokens} tokens"
                )
            return TokenHeadConfig(
                input_dims=list(latent_dims),
                token_dim=token_dim,
                hidden_layer_dims=tuple(self.head_hidden),
                activation=self.activation,
                outputs=output_dim // actions if scores_actions else output_dim,
                per_token=scores_actions,
                output_activation=output_activation,
            )
        if self.kind != "mlp" and self.kind not in SEED_INITS:
            raise _unbuilt_kind(self.kind, "head")
        init = {}
        if self.kind in SEED_INITS:
            weights, weights_kwargs, bias, bias_kwargs = SEED_INITS[self.kind]
            for layer in ("hidden_layer", "output_layer"):
                init |= {
                    f"{layer}_weights_initializer": weights,
                    f"{layer}_weights_initializer_config": weights_kwargs,
                    f"{layer}_bias_initializer": bias,
                    f"{layer}_bias_initializer_config": bias_kwargs,
                }
        return MLPHeadConfig(
            input_dims=list(latent_dims),
            hidden_layer_dims=list(self.head_hidden),
            hidden_layer_activation=ACTIVATIONS[self.activation],
            output_layer_dim=output_dim,
            output_layer_activation=ACTIVATIONS.get(output_activation, "linear"),
            **init,
        )


def _unbuilt_kind(kind: str, part: str) -> NetworkConfigError:
    """A kind listed in NETWORK_KINDS that this builder has no branch for: a new kind must say how its `part` is
    built rather than pass for another kind."""
    return NetworkConfigError(f"network.kind={kind!r} has no {part} builder: add one to NetworkConfig.{part}_config")


# ------------------------------------------------------------------ building blocks
def _activation(name: str, after_layer: bool = False) -> nn.Module:
    """The activation `name`. `after_layer`: it reads the fresh output of a Linear or LayerNorm that nothing
    else reads, so a ReLU there works in place (no copy of the activations per layer: 14% of a learned
    player's forward pass; neither layer's backward needs its own output)."""
    activation = getattr(nn, ACTIVATIONS[name])()
    if after_layer and isinstance(activation, nn.ReLU):
        activation.inplace = True
    return activation


def _feed_forward(in_dim: int, widths, activation: str, layernorm: bool = False) -> tuple[nn.Sequential, int]:
    """Linear, optional LayerNorm, activation per width (RLlib's order); returns the stack and its output width."""
    layers: list[nn.Module] = []
    for width in widths:
        layers.append(nn.Linear(in_dim, width))
        if layernorm:
            layers.append(nn.LayerNorm(width))
        layers.append(_activation(activation, after_layer=True))
        in_dim = width
    return nn.Sequential(*layers), in_dim


def _check_torch(framework: str) -> None:
    if framework != "torch":
        raise ValueError(f"policies.networks builds torch models only, not {framework!r}")


# ------------------------------------------------------------------ seed MLPs
@dataclass
class SeedMLPEncoderConfig(ModelConfig):
    """Seed 000's / seed 001's MLP: Linear, activation, [LayerNorm] per layer, with the seed's initialisation."""

    hidden_layer_dims: tuple[int, ...] = (256, 256, 128)
    activation: str = "relu"
    layernorm: bool = False
    init: str = "seed000_qnet"  # a key of SEED_INITS

    @property
    def output_dims(self):
        return (self.hidden_layer_dims[-1],)

    def build(self, framework: str = "torch") -> SeedMLPEncoder:
        _check_torch(framework)
        return SeedMLPEncoder(self)


class SeedMLPEncoder(TorchModel, Encoder):
    def __init__(self, config: SeedMLPEncoderConfig):
        TorchModel.__init__(self, config)
        Encoder.__init__(self, config)
        weights, weights_kwargs, bias, bias_kwargs = SEED_INITS[config.init]
        layers: list[nn.Module] = []
        in_dim = config.input_dims[0]
        last = len(config.hidden_layer_dims) - 1
        for i, width in enumerate(config.hidden_layer_dims):
            linear = nn.Linear(in_dim, width)
            getattr(nn.init, weights)(linear.weight, **weights_kwargs)
            getattr(nn.init, bias)(linear.bias, **bias_kwargs)
            layers += [linear, _activation(config.activation, after_layer=True)]
            # The seed normalises after the activation and leaves the layer feeding the output alone.
            if config.layernorm and i < last:
                layers.append(nn.LayerNorm(width))
            in_dim = width
        self.net = nn.Sequential(*layers)

    def _forward(self, inputs: dict, **kwargs) -> dict:
        return {ENCODER_OUT: self.net(inputs[Columns.OBS])}


# ------------------------------------------------------------------ token set
@dataclass
class TokenSetEncoderConfig(ModelConfig):
    """Per-token encoders, opponent pooling and a per-token fuse MLP; latent = concat of the own tokens' z_t."""

    layout: TokenLayout = None
    token_hidden: tuple[int, ...] = (64, 64)
    hidden: tuple[int, ...] = (128,)
    activation: str = "relu"
    layernorm: bool = False
    pooling: str = "mean"
    attention_heads: int = 4

    @property
    def output_dims(self):
        return (len(self.layout.own) * self.hidden[-1],)

    def build(self, framework: str = "torch") -> TokenSetEncoder:
        _check_torch(framework)
        return TokenSetEncoder(self)


class TokenSetEncoder(TorchModel, Encoder):
    def __init__(self, config: TokenSetEncoderConfig):
        TorchModel.__init__(self, config)
        Encoder.__init__(self, config)
        layout = config.layout
        # Column indices as buffers (not saved: the layout comes from the config) so they follow .to(device).
        self.register_buffer("own_columns", torch.tensor(layout.own, dtype=torch.long), persistent=False)
        self.register_buffer("global_columns", torch.tensor(layout.globals, dtype=torch.long), persistent=False)
        self.own_encoder, token_dim = _feed_forward(
            len(layout.own_features), config.token_hidden, config.activation, config.layernorm
        )
        fuse_in = 2 * token_dim + len(layout.globals)  # token t, mean of own tokens, globals
        self.has_opponents = len(layout.opponents) > 0
        if self.has_opponents:
            self.register_buffer(
                "opponent_columns", torch.tensor(layout.opponents, dtype=torch.long), persistent=False
            )
            self.opponent_encoder, _ = _feed_forward(
                len(layout.opponent_features), config.token_hidden, config.activation, config.layernorm
            )
            if config.pooling == "attention":
                self.attention = nn.MultiheadAttention(token_dim, config.attention_heads, batch_first=True)
            fuse_in += token_dim
        self.fuse, _ = _feed_forward(fuse_in, config.hidden, config.activation, config.layernorm)
        # One context for all own tokens (not attention) and a first layer to split: `_fuse_shared`.
        self.fuse_shared = config.pooling != "attention" and len(config.hidden) > 0

    def _forward(self, inputs: dict, **kwargs) -> dict:
        obs = inputs[Columns.OBS]
        leading = obs.shape[:-1]
        obs = obs.reshape(-1, obs.shape[-1])
        own = self.own_encoder(obs[:, self.own_columns])  # (B, tokens, D)
        context = self._opponent_context(own, obs[:, self.opponent_columns]) if self.has_opponents else None
        globals_ = obs[:, self.global_columns]
        if self.fuse_shared:
            z = self._fuse_shared(own, context, globals_)
        else:
            z = self.fuse(self._fuse_input(own, context, globals_))
        return {ENCODER_OUT: z.reshape(*leading, -1)}

    @staticmethod
    def _fuse_input(own: torch.Tensor, context: torch.Tensor | None, globals_: torch.Tensor) -> torch.Tensor:
        """The fuse MLP's input, ``(B, tokens, 2 D [+ D] [+ globals])``: per token [token t, mean of own tokens,
        context, global features] (module docstring)."""
        tokens = own.shape[1]
        parts = [own, own.mean(dim=1, keepdim=True).expand_as(own)]
        if context is not None:
            parts.append(context if context.dim() == 3 else context.unsqueeze(1).expand(-1, tokens, -1))
        if globals_.shape[-1]:
            parts.append(globals_.unsqueeze(1).expand(-1, tokens, -1))
        return torch.cat(parts, dim=-1)

    def _fuse_shared(self, own: torch.Tensor, context: torch.Tensor | None, globals_: torch.Tensor) -> torch.Tensor:
        """`fuse` of `_fuse_input`, computed without building it: with one context for all tokens (mean or max
        pooling), only the token's own block differs between tokens, so the first layer is ``W_own token_t +
        (W_rest [mean, context, globals] + b)``, the second part once per row. The same function as
        ``self.fuse(self._fuse_input(...))`` up to float rounding (a test holds them together), with a third of
        the first layer's work and no ``(B, tokens, fuse_in)`` copy: in DQN's learner updates the concatenation
        and the first layer were a large share of the encoder's time."""
        first = self.fuse[0]
        width = own.shape[-1]
        shared = [own.mean(dim=1)] + ([context] if context is not None else []) + [globals_]
        rest = torch.nn.functional.linear(torch.cat(shared, dim=-1), first.weight[:, width:], first.bias)
        z = torch.nn.functional.linear(own, first.weight[:, :width]).add_(rest.unsqueeze(1))
        for layer in list(self.fuse)[1:]:
            z = layer(z)
        return z

    def _opponent_context(self, own: torch.Tensor, blocks: torch.Tensor) -> torch.Tensor:
        """Context from the opponent token blocks ``(B, O, W)``: ``(B, D)`` for mean or max pooling (one for
        every own token), ``(B, tokens, D)`` for attention (each own token its own)."""
        # A real token always shows in its block (egocentric sets a status flag); all zeros is an unused seat.
        present = (blocks != 0).any(dim=-1)  # (B, O)
        any_present = present.any(dim=-1, keepdim=True)  # (B, 1)
        opponents = self.opponent_encoder(blocks)  # (B, O, D)
        pooling = self.config.pooling
        if pooling == "attention":
            # A row without opponents would attend over nothing (nan): let it attend over all, then zero it.
            ignore = ~present & any_present
            context, _ = self.attention(own, opponents, opponents, key_padding_mask=ignore, need_weights=False)
            return context * any_present.unsqueeze(-1)
        weights = present.unsqueeze(-1).to(opponents.dtype)
        if pooling == "mean":
            # The weighted sum as one batched product: a quarter of the time of multiply-then-sum, no temporary.
            total = torch.matmul(weights.transpose(1, 2), opponents).squeeze(1)  # (B, D)
            return total / weights.sum(dim=1).clamp(min=1.0)
        pooled = opponents.masked_fill(~present.unsqueeze(-1), float("-inf")).amax(dim=1)
        return torch.where(any_present, pooled, torch.zeros_like(pooled))


@dataclass
class TokenHeadConfig(ModelConfig):
    """A head on the token-set latent: per token (scores each token from its own z_t) or pooled (a value)."""

    token_dim: int = None
    hidden_layer_dims: tuple[int, ...] = ()
    activation: str = "relu"
    outputs: int = 1  # per token when per_token, else in all
    per_token: bool = True
    output_activation: str = "linear"

    @property
    def output_dims(self):
        tokens = self.input_dims[0] // self.token_dim
        return (tokens * self.outputs if self.per_token else self.outputs,)

    def build(self, framework: str = "torch") -> TokenHead:
        _check_torch(framework)
        return TokenHead(self)


class TokenHead(TorchModel):
    def __init__(self, config: TokenHeadConfig):
        super().__init__(config)
        in_dim = config.token_dim if config.per_token else 2 * config.token_dim  # pooled: mean and max
        hidden, width = _feed_forward(in_dim, config.hidden_layer_dims, config.activation)
        out = [nn.Linear(width, config.outputs)]
        if config.output_activation != "linear":
            out.append(_activation(config.output_activation))
        self.net = nn.Sequential(*hidden, *out)

    def _forward(self, latent: torch.Tensor, **kwargs) -> torch.Tensor:
        tokens = latent.reshape(*latent.shape[:-1], -1, self.config.token_dim)  # (..., tokens, D)
        if self.config.per_token:
            return self.net(tokens).flatten(start_dim=-2)  # token-major: (..., tokens * outputs)
        return self.net(torch.cat([tokens.mean(dim=-2), tokens.amax(dim=-2)], dim=-1))
