"""Model and synthetic-data construction for ``train.py``.

Every model is built from a configuration with random weights; nothing is downloaded. Each builder returns a
:class:`Workload`: the module, the implementation key reported in the ``start`` event, a function that makes a
synthetic global batch, a loss function and an optimizer factory.

Implementation keys (also listed in ``catalog.json``):

- ``torchvision``: resnet50, vgg16, vgg19, resnet18, shufflenet_v2_x1_0 from ``torchvision.models``.
- ``transformers``: bert (``BertForMaskedLM``) and gpt2 (``GPT2LMHeadModel``) from Hugging Face transformers.
- ``torch-encoder`` / ``torch-decoder``: pure-PyTorch stand-ins of the same shape, used when transformers is not
  importable. Their step times differ from the transformers models, so results are labelled with the key.
- ``atari``: dqn and a2c, small deep-RL learners with the Nature-DQN convolutional body on synthetic Atari frames
  (4 stacked 84x84 grey frames, 4 actions), as in the SJF-BSBF authors' workload set.

This module imports torch at import time; ``train.py --dry-run`` never imports it.
"""

import dataclasses
import os
import sys
from typing import Callable, Dict, Iterable, Optional

import torch
import torch.nn.functional as F
from torch import nn

IMAGE_CLASSES = 1000

# bert-base and GPT-2 small; the pure-PyTorch stand-ins use the same numbers.
BERT_BASE = dict(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_positions=512)
GPT2_SMALL = dict(vocab=50257, hidden=768, layers=12, heads=12, ffn=3072, max_positions=1024)
# --tiny: small enough that a CPU step takes milliseconds, but the same code path as the full model.
TINY_NLP = dict(vocab=1000, hidden=128, layers=2, heads=2, ffn=512)

# Initialisation scale of embeddings and the tied output projection, as in BERT and GPT-2. PyTorch's default
# N(0, 1) embedding init gives logits in the hundreds, which overflow in bf16.
EMBED_INIT_STD = 0.02

Batch = Dict[str, torch.Tensor]


@dataclasses.dataclass
class Workload:
    """A built model plus everything the training loop needs to drive it."""

    model: nn.Module
    impl: str
    make_batch: Callable[[int, torch.device], Batch]
    loss: Callable[[nn.Module, Batch], torch.Tensor]
    make_optimizer: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
    # The sample dimension of each batch tensor that differs from 0; None: shared by every micro-batch.
    batch_dims: Dict[str, Optional[int]] = dataclasses.field(default_factory=dict)
    # Work done once per optimizer step before its micro-steps (deep RL: acting in the environment).
    act: Optional[Callable[[nn.Module, Batch], None]] = None

    def micro_batch(self, batch: Batch, j: int, b: int) -> Batch:
        """The j-th micro-batch of b samples: views of the global batch, never copies."""
        out = {}
        for name, t in batch.items():
            dim = self.batch_dims.get(name, 0)
            out[name] = t if dim is None else t.narrow(dim, j * b, b)
        return out


class UnavailableImplementation(Exception):
    """The requested implementation cannot be built on this host (e.g. transformers is not installed)."""


def nlp_shape(model_key: str, tiny: bool) -> Dict[str, int]:
    """Layer sizes of an NLP model key, full or ``--tiny``."""
    full = BERT_BASE if model_key == "bert" else GPT2_SMALL
    if tiny:
        return dict(full, **TINY_NLP)
    return dict(full)


def import_transformers():
    """Return the transformers module, or raise UnavailableImplementation with the reason.

    The hub is switched off before the import so that nothing can try the network.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers  # noqa: PLC0415 - optional dependency, imported on demand
    except Exception as exc:  # noqa: BLE001 - any failure (missing, or incompatible with this torch) means "absent"
        raise UnavailableImplementation(f"transformers is not importable: {exc!r}") from exc
    return transformers


def resolve_impl(model_key: str, requested: str, impls: Iterable[str]) -> str:
    """Pick the implementation key for ``model_key``.

    ``requested`` is ``auto`` or one of ``impls`` (from the catalog, preferred first). ``auto`` takes the first
    implementation that can be built here: for bert and gpt2 that is transformers when importable, else the
    pure-PyTorch stand-in.
    """
    impls = list(impls)
    if requested != "auto":
        if requested not in impls:
            raise UnavailableImplementation(f"{model_key} has no implementation {requested!r} (have {impls})")
        if requested == "transformers":
            import_transformers()
        return requested
    for impl in impls:
        if impl != "transformers":
            return impl
        try:
            import_transformers()
            return impl
        except UnavailableImplementation as exc:
            print(f"sharebench: {exc}; falling back", file=sys.stderr)
    raise UnavailableImplementation(f"no implementation of {model_key} can be built here")


# ---------------------------------------------------------------------------------------------------------------
# CNNs (torchvision)


def torchvision_model(name: str) -> nn.Module:
    """Build ``torchvision.models.<name>`` with random weights.

    ``weights=None`` is the API since torchvision 0.13; older releases only know ``pretrained=False``.
    """
    import torchvision  # noqa: PLC0415 - only CNN workloads need it

    ctor = getattr(torchvision.models, name)
    try:
        return ctor(weights=None, num_classes=IMAGE_CLASSES)
    except TypeError:
        return ctor(pretrained=False, num_classes=IMAGE_CLASSES)


def shrink_vgg_head(model: nn.Module) -> None:
    """--tiny only: pool VGG's features to 1x1 instead of 7x7, so the first classifier layer has 512 inputs.

    On 32x32 images the 7x7 pool just repeats one pixel, yet its 25088x4096 layer holds three quarters of VGG's
    138 M parameters and dominates a CPU step. The layers and the training code path stay the same.
    """
    first = model.classifier[0]
    model.avgpool = nn.AdaptiveAvgPool2d(1)
    model.classifier[0] = nn.Linear(first.in_features // 49, first.out_features)


def build_cnn(model_key: str, image_size: int, tiny: bool) -> Workload:
    """ResNet/VGG on synthetic ImageNet-shaped images: cross-entropy, SGD with momentum 0.9."""
    model = torchvision_model(model_key)
    if tiny and model_key.startswith("vgg"):
        shrink_vgg_head(model)
    criterion = nn.CrossEntropyLoss()

    def make_batch(n: int, device: torch.device) -> Batch:
        return {
            "images": torch.randn(n, 3, image_size, image_size, device=device),
            "labels": torch.randint(0, IMAGE_CLASSES, (n,), device=device),
        }

    def loss(m: nn.Module, batch: Batch) -> torch.Tensor:
        return criterion(m(batch["images"]), batch["labels"])

    return Workload(
        model=model,
        impl="torchvision",
        make_batch=make_batch,
        loss=loss,
        make_optimizer=lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    )


# ---------------------------------------------------------------------------------------------------------------
# NLP: pure-PyTorch stand-ins


def _init_embedding(embedding: nn.Embedding) -> None:
    nn.init.normal_(embedding.weight, mean=0.0, std=EMBED_INIT_STD)


class TorchBertMLM(nn.Module):
    """BERT encoder with a masked-LM head, in plain PyTorch.

    Token, position and segment embeddings + LayerNorm + dropout; post-norm encoder layers (as in BERT); an MLM
    head (dense, GELU, LayerNorm, decoder tied to the token embedding). With the bert-base sizes this has about
    110 M parameters, like ``BertForMaskedLM(BertConfig())``.
    """

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, ffn: int, max_positions: int,
                 dropout: float = 0.1, type_vocab: int = 2, eps: float = 1e-12):
        super().__init__()
        self.vocab = vocab
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.segments = nn.Embedding(type_vocab, hidden)
        for emb in (self.tokens, self.positions, self.segments):
            _init_embedding(emb)
        self.embed_norm = nn.LayerNorm(hidden, eps=eps)
        self.embed_dropout = nn.Dropout(dropout)
        # A ModuleList rather than nn.TransformerEncoder: the latter's nested-tensor fast path differs between
        # torch releases and only matters for inference.
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu", batch_first=True,
                                       layer_norm_eps=eps)
            for _ in range(layers)
        )
        self.head_dense = nn.Linear(hidden, hidden)
        self.head_norm = nn.LayerNorm(hidden, eps=eps)
        self.decoder = nn.Linear(hidden, vocab)
        self.decoder.weight = self.tokens.weight  # tied, as in BERT
        self.register_buffer("position_ids", torch.arange(max_positions), persistent=False)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Return the MLM cross-entropy over all positions."""
        length = input_ids.shape[1]
        # Every sequence is segment 0, so the segment embedding is one broadcast row.
        h = self.tokens(input_ids) + self.positions(self.position_ids[:length]) + self.segments.weight[0]
        h = self.embed_dropout(self.embed_norm(h))
        for layer in self.layers:
            h = layer(h)
        h = self.head_norm(F.gelu(self.head_dense(h)))
        logits = self.decoder(h)
        return F.cross_entropy(logits.reshape(-1, self.vocab), labels.reshape(-1))


class TorchGPT2LM(nn.Module):
    """GPT-2-shaped causal decoder in plain PyTorch.

    Token and position embeddings + dropout; pre-norm transformer blocks with a causal mask (as in GPT-2); a
    final LayerNorm; the LM head tied to the token embedding without bias. With the GPT-2 small sizes this has
    about 124 M parameters, like ``GPT2LMHeadModel(GPT2Config())``.
    """

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, ffn: int, max_positions: int,
                 dropout: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.vocab = vocab
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        for emb in (self.tokens, self.positions):
            _init_embedding(emb)
        self.embed_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu", batch_first=True,
                                       layer_norm_eps=eps, norm_first=True)
            for _ in range(layers)
        )
        self.final_norm = nn.LayerNorm(hidden, eps=eps)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.tokens.weight  # tied, as in GPT-2
        self.register_buffer("position_ids", torch.arange(max_positions), persistent=False)
        # Boolean mask (True = not allowed to attend): accepted by every torch release and under autocast.
        causal = torch.ones(max_positions, max_positions, dtype=torch.bool).triu(diagonal=1)
        self.register_buffer("causal_mask", causal, persistent=False)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Return the next-token cross-entropy."""
        length = input_ids.shape[1]
        h = self.tokens(input_ids) + self.positions(self.position_ids[:length])
        h = self.embed_dropout(h)
        mask = self.causal_mask[:length, :length]
        for layer in self.layers:
            h = layer(h, src_mask=mask)
        logits = self.lm_head(self.final_norm(h))
        return F.cross_entropy(logits[:, :-1].reshape(-1, self.vocab), labels[:, 1:].reshape(-1))


# ---------------------------------------------------------------------------------------------------------------
# NLP: transformers


def transformers_model(model_key: str, shape: Dict[str, int]) -> nn.Module:
    """``BertForMaskedLM`` or ``GPT2LMHeadModel`` from a config with random weights."""
    transformers = import_transformers()
    if model_key == "bert":
        config = transformers.BertConfig(
            vocab_size=shape["vocab"], hidden_size=shape["hidden"], num_hidden_layers=shape["layers"],
            num_attention_heads=shape["heads"], intermediate_size=shape["ffn"],
            max_position_embeddings=shape["max_positions"],
        )
        return transformers.BertForMaskedLM(config)
    # use_cache=False: training never reads the key/value cache, so building it would only add work.
    config = transformers.GPT2Config(
        vocab_size=shape["vocab"], n_embd=shape["hidden"], n_layer=shape["layers"], n_head=shape["heads"],
        n_inner=shape["ffn"], n_positions=shape["max_positions"], use_cache=False,
    )
    return transformers.GPT2LMHeadModel(config)


def build_nlp(model_key: str, impl: str, seq_len: int, tiny: bool) -> Workload:
    """BERT (masked LM) or GPT-2 (causal LM) on random token ids; AdamW."""
    shape = nlp_shape(model_key, tiny)
    if seq_len > shape["max_positions"]:
        raise ValueError(f"--seq-len {seq_len} exceeds {model_key}'s {shape['max_positions']} positions")
    vocab = shape["vocab"]

    if impl == "transformers":
        model = transformers_model(model_key, shape)

        def loss(m: nn.Module, batch: Batch) -> torch.Tensor:
            ids = batch["input_ids"]
            return m(input_ids=ids, attention_mask=batch["attention_mask"], labels=ids).loss
    else:
        cls = TorchBertMLM if model_key == "bert" else TorchGPT2LM
        model = cls(**shape)

        def loss(m: nn.Module, batch: Batch) -> torch.Tensor:
            ids = batch["input_ids"]
            return m(ids, ids)

    def make_batch(n: int, device: torch.device) -> Batch:
        return {
            "input_ids": torch.randint(0, vocab, (n, seq_len), device=device),
            "attention_mask": torch.ones(n, seq_len, dtype=torch.long, device=device),
        }

    return Workload(
        model=model,
        impl=impl,
        make_batch=make_batch,
        loss=loss,
        make_optimizer=lambda params: torch.optim.AdamW(params, lr=1e-4),
    )


# ---------------------------------------------------------------------------------------------------------------
# Deep RL: DQN and A2C on synthetic Atari frames


ATARI_FRAMES = 4  # frames stacked per observation
ATARI_SIZE = 84
ATARI_ACTIONS = 4  # Breakout's action set, the game the authors' learners play
FRAME_POOL = 8  # distinct synthetic observations per environment, drawn at random as its "next" observation


class NatureCNN(nn.Module):
    """The Nature-DQN convolutional body: 8x8/4 (32), 4x4/2 (64), 3x3/1 (64) convolutions and a 512 linear layer."""

    def __init__(self, in_channels: int = ATARI_FRAMES):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1), nn.ReLU(),
        )
        self.fc = nn.Linear(7 * 7 * 64, 512)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        # Frames are bytes; scale them as the learners' image normaliser does.
        h = self.conv(frames.float() / 255.0)
        return F.relu(self.fc(h.flatten(1)))


class QNetwork(nn.Module):
    """Nature CNN + linear Q head (one value per action)."""

    def __init__(self):
        super().__init__()
        self.body = NatureCNN()
        self.head = nn.Linear(512, ATARI_ACTIONS)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(frames))


class ActorCritic(nn.Module):
    """Nature CNN + categorical policy head and value head."""

    def __init__(self):
        super().__init__()
        self.body = NatureCNN()
        self.policy = nn.Linear(512, ATARI_ACTIONS)
        self.value = nn.Linear(512, 1)

    def forward(self, frames: torch.Tensor):
        h = self.body(frames)
        return self.policy(h), self.value(h).squeeze(-1)


def synthetic_frames(n: int, device: torch.device) -> torch.Tensor:
    """n observations of random grey frames (uint8), as the emulator would deliver them."""
    return torch.randint(0, 256, (n, ATARI_FRAMES, ATARI_SIZE, ATARI_SIZE), dtype=torch.uint8, device=device)


class QLearner(nn.Module):
    """The online Q network (trained; what forward runs) and its target network (frozen)."""

    def __init__(self):
        super().__init__()
        self.online = QNetwork()
        self.target = QNetwork()
        self.target.load_state_dict(self.online.state_dict())
        self.target.requires_grad_(False)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.online(frames)


def build_dqn(play_steps: int) -> Workload:
    """DQN: per optimizer step, ``play_steps`` greedy actions on single observations (no gradient), then one
    Q-learning update on a replay minibatch against the target network.

    The synthetic environment needs no action on the host, so acting never reads the Q values back: the
    learner's GPU work is the same, without the per-action device synchronisation an emulator would add.
    """
    discount = 0.99

    def make_batch(n: int, device: torch.device) -> Batch:
        return {
            "states": synthetic_frames(n, device),
            "next_states": synthetic_frames(n, device),
            "actions": torch.randint(0, ATARI_ACTIONS, (n,), device=device),
            "rewards": torch.randint(-1, 2, (n,), device=device).float(),
            "masks": (torch.rand(n, device=device) > 0.01).float(),
            "observation": synthetic_frames(1, device),
        }

    def learner(m: nn.Module) -> QLearner:
        return m.module if isinstance(m, nn.parallel.DistributedDataParallel) else m

    def act(m: nn.Module, batch: Batch) -> None:
        with torch.no_grad():
            obs = batch["observation"]
            for _ in range(play_steps):
                obs = torch.roll(obs, shifts=1, dims=1)  # the newest frame enters the stack
                learner(m).online(obs).argmax(dim=1)

    def loss(m: nn.Module, batch: Batch) -> torch.Tensor:
        with torch.no_grad():
            q_next = learner(m).target(batch["next_states"]).max(dim=1).values
            q_target = batch["rewards"] + discount * batch["masks"] * q_next
        q = m(batch["states"]).gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
        return (q_target - q).pow(2).mul(0.5).mean()

    def optimizer(params):
        trainable = [p for p in params if p.requires_grad]
        return torch.optim.RMSprop(trainable, lr=2.5e-4, alpha=0.95, eps=0.01, centered=True)

    return Workload(model=QLearner(), impl="atari", make_batch=make_batch, loss=loss, make_optimizer=optimizer,
                    batch_dims={"observation": None}, act=act)


class A2CLearner(nn.Module):
    """Actor-critic with its rollout in one forward pass, so data parallelism sees one forward per backward.

    forward runs ``rollout_length`` steps of the environments in the batch (each observation through the network,
    an action sampled from the policy, the synthetic environment's next observation), bootstraps the value of the
    last observation, computes generalised advantages (tau 1.0) and returns the A2C loss.
    """

    discount, entropy_weight, value_weight = 0.99, 0.01, 1.0

    def __init__(self, rollout_length: int):
        super().__init__()
        self.rollout_length = rollout_length
        self.net = ActorCritic()

    def forward(self, states, pool, rewards, masks) -> torch.Tensor:
        n = states.shape[0]
        rows = torch.arange(n, device=states.device)
        log_probs, values, entropies = [], [], []
        for _ in range(self.rollout_length):
            logits, value = self.net(states)
            dist = torch.distributions.Categorical(logits=logits)
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            entropies.append(dist.entropy())
            values.append(value)
            # The synthetic environment answers with one of its pooled frames, chosen by the action.
            pick = (action + torch.randint(0, FRAME_POOL, (n,), device=states.device)) % FRAME_POOL
            states = pool[rows, pick]
        with torch.no_grad():
            returns = self.net(states)[1]
        next_value, advantage = returns, torch.zeros_like(returns)
        policy_loss = value_loss = 0.0
        for t in reversed(range(self.rollout_length)):
            reward, mask = rewards[t], masks[t]
            returns = reward + self.discount * mask * returns
            td = reward + self.discount * mask * next_value - values[t].detach()
            advantage = advantage * self.discount * mask + td
            next_value = values[t].detach()
            policy_loss = policy_loss - (log_probs[t] * advantage).mean()
            value_loss = value_loss + 0.5 * (returns - values[t]).pow(2).mean()
        entropy = torch.stack(entropies).mean()
        return (policy_loss + self.value_weight * value_loss) / self.rollout_length - self.entropy_weight * entropy


def build_a2c(rollout_length: int) -> Workload:
    """A2C: per optimizer step, a rollout of ``rollout_length`` steps of the batch's environments (the batch is
    the number of environments) and one update of the policy, value and entropy losses."""

    def make_batch(n: int, device: torch.device) -> Batch:
        return {
            "states": synthetic_frames(n, device),
            "pool": synthetic_frames(n * FRAME_POOL, device).view(n, FRAME_POOL, ATARI_FRAMES, ATARI_SIZE, ATARI_SIZE),
            "rewards": torch.randint(-1, 2, (rollout_length, n), device=device).float(),
            "masks": (torch.rand(rollout_length, n, device=device) > 0.01).float(),
        }

    def loss(m: nn.Module, batch: Batch) -> torch.Tensor:
        return m(batch["states"], batch["pool"], batch["rewards"], batch["masks"])

    def optimizer(params):
        return torch.optim.RMSprop(params, lr=1e-4, alpha=0.99, eps=1e-5)

    return Workload(model=A2CLearner(rollout_length), impl="atari", make_batch=make_batch, loss=loss,
                    make_optimizer=optimizer, batch_dims={"rewards": 1, "masks": 1})


def build(model_key: str, impl: str, *, image_size: Optional[int], seq_len: Optional[int],
          tiny: bool, play_steps: int = 0, rollout_length: int = 0) -> Workload:
    """Build the workload for a catalog model key with the given (already resolved) implementation."""
    if impl == "torchvision":
        return build_cnn(model_key, image_size, tiny)
    if model_key in ("bert", "gpt2"):
        return build_nlp(model_key, impl, seq_len, tiny)
    if model_key == "dqn":
        return build_dqn(play_steps)
    if model_key == "a2c":
        return build_a2c(rollout_length)
    raise UnavailableImplementation(f"no builder for {model_key}/{impl}")
