# Input functions and parse-time tables of rules/splade.smk.
from trimbench.splade import checks as tb_splade

SPLADE_EXPERIMENTS = track_experiments("splade")
#: the trained variants' names (an ensemble's members)
SPLADE_TRAINED = sorted(
    {v for name in SPLADE_EXPERIMENTS for v in EXPERIMENTS[name]["variants"]}
)
SPLADE_ENSEMBLES = sorted(
    {e for name in SPLADE_EXPERIMENTS for e in EXPERIMENTS[name]["ensembles"]}
)
HARD_NEGATIVES = f"{RESULTS}/data/msmarco-hard-negatives"
#: convert_ce_scores' table of the downloaded cross-encoder scores
CE_SCORES = f"{HARD_NEGATIVES}/ce-scores.parquet"


def splade_variant(wildcards):
    """A trained variant's settings (model, method, lambda_q, lambda_d, ...)."""
    return experiment(wildcards)["variants"][wildcards.variant]


def ensemble_members(wildcards):
    """The trained variants an ensemble fuses."""
    return experiment(wildcards)["ensembles"][wildcards.variant]["variants"]


def hard_negatives_file(name, key):
    """A file of sentence-transformers/msmarco-hard-negatives: local, or fetched once."""
    hard = EXPERIMENTS[name]["train"]["hard_negatives"]
    if hard["source"] == "local":
        return str(Path(hard["path"]) / hard[key])
    return f"{HARD_NEGATIVES}/{hard[key]}"


def splade_training_data(wildcards):
    train = experiment(wildcards)["train"]
    return retrieval_data(train["dataset"], train["split"])


def splade_triplet_inputs(wildcards):
    name, train = wildcards.experiment, experiment(wildcards)["train"]
    inputs = {"data": splade_training_data(wildcards)}
    if train["hard_negatives"] is None:
        inputs["negatives"] = negatives_path(experiment(wildcards))
    elif train["hard_negatives"]["source"] != "standin":  # smoke mode generates its own
        inputs["negatives"] = hard_negatives_file(name, "negatives_file")
        inputs["ce_scores"] = CE_SCORES
    return inputs


def triplets_table(name, method):
    """splade_triplets' output: the training triplets of one method."""
    return f"{experiment_dir(name)}/triplets/{method}.parquet"


def splade_vectors(name, variant):
    """encode_sparse's output."""
    return f"{experiment_dir(name)}/vectors/{variant}"


def splade_index(name, variant):
    """index_sparse's output: an impact index per evaluation corpus."""
    return f"{experiment_dir(name)}/indexes/{variant}"


def splade_runs(name, variant):
    """The TREC runs of a trained variant or an ensemble (splade_scores', splade_ensemble's)."""
    return f"{experiment_dir(name)}/runs/{variant}"


def splade_index_of(name, variant):
    """Each evaluation dataset -> its index inside the variant's index_sparse output: datasets that
    share a corpus (MS MARCO dev, DL19, DL20) share the index of the first of them."""
    corpus_of = EXPERIMENTS[name]["_corpus_of"]
    return {
        ds: f"{splade_index(name, variant)}/{first}" for ds, first in corpus_of.items()
    }


def splade_meta(wildcards, variant, model=None):
    exp = experiment(wildcards)
    return {
        "experiment": wildcards.experiment,
        "track": "splade",
        "variant": variant,
        "model": model,
        "split": exp["evaluation"]["split"],
        "seed": exp["train"]["seed"],
    }


def splade_scores(name):
    exp = EXPERIMENTS[name]
    return [variant_scores_of(name, v) for v in [*exp["variants"], *exp["ensembles"]]]


def splade_outputs(name):
    base = f"{experiment_dir(name)}"
    return [
        scores_table_of(name),
        *expand(f"{base}/tables/splade.{{ext}}", ext=["md", "csv", "html"]),
    ]


def splade_stage_targets(name, stage):
    exp = EXPERIMENTS[name]
    if stage == "data":
        train, evaluation = exp["train"], exp["evaluation"]
        return [retrieval_data(train["dataset"], train["split"])] + [
            retrieval_data(ds, evaluation["split"]) for ds in evaluation["datasets"]
        ]
    if stage == "negatives":
        return [triplets_table(name, m) for m in splade_methods(name)]
    if stage == "models":
        return [trained_model(name, v) for v in exp["variants"]]
    if stage == "embeddings":
        return [splade_vectors(name, v) for v in exp["variants"]]
    if stage == "scores":
        return [scores_table_of(name), *bm25_scores_of(name)]
    return []


def splade_methods(name):
    return sorted({spec["method"] for spec in EXPERIMENTS[name]["variants"].values()})
