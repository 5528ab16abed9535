"""Models: where a registry entry lives, its depth and width, whether its weights look loadable,
loading, and cutting layers.

The shape functions read ``config.json`` only (no torch), so configs are validated quickly while
Snakemake parses the workflow; everything that needs torch imports it inside the function.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from trimbench.jobs.artifacts import reading
from trimbench.jobs.packaged import package_folder

log = logging.getLogger("trimbench")


@dataclass(frozen=True)
class ModelShape:
    layers: int
    dim: int


def _transformer_folder(folder: Path) -> Path:
    """The folder holding the transformers config: the root, or the one modules.json points at."""
    modules = folder / "modules.json"
    if modules.is_file() and not (folder / "config.json").is_file():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Transformer"):
                return folder / module.get("path", "")
    return folder


def shape_from_config(config: dict) -> ModelShape:
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    dim = config.get("hidden_size", config.get("dim"))
    if layers is None or dim is None:
        raise ValueError("its config.json gives no num_hidden_layers/hidden_size")
    return ModelShape(int(layers), int(dim))


def read_shape(folder: Path) -> ModelShape:
    config_file = _transformer_folder(folder) / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"no config.json in model folder '{folder}'")
    try:
        return shape_from_config(json.loads(config_file.read_text()))
    except json.JSONDecodeError as error:
        raise ValueError(f"'{config_file}' is not valid JSON: {error}") from None


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, located as huggingface_hub does (HF_HUB_CACHE, HF_HOME, XDG)."""
    if os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ.get("HF_HUB_CACHE") or os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("HF_HOME") or xdg / "huggingface").expanduser() / "hub"


def _cached_hub_config(entry: dict) -> Path | None:
    """The cached ``config.json`` of a hub model, read from the cache's layout
    (``models--org--name/refs/<revision>`` -> ``snapshots/<commit>/config.json``): importing
    huggingface_hub for it would cost every snakemake call about half a CPU-second."""
    repo = hub_cache_dir() / ("models--" + entry["id"].replace("/", "--"))
    revision = entry.get("revision") or "main"
    ref = repo / "refs" / revision
    commit = ref.read_text().strip() if ref.is_file() else revision  # a revision may be a commit hash
    config = repo / "snapshots" / commit / "config.json"
    return config if config.is_file() else None


def local_folder(entry: dict, workdir: Path) -> Path | None:
    """The on-disk folder of a package or local model; None for models a rule fetches or builds."""
    if entry["source"] == "package":
        return package_folder(entry["package"], entry.get("subfolder", ""))
    if entry["source"] == "local":
        path = Path(entry["path"]).expanduser()
        return path if path.is_absolute() else workdir / path
    return None


def declared_shape(entry: dict, workdir: Path) -> ModelShape:
    """Depth and width of a registry model, read from its config where it can be read.

    Hub models not in the local cache fall back to the ``layers``/``dim`` the registry declares,
    so a dry run works offline; where both are known they must agree.
    """
    declared = (entry.get("layers"), entry.get("dim"))
    folder = local_folder(entry, workdir)
    shape = None
    if folder is not None:
        shape = read_shape(folder)
    elif entry["source"] == "hub":
        cached = _cached_hub_config(entry)
        if cached is not None:
            shape = shape_from_config(json.loads(cached.read_text()))
    if shape is None:
        if None in declared:
            raise ValueError(
                f"cannot read the depth and width of hub model '{entry.get('id')}' offline; "
                "declare 'layers' and 'dim' in its registry entry"
            )
        return ModelShape(*declared)
    for key, value in (("layers", shape.layers), ("dim", shape.dim)):
        if entry.get(key) is not None and entry[key] != value:
            raise ValueError(f"declares {key}={entry[key]} but the model's config says {value}")
    return shape


#: the weight files transformers loads (a sharded checkpoint's index names its shards)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")


def weights_problem(folder: Path) -> str | None:
    """Why a local model folder cannot be loaded, found without loading it: no weight file anywhere
    in it (a sentence-transformers folder may keep them in a module's subfolder), or a safetensors
    file shorter than its own header says (a copy cut short). None when it looks loadable."""
    found = [path for path in folder.rglob("*") if path.name in WEIGHT_FILES]
    if not found:
        return f"holds no weights (none of {', '.join(WEIGHT_FILES)})"
    for path in found:
        if path.suffix == ".safetensors":
            expected = _safetensors_size(path)
            if expected is None or expected != path.stat().st_size:
                return (f"has a damaged weight file '{path.relative_to(folder)}' ({path.stat().st_size} bytes; "
                        f"its header {'cannot be read' if expected is None else f'describes {expected}'})")
    return None


def _safetensors_size(path: Path) -> int | None:
    """The file size a safetensors header describes: 8 bytes of length, the JSON header, the tensors."""
    try:
        with path.open("rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if not 0 < length <= 100_000_000:
                return None
            header = json.loads(handle.read(length))
        ends = [tensor["data_offsets"][1] for key, tensor in header.items() if key != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return 8 + length + max(ends, default=0)


#: the absolute positions of a tiny random model (:func:`build_tiny_model`)
TINY_MAX_POSITIONS = 512
#: a tiny DeBERTa's config beyond depth and width: DeBERTa-v3's layout (microsoft/deberta-v3-base's
#: config.json; :func:`build_tiny_model`, and the cost model of a tiny DeBERTa: trimbench.cost)
TINY_DEBERTA_LAYOUT = dict(relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
                           share_att_key=True, pos_att_type="p2c|c2p", layer_norm_eps=1e-7,
                           max_relative_positions=-1, position_biased_input=False, type_vocab_size=0)
#: model types whose position ids count from the padding index + 1 (transformers'
#: ``create_position_ids_from_input_ids``, modeling_roberta.py: ``cumsum(mask) * mask + padding_idx``),
#: so a text takes at most ``max_position_embeddings - pad_token_id - 1`` tokens (RoBERTa's 514 -> 512)
PADDING_OFFSET_TYPES = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "mpnet", "longformer",
                        "data2vec-text", "ibert")


def config_facts(entry: dict, workdir: Path) -> tuple[dict, str] | None:
    """A model's ``config.json`` (and where it was read) where it can be read without loading the
    model: a local or packaged folder's, a hub model's in the local cache, what a tiny model is
    built with; None otherwise (a hub model's contract may know: trimbench.data.contracts)."""
    if entry["source"] == "tiny":
        if entry.get("architecture") == "deberta":  # relative positions only (build_tiny_model)
            return {"position_biased_input": False}, "the tiny DeBERTa it builds"
        return {"max_position_embeddings": TINY_MAX_POSITIONS}, "the tiny model it builds"
    try:
        folder = local_folder(entry, workdir)
        path = _transformer_folder(folder) / "config.json" if folder is not None else _cached_hub_config(entry)
        return (json.loads(path.read_text()), f"'{path}'") if path is not None and path.is_file() else None
    except (OSError, ValueError, ImportError, TypeError):
        return None  # an unreadable folder is named by the shape checks


def position_limit(facts: dict) -> tuple[int, str] | None:
    """The most tokens a text can have for a model with these ``config.json`` facts, and why;
    None where they set no limit (relative positions only) or do not say."""
    positions = facts.get("max_position_embeddings")
    # DeBERTa adds absolute positions only with position_biased_input (v3: false, relative positions only)
    relative_only = str(facts.get("model_type", "")).startswith("deberta") and not facts.get("position_biased_input")
    if positions is None or facts.get("position_biased_input") is False or relative_only:
        return None
    if facts.get("model_type") in PADDING_OFFSET_TYPES:
        offset = int(facts.get("pad_token_id", 1)) + 1
        return positions - offset, (f"max_position_embeddings {positions} less {offset}: {facts['model_type']} "
                                    "counts positions from its padding index + 1")
    return positions, f"max_position_embeddings {positions}"


# --- everything below needs torch -------------------------------------------------------------


_BLOCK_PATHS = ("encoder.layer", "transformer.layer", "encoder.layers", "layers")


def _blocks_location(hf_model):
    """(parent module, attribute) of the ModuleList of transformer blocks."""
    import torch

    for path in _BLOCK_PATHS:
        *parents, attr = path.split(".")
        parent = hf_model
        for name in parents:
            parent = getattr(parent, name, None)
        if parent is not None and isinstance(getattr(parent, attr, None), torch.nn.ModuleList):
            return parent, attr
    raise TypeError(f"cannot find the transformer blocks of {type(hf_model).__name__}")


def encoder_layers(hf_model):
    """The ModuleList of transformer blocks of a BERT-like, DistilBERT-like or ELECTRA model."""
    parent, attr = _blocks_location(hf_model)
    return getattr(parent, attr)


def depth(st_model) -> int:
    return len(encoder_layers(st_model[0].auto_model))


def cut_layers(st_model, k: int):
    """Physically keep only the first ``k`` transformer blocks, so the cut model is also faster."""
    import torch

    hf_model = st_model[0].auto_model
    parent, attr = _blocks_location(hf_model)
    blocks = getattr(parent, attr)
    if not 0 <= k <= len(blocks):
        raise ValueError(f"cannot cut a {len(blocks)}-layer model to {k} layers")
    setattr(parent, attr, torch.nn.ModuleList(list(blocks)[:k]))
    for key in ("num_hidden_layers", "n_layers"):
        if hasattr(hf_model.config, key):
            setattr(hf_model.config, key, k)
    _run_without_blocks(hf_model)
    return st_model


def _embedding_output(hidden_states, attention_mask=None, output_hidden_states=True, output_attentions=False,
                      return_dict=True, **kwargs):
    from transformers.modeling_outputs import BaseModelOutput

    return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=(hidden_states,),
                           attentions=() if output_attentions else None)


def _run_without_blocks(hf_model) -> None:
    """A DeBERTa encoder left with no blocks returns the embedding output, as hidden state 0 of the
    full model: transformers' ``DebertaV2Encoder.forward`` reads the output of its last block,
    which it never sets without one (``DebertaV2Model`` itself reads only the hidden states).
    BERT-like encoders return their input already. Set on the instance (the saved weights and
    config are unchanged): :func:`load_sentence_model` sets it again on a saved 0-block model."""
    encoder = getattr(hf_model, "encoder", None)
    if type(encoder).__name__ in ("DebertaV2Encoder", "DebertaEncoder") and len(encoder.layer) == 0:
        encoder.forward = _embedding_output


def load_sentence_model(path: str | Path, pooling: str | None = None, max_seq_length: int | None = None,
                        device: str | None = None):
    """Load a sentence-transformers folder, or wrap a plain transformers folder with pooling.

    ``pooling`` (mean / cls) replaces the model's own pooling when given.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    path = Path(path)
    device = device or default_device()
    if (path / "modules.json").is_file():
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
        if pooling is not None:
            for idx, module in enumerate(model):
                if isinstance(module, Pooling):
                    model._modules[str(idx)] = Pooling(module.get_embedding_dimension(), pooling_mode=pooling)
    else:
        transformer = Transformer(str(path), model_args={"local_files_only": True},
                                  tokenizer_args={"local_files_only": True})
        pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling or "mean")
        model = SentenceTransformer(modules=[transformer, pool], device=device)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    _run_without_blocks(model[0].auto_model)  # a saved DeBERTa cut at k = 0
    return model


def use_attention(st_model, implementation: str):
    """Run the transformer's attention with ``implementation`` (sdpa: torch's fused
    scaled-dot-product kernels, flash attention on a GPU; eager: the reference code)."""
    auto_model = st_model[0].auto_model
    if auto_model.config._attn_implementation != implementation:
        auto_model.set_attn_implementation(implementation)
    return st_model


def load_for_training(path: str | Path, pooling: str | None, max_seq_length: int | None, seed: int, attention: str,
                      cut: int | None):
    """A base model loaded for fine-tuning: seeded first (weights the folder lacks, e.g. BERT's unused
    pooler, are initialised at random, and a resumed run must start from the same ones), with the
    attention implementation asked for, cut to ``cut`` layers where given."""
    from transformers import set_seed

    set_seed(seed)
    with reading(path):
        model = load_sentence_model(path, pooling=pooling, max_seq_length=max_seq_length)
    use_attention(model, attention)
    if cut is not None:
        cut_layers(model, cut)
        log.info("cut to %d layers", cut)
    return model


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# Weight formats other than PyTorch's that hub repositories often carry; never needed here.
_HUB_IGNORE = ["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*",
               "rust_model*", "coreml/*"]


def fetch_hub_model(entry: dict, out_dir: Path) -> None:
    """Download a hub model into ``out_dir`` once, so jobs on nodes without internet can load it."""
    from huggingface_hub import snapshot_download

    snapshot_download(entry["id"], revision=entry.get("revision"), local_dir=str(out_dir),
                      ignore_patterns=_HUB_IGNORE)


def tiny_heads(entry: dict) -> int:
    """A tiny model's attention heads: the entry's, or 1 where they do not divide its width."""
    heads = entry.get("attention_heads", 4)
    return 1 if entry["dim"] % heads else heads


def build_tiny_model(entry: dict, vocab_folder: Path, out_dir: Path) -> None:
    """A randomly initialised encoder of the declared depth and width, offline.

    Uses the WordPiece vocabulary of ``vocab_folder`` so real text tokenises as it would for
    the real model. It carries an MLM head (the sparse track needs one) unless the entry says the
    checkpoint it stands in for has none (``mlm_head: false``, from its contract in smoke mode).
    ``deberta``: DeBERTa-v3's layout (relative attention with 256 position buckets, LayerNorm on the
    relative embeddings, no absolute positions, no token types; microsoft/deberta-v3-base's
    config.json) with a WordPiece vocabulary where the real model has SentencePiece.
    """
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertModel,
        BertTokenizerFast,
        DebertaV2Config,
        DebertaV2ForMaskedLM,
        DebertaV2Model,
        DistilBertConfig,
        DistilBertForMaskedLM,
        DistilBertModel,
        ElectraConfig,
        ElectraForMaskedLM,
        ElectraModel,
    )

    torch.manual_seed(entry.get("seed", 0))
    tokenizer = BertTokenizerFast.from_pretrained(str(_transformer_folder(vocab_folder)), local_files_only=True)
    common = dict(vocab_size=tokenizer.vocab_size, max_position_embeddings=TINY_MAX_POSITIONS)
    arch = entry.get("architecture", "bert")
    heads, dim = tiny_heads(entry), entry["dim"]
    head = entry.get("mlm_head") is not False
    if arch == "distilbert":
        config = DistilBertConfig(n_layers=entry["layers"], dim=dim, n_heads=heads,
                                  hidden_dim=entry.get("intermediate_size", 64), **common)
        model = (DistilBertForMaskedLM if head else DistilBertModel)(config)
    elif arch == "electra":
        config = ElectraConfig(num_hidden_layers=entry["layers"], hidden_size=dim, embedding_size=dim,
                               num_attention_heads=heads, intermediate_size=entry.get("intermediate_size", 64),
                               **common)
        model = (ElectraForMaskedLM if head else ElectraModel)(config)
    elif arch == "deberta":
        config = DebertaV2Config(num_hidden_layers=entry["layers"], hidden_size=dim, num_attention_heads=heads,
                                 intermediate_size=entry.get("intermediate_size", 64), **TINY_DEBERTA_LAYOUT,
                                 **common)
        model = (DebertaV2ForMaskedLM if head else DebertaV2Model)(config)
    else:
        config = BertConfig(num_hidden_layers=entry["layers"], hidden_size=dim, num_attention_heads=heads,
                            intermediate_size=entry.get("intermediate_size", 64), **common)
        model = (BertForMaskedLM if head else BertModel)(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
