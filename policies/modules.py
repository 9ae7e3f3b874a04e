"""RLlib (new API stack) RLModules for Ludo: masked PPO and DQN, scripted bots, and playing outside RLlib.

Spaces the modules expect (what `ludo_env.multi_agent_env.LudoMultiAgentEnv` gives each seat)
-------------------------------------------------------------------------------------------
* Action: ``Discrete(4)``, the index of the token to move (0..3).
* Observation: a ``gymnasium.spaces.Dict`` with

  - ``"observations"``: float32 ``(obs_dim,)``, the encoder's features; the only input of the nets;
  - ``"action_mask"``: float ``(4,)``, **1 = token t may move, 0 = illegal**;
  - ``"state"``: int ``(26,)``, the raw engine state row (absolute seats, mover at ``CURRENT``);
    only `BotRLModule` reads it.

Masking happens here and nowhere else, in `mask_illegal`:

* `MaskedPPOTorchRLModule` sets illegal logits to `PPO_ILLEGAL_LOGIT`, a finite
  ``-3.4e38``: the probability is still exactly 0, and every number PPO derives
  from the logits (log-probabilities, probability ratios, entropy, KL) stays
  finite even for a masked-out action, where ``-inf`` gives ``-inf - (-inf) = nan``.
* `MaskedDQNTorchRLModule` sets illegal Q-values to ``-inf`` (`DQN_ILLEGAL_Q`):
  RLlib's DQN learner reads Q through ``nan_to_num(neginf=0)``, so ``-inf`` is the
  value it is built to ignore, and a bootstrap from a state without legal moves is 0.

model_config keys
-----------------
Masked modules (`module_spec` kinds ``"ppo"`` and ``"dqn"``):

* the RLlib default-model keys, e.g. ``fcnet_hiddens`` (default ``[256, 256]``),
  ``fcnet_activation`` (``"tanh"``), ``head_fcnet_hiddens`` (``[]``), ``vf_share_layers``
  (PPO), and DQN's ``dueling``, ``double_q``, ``epsilon``, ``num_atoms``, ... The
  algorithm's own defaults (`PPOConfig` / `DQNConfig` ``.model_config``) fill any key
  left out, inside RLlib and when a module is built on its own alike.
* ``"network"`` (optional): a `policies.networks.NetworkConfig` as a preset name
  (``conf/network``), a mapping of its fields, or the config itself; stored as the full
  mapping of fields. It then decides the encoder and every head, and the ``fcnet_*`` /
  ``head_fcnet_*`` keys are ignored. Absent: RLlib's default nets from those keys.
* required: ``"obs"`` (observation encoder name), ``"variant"`` (rule-set name or
  mapping) and ``"players"``. They travel with every checkpoint so that a saved module
  says which observations it was trained on; only the ``token_set`` network reads
  ``"obs"`` (for its token layout).

`BotRLModule` (kind ``"bot"``): required ``"bot"`` (a `policies.bots.Bot` name) and
``"players"``; ``"variant"`` (name or mapping of `Rules` fields, default
``"classic"``); ``"seed"`` (default 0).

Playing outside RLlib: `load_checkpoint_player` loads a saved policy folder
(`policies.checkpoints`, no pickle) into a `ModulePlayer`, whose ``act`` plays greedy
legal moves on a batch; RLlib's own checkpoints (pickles) are refused.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.dqn.default_dqn_rl_module import ATOMS, QF_LOGITS, QF_PREDS, QF_PROBS
from ray.rllib.algorithms.dqn.dqn_catalog import DQNCatalog
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec

from ludo_env.core import ACTION_SPACE, observation_space
from ludo_env.engine import compile_rules
from ludo_env.observations import obs_dim
from ludo_env.rules import Rules
from policies.bots import Bot
from policies.checkpoints import POLICY_JSON, WEIGHTS, PolicyFileError, find_policy, load_weights, read_meta
from policies.networks import NetworkConfig
from policies.saved import SAVED_MODULE_KINDS, load_module, named

OBSERVATIONS = "observations"
ACTION_MASK = "action_mask"
STATE = "state"

PPO_ILLEGAL_LOGIT = -3.4e38
DQN_ILLEGAL_Q = float("-inf")

BOT_KIND = "bot"
"""The module kind of a league bot (`BotRLModule`); every other kind is an algorithm of `policies.algorithms`."""
ENV_KEYS = ("obs", "variant", "players")


# ------------------------------------------------------------------ masking
def mask_illegal(values: torch.Tensor, action_mask: torch.Tensor, illegal_value: float) -> torch.Tensor:
    """`values` (logits or Q-values, ``(..., 4)``) with every illegal action set to `illegal_value`.

    `torch.where` rather than adding ``log(mask)``: the legal entries keep their
    exact values and gradients, the illegal ones get no gradient at all.
    """
    legal = legal_actions(action_mask).to(values.device)
    return torch.where(legal, values, torch.full_like(values, illegal_value))


def legal_actions(action_mask: Any) -> torch.Tensor:
    """The mask convention in one place: a bool tensor, True where ``action_mask`` is 1."""
    return torch.as_tensor(action_mask) > 0


def split_observation(batch: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """``(batch with OBS = the "observations" features only, action mask)``; the input batch is not changed."""
    obs = batch[Columns.OBS]
    if not isinstance(obs, Mapping) or ACTION_MASK not in obs or OBSERVATIONS not in obs:
        raise ValueError(
            f"masked Ludo modules need Dict observations with '{OBSERVATIONS}' and '{ACTION_MASK}'"
        )
    return {**batch, Columns.OBS: obs[OBSERVATIONS]}, obs[ACTION_MASK]


def net_observation_space(observation_space: gym.Space) -> gym.Space:
    """The part of the observation space the nets are built on: the ``"observations"`` Box."""
    if isinstance(observation_space, gym.spaces.Dict):
        return observation_space[OBSERVATIONS]
    return observation_space


class _NetsOnObservations:
    """Catalog mixin: build the encoder on the ``"observations"`` Box, not the whole Dict.

    The module itself keeps the Dict space, so checkpoints, `RLModuleSpec.from_module`
    and the connectors see the env's real space. With ``model_config["network"]`` the
    encoder and heads come from that `NetworkConfig` (``self.network``); without it,
    from RLlib's defaults.
    """

    network: NetworkConfig | None

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, model_config_dict: dict, **kwargs):
        super().__init__(
            observation_space=net_observation_space(observation_space),
            action_space=action_space,
            model_config_dict=model_config_dict,
            **kwargs,
        )
        self.network = NetworkConfig.from_model_config(self._model_config_dict)

    @classmethod
    def _get_encoder_config(cls, observation_space, model_config_dict, action_space=None):
        network = NetworkConfig.from_model_config(model_config_dict)
        if network is None:
            return super()._get_encoder_config(
                observation_space=observation_space, model_config_dict=model_config_dict, action_space=action_space
            )
        return network.encoder_config(int(observation_space.shape[0]), obs=model_config_dict.get("obs"))

    def _action_head_config(self, output_dim: int):
        return self.network.head_config(self.latent_dims, output_dim, actions=int(self.action_space.n))

    def _value_head_config(self, outputs: int = 1):
        return self.network.head_config(self.latent_dims, outputs)


class MaskedPPOCatalog(_NetsOnObservations, PPOCatalog):
    """PPO's catalog, nets on the ``"observations"`` entry."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.network is not None:
            self.vf_head_config = self._value_head_config()

    def build_pi_head(self, framework: str):
        if self.network is None:
            return super().build_pi_head(framework)
        dist = self.get_action_dist_cls(framework=framework)
        self.pi_head_config = self._action_head_config(
            dist.required_input_dim(space=self.action_space, model_config=self._model_config_dict)
        )
        return self.pi_head_config.build(framework=framework)


class MaskedDQNCatalog(_NetsOnObservations, DQNCatalog):
    """DQN's catalog, nets on the ``"observations"`` entry (dueling, distributional, double-Q as configured).

    A distributional dueling value head has one output per atom (`MaskedDQNTorchRLModule`); RLlib's has one.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.network is not None:
            self.af_head_config = self._action_head_config(int(self.action_space.n * self.num_atoms))
            self.vf_head_config = self._value_head_config(self.num_atoms)
        elif self.num_atoms > 1:
            self.vf_head_config = self._get_head_config(output_layer_dim=self.num_atoms)


def _catalog_for(catalog_class: type | None, stock: type, masked: type) -> type:
    # RLlib fills an unset catalog_class with the algorithm's stock catalog, which would
    # try to build an encoder for the whole Dict space.
    if catalog_class is None or catalog_class is stock:
        return masked
    if issubclass(catalog_class, _NetsOnObservations):
        return catalog_class
    raise ValueError(f"catalog_class {catalog_class.__name__} must subclass {masked.__name__}")


@functools.cache
def _algorithm_model_defaults(kind: str) -> dict:
    from policies.algorithms import module_algorithm

    return module_algorithm(kind).config_class().model_config


def _masked_model_config(kind: str, model_config: Any) -> dict:
    """The algorithm's defaults under the given model_config; checks the env keys are there."""
    if dataclasses.is_dataclass(model_config):
        model_config = dataclasses.asdict(model_config)
    model_config = dict(model_config or {})
    missing = [k for k in ENV_KEYS if k not in model_config]
    if missing:
        raise ValueError(
            f"masked {kind.upper()} module: model_config lacks {', '.join(missing)} "
            f"(every masked module records {', '.join(ENV_KEYS)} of the env it plays)"
        )
    if model_config.get("network") is not None:
        # Every field spelled out: a checkpoint rebuilds its network even if a preset or a default changes.
        model_config["network"] = NetworkConfig.load(model_config["network"]).to_dict()
    return _algorithm_model_defaults(kind) | model_config


# ------------------------------------------------------------------ learned modules
class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO actor-critic on ``"observations"``, with illegal logits masked out."""

    def __init__(self, *args, catalog_class=None, model_config=None, **kwargs):
        super().__init__(
            *args,
            catalog_class=_catalog_for(catalog_class, PPOCatalog, MaskedPPOCatalog),
            model_config=_masked_model_config("ppo", model_config),
            **kwargs,
        )

    def _forward(self, batch, **kwargs):
        encoder = self.encoder
        if getattr(encoder, "actor_encoder", None) is None or encoder.config.shared:
            return self._masked(super()._forward, batch, **kwargs)
        # Acting reads the policy only: RLlib's pass would also run the critic's own encoder, as much work again.
        net_batch, action_mask = split_observation(batch)
        logits = self.pi(encoder.actor_encoder(net_batch)[ENCODER_OUT])
        return {Columns.ACTION_DIST_INPUTS: mask_illegal(logits, action_mask, PPO_ILLEGAL_LOGIT)}

    def _forward_train(self, batch, **kwargs):
        return self._masked(super()._forward_train, batch, **kwargs)

    @staticmethod
    def _masked(forward, batch, **kwargs):
        """Run the stock forward pass on the observations, then mask its logits."""
        net_batch, action_mask = split_observation(batch)
        out = forward(net_batch, **kwargs)
        out[Columns.ACTION_DIST_INPUTS] = mask_illegal(out[Columns.ACTION_DIST_INPUTS], action_mask, PPO_ILLEGAL_LOGIT)
        return out

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            batch, _ = split_observation(batch)
        return super().compute_values(batch, embeddings)


class MaskedDQNTorchRLModule(DefaultDQNTorchRLModule):
    """RLlib's default DQN (dueling, double-Q, ... as configured) on ``"observations"``, illegal Q = -inf.

    Every Q-value RLlib computes (online, target, the double-Q next-state pass)
    goes through `_qf_forward_helper`, so masking its output covers greedy actions
    and bootstrap targets. With dueling, the mask is applied to the final
    ``V + A - mean(A)``, so the head trains exactly as RLlib's own.

    Distributional (``num_atoms > 1``, C51): RLlib's learner reads the atoms' logits
    and probabilities and the masked expected Q-values (which pick the greedy and the
    bootstrap actions), all from `_return_distribution`. With dueling, the logits of
    action a on atom i are ``V_i + A_(a,i) - mean_b A_(b,i)`` (Wang et al. 2016 per
    atom, as in Rainbow). RLlib 2.60's own distributional dueling adds one scalar V to
    every logit of a state, which a softmax cancels: its value head never learns.
    """

    def __init__(self, *args, catalog_class=None, model_config=None, **kwargs):
        super().__init__(
            *args,
            catalog_class=_catalog_for(catalog_class, DQNCatalog, MaskedDQNCatalog),
            model_config=_masked_model_config("dqn", model_config),
            **kwargs,
        )

    def _qf_forward_helper(self, batch, encoder, head):
        net_batch, action_mask = split_observation(batch)
        if self.num_atoms > 1:
            out = self._return_distribution(net_batch, encoder, head)
        else:
            out = super()._qf_forward_helper(net_batch, encoder, head)
        out[QF_PREDS] = mask_illegal(out[QF_PREDS], action_mask, DQN_ILLEGAL_Q)
        return out

    def _return_distribution(self, batch, encoder, head) -> dict:
        encoder_outs = encoder(batch)
        latent = encoder_outs[ENCODER_OUT]
        advantages = self.compute_advantage_distribution((head["af"] if self.uses_dueling else head)(latent))
        logits, atoms = advantages["logits"], advantages[ATOMS]  # (..., actions, atoms), (atoms,)
        if self.uses_dueling:
            values = head["vf"](latent).unsqueeze(-2)  # (..., 1, atoms): one value distribution per state
            logits = values + logits - logits.mean(dim=-2, keepdim=True)
        probs = torch.softmax(logits, dim=-1)
        # A product with the support, not a sum over it: ONNX Runtime's sum rounded two equal tokens' Q-values
        # apart on 1.2-1.4% of the export test's 10,000 positions, so its greedy move left the lowest index of a tie.
        out = {ATOMS: atoms, QF_LOGITS: logits, QF_PROBS: probs, QF_PREDS: probs @ atoms}
        if Columns.STATE_OUT in encoder_outs:
            out[Columns.STATE_OUT] = encoder_outs[Columns.STATE_OUT]
        return out

    def _forward_exploration(self, batch, t: int = 0, **kwargs):
        # Epsilon-greedy whose random move is drawn from the env's mask. RLlib's own draws
        # among the actions whose Q is non-zero, which also drops a legal action whose Q
        # happens to be exactly 0 (and fails if all of them are).
        q_out = self.compute_q_values(batch)
        greedy = q_out[QF_PREDS].argmax(dim=-1)
        legal = legal_actions(batch[Columns.OBS][ACTION_MASK]).float().to(greedy.device)
        legal = legal + (legal.sum(dim=-1, keepdim=True) == 0)  # no legal move: any index, the env ignores it
        random_moves = torch.multinomial(legal, num_samples=1).squeeze(-1)
        self.epsilon_schedule.update(t)
        epsilon = self.epsilon_schedule.get_current_value()
        explore = torch.rand(greedy.shape, device=greedy.device) < epsilon
        out = {Columns.ACTIONS: torch.where(explore, random_moves, greedy)}
        if Columns.STATE_OUT in q_out:
            out[Columns.STATE_OUT] = q_out[Columns.STATE_OUT]
        return out


# ------------------------------------------------------------------ scripted bots
def _to_numpy(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


class BotRLModule(RLModule):
    """A scripted `policies.bots.Bot` as a fixed RLModule, so bots and learned modules are interchangeable.

    It outputs ``Columns.ACTIONS`` directly: RLlib's `GetActions` connector samples
    only when a module gives no actions, so PPO's and DQN's EnvRunners send these
    moves unchanged. It is a plain `RLModule`, not a torch one, with no parameters:
    the torch Learner builds optimizers only for ``nn.Module`` modules, and an empty
    parameter list would make ``Adam`` fail. Leave it out of ``policies_to_train``.

    Every copy starts from the same ``seed``, so EnvRunners with the same bot draw the
    same random stream; the games differ anyway because their dice do.
    """

    def __init__(self, *args, catalog_class=None, **kwargs):
        # No catalog: the stock one (filled in by RLlib) cannot build for a Dict space.
        super().__init__(*args, **kwargs)

    def setup(self):
        config = self.model_config or {}
        missing = [k for k in ("bot", "players") if k not in config]
        if missing:
            raise ValueError(f"BotRLModule: model_config lacks {', '.join(missing)} (it needs bot and players)")
        rules = Rules.load(config.get("variant", "classic"), players=int(config["players"]))
        self._rules_table = compile_rules(rules)
        self.bot = Bot(config["bot"], seed=int(config.get("seed", 0)))

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        if not isinstance(obs, Mapping) or STATE not in obs or ACTION_MASK not in obs:
            raise ValueError(f"BotRLModule reads Dict observations with '{STATE}' and '{ACTION_MASK}'")
        states = _to_numpy(obs[STATE]).astype(np.int16)
        masks = _to_numpy(legal_actions(obs[ACTION_MASK])).astype(np.int8)
        choices = self.bot.act(np.ascontiguousarray(states), self._rules_table, np.ascontiguousarray(masks))
        return {Columns.ACTIONS: np.asarray(choices, dtype=np.int64)}

    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError(
            "BotRLModule plays a fixed script and cannot train: leave it out of policies_to_train"
        )


# ------------------------------------------------------------------ specs


def module_spec(
    kind: str,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
    model_config: Mapping[str, Any] | None = None,
) -> RLModuleSpec:
    """An `RLModuleSpec` for a module of an algorithm in `policies.algorithms` (``"ppo"``, ``"dqn"``) or a
    league bot (`BOT_KIND`).

    Leave the spaces None inside an algorithm config: RLlib fills them from the env.
    The algorithm's model_config settings (e.g. DQN's ``dueling``) apply under the
    keys given here.
    """
    from policies.algorithms import REGISTRY  # it imports this module's classes

    if kind == BOT_KIND:
        module_class, catalog_class = BotRLModule, None
    elif kind in REGISTRY:
        module_class, catalog_class = named(REGISTRY[kind].module_class), named(REGISTRY[kind].catalog_class)
    else:
        raise ValueError(f"unknown module kind '{kind}': choose one of {', '.join((*REGISTRY, BOT_KIND))}")
    return RLModuleSpec(
        module_class=module_class,
        catalog_class=catalog_class,
        observation_space=observation_space,
        action_space=action_space,
        model_config=dict(model_config or {}),
    )


def multi_agent_spec(
    modules: Mapping[str, tuple[str, Mapping[str, Any]]],
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> MultiRLModuleSpec:
    """A `MultiRLModuleSpec` from ``{module_id: (kind, model_config)}``, all on the same spaces."""
    return MultiRLModuleSpec(
        rl_module_specs={
            module_id: module_spec(kind, observation_space, action_space, model_config)
            for module_id, (kind, model_config) in modules.items()
        }
    )


# ------------------------------------------------------------------ playing outside RLlib
def inference_batch(obs: np.ndarray, masks: np.ndarray, states: np.ndarray | None = None) -> dict:
    """The batch a masked module's forward passes read: features `obs`, legal `masks` (1 = legal) and, for
    `BotRLModule` only, the raw engine rows `states`."""
    batch_obs = {
        OBSERVATIONS: torch.as_tensor(np.asarray(obs), dtype=torch.float32),
        ACTION_MASK: torch.as_tensor(np.asarray(masks), dtype=torch.float32),
    }
    if states is not None:
        batch_obs[STATE] = torch.as_tensor(np.asarray(states).astype(np.int32))
    return {Columns.OBS: batch_obs}


INFERENCE_THREADS = 1
"""Intra-op threads for a `ModulePlayer`'s forward pass. One thread answers every batch size faster on a
machine with few cores, because a second thread waits on a core that the engine, a Ray worker or the learner
holds (docs/pages/results/, evaluator speed); the evaluator's engine work runs between the passes anyway."""


@contextlib.contextmanager
def intra_op_threads(threads: int):
    """torch's intra-op thread count set to `threads` for a block, the caller's count restored after. The count
    is the calling thread's own (OpenMP keeps one per thread; a new thread starts from the last count set
    anywhere), so blocks in several threads at once (a tournament's) each set and restore their own."""
    before = torch.get_num_threads()
    if threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class ModulePlayer:
    """Greedy, legal play from an RLModule on batches of decisions, outside RLlib.

    ``obs`` (the observation encoder's name), ``variant`` and ``players`` come from the
    module's model_config (None if it lacks them) and tell the caller which
    observations to build.
    """

    def __init__(self, module: RLModule):
        if isinstance(module, MultiRLModule):
            raise TypeError(f"ModulePlayer plays one module, got a MultiRLModule with {', '.join(module.keys())}")
        self.module = module
        if isinstance(module, torch.nn.Module):
            module.eval()
        config = module.model_config if isinstance(module.model_config, Mapping) else {}
        self.obs: str | None = config.get("obs")
        self.variant = config.get("variant")
        self.players: int | None = config.get("players")

    def act(self, obs: np.ndarray, masks: np.ndarray, states: np.ndarray | None = None) -> np.ndarray:
        """Token choices, int64 ``(B,)``, for features `obs` ``(B, obs_dim)`` and legal `masks` ``(B, 4)``.

        `states` (the raw engine rows) is needed only by `BotRLModule`.
        """
        batch = inference_batch(obs, masks, states)
        masks_t = batch[Columns.OBS][ACTION_MASK]
        with torch.inference_mode(), intra_op_threads(INFERENCE_THREADS):
            if getattr(self.module, "training", False):  # RLlib's forward_inference would switch it to eval and
                # back on every call, walking every submodule twice
                self.module.eval()
            out = self.module._forward_inference(batch)
        if Columns.ACTIONS in out:
            return _to_numpy(out[Columns.ACTIONS]).astype(np.int64)
        # Mask again: a module that forgot to mask must still never play an illegal move.
        logits = mask_illegal(out[Columns.ACTION_DIST_INPUTS], masks_t, PPO_ILLEGAL_LOGIT)
        return _to_numpy(logits.argmax(dim=-1)).astype(np.int64)


def load_checkpoint_player(path: str | Path) -> ModulePlayer:
    """A `ModulePlayer` for a saved policy, loaded without running a pickle.

    `path` is a training run folder, one of its checkpoints or their ``policy``
    folder (`policies.checkpoints`: the module is rebuilt from ``policy.json``
    and its tensors are read from ``weights.pt`` with ``weights_only``). An RLlib
    checkpoint (a single module's ``class_and_ctor_args.pkl``, an algorithm's
    ``algorithm_state.pkl``) restores only by unpickling, which can run any code:
    it is refused in one line (`PolicyFileError`) that names the policy folder to
    give instead (the training checkpoint's ``policy`` above it, when there is one).
    """
    path = Path(path)
    try:
        folder = find_policy(path)  # refuses an RLlib checkpoint in one line (`refuse_rllib_checkpoint`)
    except PolicyFileError as err:
        if not str(err).startswith(f"'{path}' holds no policy"):
            raise  # an RLlib checkpoint, a run folder whose checkpoints are all damaged: it says which
        raise PolicyFileError(
            f"'{path}' holds no policy: give a training run folder, a checkpoint or policy folder of one "
            f"({POLICY_JSON} and {WEIGHTS})"
        ) from None
    return ModulePlayer(load_module(folder))


@contextlib.contextmanager
def _quiet_ray_deprecations():
    """Ray's deprecation warnings off for a moment: a user loading a policy can do nothing about them, and they
    would put a second line next to a one-line error."""
    logger = logging.getLogger("ray._common.deprecation")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def load_policy(path: str | Path):
    """The RLModule saved in the policy folder at `path` (see `find_policy`), weights loaded, in eval mode."""
    folder = find_policy(path)
    meta = read_meta(folder)
    kind, model_config = meta.get("kind"), meta.get("model_config")
    if kind not in SAVED_MODULE_KINDS or not isinstance(model_config, dict) or "obs" not in model_config:
        raise PolicyFileError(f"'{folder / POLICY_JSON}' lacks kind ({' or '.join(SAVED_MODULE_KINDS)}) "
                              "or model_config.obs")
    obs = model_config["obs"]
    try:
        if obs_dim(obs) != meta.get("obs_dim"):
            raise PolicyFileError(
                f"'{folder}': encoder '{obs}' now gives {obs_dim(obs)} features, the policy was trained on "
                f"{meta.get('obs_dim')}"
            )
        with _quiet_ray_deprecations():  # RLlib's own catalog code uses a constructor it deprecates
            module = module_spec(kind, observation_space(obs), ACTION_SPACE, model_config).build()
    except PolicyFileError:
        raise
    except Exception as err:  # noqa: BLE001  an encoder or network this version does not know
        raise PolicyFileError(f"'{folder}': cannot rebuild the module: {' '.join(str(err).split())}") from None
    state = load_weights(folder)
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except Exception as err:  # noqa: BLE001  shape mismatches and anything else torch raises on a damaged weights file
        raise PolicyFileError(f"'{folder / WEIGHTS}' is damaged: {' '.join(str(err).split())[:200]}") from None
    if missing:
        raise PolicyFileError(f"'{folder / WEIGHTS}' lacks {len(missing)} tensors of the module, e.g. {missing[0]}")
    module.eval()
    return module
