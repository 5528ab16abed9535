"""The dense tracks' shape: an experiment's methods expanded into the variants the workflow trains
and evaluates, and the settings each variant's training reads (light: runs while Snakemake parses)."""

from __future__ import annotations

from dataclasses import dataclass

from trimbench.face import reference_dataset

TRAINED_METHODS = ("full", "separate", "matryoshka", "2dmse", "starbucks-2dmse")
#: the published names of our methods, as the 2DMSE-Reproduce seed's tables and
#: reference/2dmse_sts.csv name them, and Starbucks' (reference/2dmse_retrieval.csv) its "BERT-2DMSE":
#: a reference row joins the one method whose label is its ``method``
SEED_METHOD_LABELS = {"full": "BERT", "separate": "BERT-S", "matryoshka": "MSE", "2dmse": "2DMSE",
                      "starbucks-2dmse": "BERT-2DMSE"}


def seed_label(method: str) -> str:
    """A method's name as the 2DMSE references write it (:data:`SEED_METHOD_LABELS`), else its own."""
    return SEED_METHOD_LABELS.get(method, method)


#: the Home Depot write-up's names of our methods (seed 001; reference/homedepot.csv)
HOMEDEPOT_METHOD_LABELS = {"pretrained": "pretrained", "full": "fine-tuned", "matryoshka": "fine-tuned-matryoshka"}
TRAINING_KINDS = ("pairs", "triplets")
#: tracks scored by dense retrieval (trimbench/dense/search.py) on datasets of kind retrieval
RETRIEVAL_TRACKS = ("2dmse-retrieval", "homedepot")
#: tracks trained on (query, positive, mined negatives) groups (trimbench/dense/retrieval_loss.py)
GROUP_TRAINED_TRACKS = ("2dmse-retrieval",)
#: tracks trained on pairs or triplets (trimbench/dense/losses.py): rule train_model
PAIR_TRAINED_TRACKS = ("2dmse-sts", "homedepot")
#: tracks scored on the average over STS datasets (``evaluation.average_name``), compared there
STS_TRACKS = ("2dmse-sts",)
#: tracks whose experiments are also shown side by side (the seed's v1 and v2 halves)
SIDE_BY_SIDE_TRACKS = ("2dmse-sts",)
#: the dense package's tracks: experiments that are a grid of variants of one model
GRID_TRACKS = ("2dmse-sts", "2dmse-retrieval", "homedepot")


# What only the dense rule files (rules/dense.smk, rules/functions/dense.smk) ask of a track: the
# dense package's own answers, not parts of every track's face.
def grid_variants(track: str) -> bool:
    """Whether its experiments are a grid of variants of one model (SPLADE's variants of several
    models and ELECTRA's fine-tunings are of their own shape)."""
    return track in GRID_TRACKS


def pair_trained_tracks() -> tuple[str, ...]:
    """The tracks rule train_model trains (on pairs or triplets)."""
    return PAIR_TRAINED_TRACKS


def side_by_side(track: str) -> bool:
    """Whether its experiments are also shown side by side (the 2DMSE seed's v1 and v2 halves)."""
    return track in SIDE_BY_SIDE_TRACKS


def compared_dataset(exp: dict) -> str:
    """The dataset a dense experiment is set beside the published work on (its headline, its first
    grid view, its claims, its ablations): the STS average of an STS experiment; else the reference's
    ``dataset``, by default the first evaluated one."""
    if exp["track"] in STS_TRACKS:
        return exp["evaluation"]["average_name"]
    return reference_dataset(exp)


#: settings that only one objective reads: left out of the other's params, so that adding an
#: objective's settings (with defaults) does not re-trigger the other's trained models
OBJECTIVE_ONLY_SETTINGS = {
    "mnrl": ("scale", "n_dims_per_step", "kl_temperature", "kl_div_weight"),
    "angle": ("angle", "ese"),
}


def variant_train_settings(exp: dict, method: str) -> dict:
    """The ``train`` settings one variant's training uses: the other objective's dropped, and
    ``precision_by_method`` resolved into ``precision`` (so a method's params change only when its
    own precision does)."""
    train = exp["train"]
    unused = {key for objective, keys in OBJECTIVE_ONLY_SETTINGS.items() if objective != exp["objective"]
              for key in keys} | {"precision_by_method"}
    settings = {key: value for key, value in train.items() if key not in unused}
    if "precision" in settings:
        settings["precision"] = train.get("precision_by_method", {}).get(method, settings["precision"])
    return settings



#: retrieval settings that only one method reads: left out of the other methods' params likewise
METHOD_ONLY_RETRIEVAL_SETTINGS = {
    "starbucks-2dmse": ("starbucks_layers", "starbucks_dims", "starbucks_kl_weight"),
}


#: ``retrieval`` settings of the search and the scoring only (the run's depth, the corpus encoding's
#: chunks, the averaged datasets): no training reads them, so changing one re-trains nothing
SEARCH_ONLY_RETRIEVAL_SETTINGS = ("top_k", "encode_chunk", "average_over", "average_name")


def variant_retrieval_settings(exp: dict, method: str) -> dict:
    """The ``retrieval`` settings one variant's training uses: other methods' own settings and the
    :data:`SEARCH_ONLY_RETRIEVAL_SETTINGS` dropped."""
    unused = {key for other, keys in METHOD_ONLY_RETRIEVAL_SETTINGS.items() if other != method for key in keys}
    unused |= set(SEARCH_ONLY_RETRIEVAL_SETTINGS)
    return {key: value for key, value in exp["retrieval"].items() if key not in unused}

def passage_layer(exp: dict, variant) -> int | None:
    """The layer a variant's passages are encoded at besides its grid layers: the last, for a
    fixed-doc model (``retrieval.passage_to_last_layer``; BERT-S models are cut: their own); None."""
    fixed = exp["retrieval"]["passage_to_last_layer"] and variant.method != "separate"
    return exp["_depth"] if fixed else None


def encoded_layers(exp: dict, variant) -> list[int]:
    """The layers a retrieval variant's corpus is encoded at: its grid layers and its passage layer."""
    extra = passage_layer(exp, variant)
    return sorted(set(variant.eval_layers) | ({extra} if extra else set()))


@dataclass(frozen=True)
class Variant:
    """One model whose embeddings get evaluated: a method, possibly cut to ``cut_layers`` layers."""

    name: str
    method: str
    cut_layers: int | None
    eval_layers: tuple[int, ...]
    #: the variant whose trained model this one reuses (BERT-S at full depth is the full model)
    model_variant: str
    #: retrieval BERT-S only: the one dim the model is trained and scored at
    cut_dim: int | None = None

    @property
    def trained(self) -> bool:
        return self.method != "pretrained"


def variants(experiment: dict, depth: int) -> list[Variant]:
    """Expand an experiment's methods into the variants the workflow trains and evaluates."""
    layers = tuple(sorted(experiment["grid"]["layers"]))
    methods = experiment["methods"]
    out = []
    for method in methods:
        if method == "separate" and experiment["track"] in GROUP_TRAINED_TRACKS:
            out += _retrieval_separate_variants(experiment, depth)
        elif method == "separate":
            for k in layers:
                name = f"separate-L{k}"
                # The seed's BERT-S at full depth is the full model: reuse it rather than train twice.
                reuse_full = k == depth and "full" in methods
                out.append(Variant(name, method, k, (k,), "full" if reuse_full else name))
        else:
            out.append(Variant(method, method, None, layers, method))
    return out


def _retrieval_separate_variants(experiment: dict, depth: int) -> list[Variant]:
    """Retrieval BERT-S: one model per (layer, dim) cell, cut to the layer, trained at the dim."""
    grid = experiment["grid"]
    cells = experiment["retrieval"]["separate_cells"] or [[k, d] for k in grid["layers"] for d in grid["dims"]]
    out = []
    for k, d in sorted(map(tuple, cells)):
        name = f"separate-L{k}-d{d}"
        reuse_full = k == depth and d == experiment.get("_width") and "full" in experiment["methods"]
        out.append(Variant(name, "separate", k, (k,), "full" if reuse_full else name, d))
    return out

