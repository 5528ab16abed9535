# Input functions and parse-time tables of rules/splade.smk.
from trimbench.splade import checks as tb_splade

SPLADE_EXPERIMENTS = track_experiments("splade")
SPLADE_RUNS = sorted(
    {run for name in SPLADE_EXPERIMENTS for run in EXPERIMENTS[name]["runs"]}
)
SPLADE_ENSEMBLES = sorted(
    {e for name in SPLADE_EXPERIMENTS for e in EXPERIMENTS[name]["ensembles"]}
)
HARD_NEGATIVES = f"{RESULTS}/data/msmarco-hard-negatives"
#: convert_ce_scores' table of the downloaded cross-encoder scores
CE_SCORES = f"{HARD_NEGATIVES}/ce-scores.parquet"


def splade_run(wildcards):
    return experiment(wildcards)["runs"][wildcards.run]


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
        inputs["negatives"] = negatives_path(train, train["negatives"])
    elif train["hard_negatives"]["source"] != "standin":  # smoke mode generates its own
        inputs["negatives"] = hard_negatives_file(name, "negatives_file")
        inputs["ce_scores"] = CE_SCORES
    return inputs


def splade_vectors(name, run):
    return f"{experiment_dir(name)}/vectors/{run}"


def splade_index_of(name, run):
    """Each evaluation dataset -> its index inside the run's index_sparse output: datasets that
    share a corpus (MS MARCO dev, DL19, DL20) share the index of the first of them."""
    corpus_of = EXPERIMENTS[name]["_corpus_of"]
    return {
        ds: f"{experiment_dir(name)}/indexes/{run}/{first}"
        for ds, first in corpus_of.items()
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
    return [
        f"{experiment_dir(name)}/scores/{v}.parquet"
        for v in [*exp["runs"], *exp["ensembles"]]
    ]


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
        return [
            f"{experiment_dir(name)}/triplets/{m}.parquet" for m in splade_methods(name)
        ]
    if stage == "models":
        return [f"{experiment_dir(name)}/models/{run}" for run in exp["runs"]]
    if stage == "embeddings":
        return [splade_vectors(name, run) for run in exp["runs"]]
    if stage == "scores":
        return [scores_table_of(name), *bm25_scores_of(name)]
    return []


def splade_methods(name):
    return sorted({spec["method"] for spec in EXPERIMENTS[name]["runs"].values()})
