# Input functions and parse-time tables of rules/dense.smk.
from trimbench.dense import variants as tb_variants
from trimbench.dense.ablations import TITLES as ABLATION_TITLES, ablation_groups

VARIANTS = {
    name: {v.name: v for v in tb_variants.variants(exp, exp["_depth"])}
    for name, exp in EXPERIMENTS.items()
    # the dense tracks' grid variants (SPLADE, ELECTRA: rules/splade.smk, rules/electra.smk)
    if tb_variants.grid_variants(exp["track"])
}


def variant(wildcards):
    return VARIANTS[wildcards.experiment][wildcards.variant]


def trained_variants(name):
    return [
        v for v in VARIANTS[name].values() if v.trained and v.model_variant == v.name
    ]


def encoded_variants(name):
    return [v for v in VARIANTS[name].values() if v.model_variant == v.name]


def variant_model(wildcards):
    v = variant(wildcards)
    if not v.trained:
        return model_dir(experiment(wildcards)["model"])
    return trained_model(wildcards.experiment, v.model_variant)


def variant_packaged(wildcards):
    """The param `packaged` of a rule whose input is variant_model."""
    untrained = not variant(wildcards).trained
    return packaged(model=experiment(wildcards)["model"] if untrained else None)


def dense_embeddings(name, variant):
    """encode_texts' or encode_corpus' output: a variant's embeddings."""
    return f"{experiment_dir(name)}/embeddings/{variant}"


def variant_embeddings(wildcards):
    """Embeddings a variant is scored on: BERT-S at full depth reuses the full model's."""
    return dense_embeddings(wildcards.experiment, variant(wildcards).model_variant)


def score_meta(wildcards):
    """The columns every score row of this variant shares (the tidy table's key)."""
    exp, v = experiment(wildcards), variant(wildcards)
    return {
        "experiment": wildcards.experiment,
        "track": exp["track"],
        "variant": v.method,
        "model": exp["model"],
        "split": exp["evaluation"]["split"],
        "seed": exp["train"]["seed"] if v.trained else None,
    }


def train_settings(wildcards):
    return tb_variants.variant_train_settings(
        experiment(wildcards), variant(wildcards).method
    )


def retriever_settings(wildcards):
    """The variant's retrieval settings its training uses, without the device settings (the
    encoding's devices): changing those re-runs no training (trimbench.config.tracked).
    """
    return tb_config.tracked(
        tb_variants.variant_retrieval_settings(
            experiment(wildcards), variant(wildcards).method
        )
    )


def train_data(wildcards):
    train = experiment(wildcards)["train"]
    return data_table(train["dataset"], train["split"])


def eval_tables(wildcards):
    evaluation = experiment(wildcards)["evaluation"]
    return [data_table(ds, evaluation["split"]) for ds in evaluation["datasets"]]


def passage_layer(wildcards):
    return tb_variants.passage_layer(experiment(wildcards), variant(wildcards))


def encoded_layers(wildcards):
    return tb_variants.encoded_layers(experiment(wildcards), variant(wildcards))


def variant_dims(wildcards):
    v = variant(wildcards)
    return [v.cut_dim] if v.cut_dim else experiment(wildcards)["grid"]["dims"]


def version_block(name):
    exp = EXPERIMENTS[name]
    return {
        "label": name,
        "reference_variant": exp["reference"]["variant"],
        "dataset": exp["evaluation"]["average_name"],
        "metric": exp["evaluation"]["main_metric"],
    }


def retrieval_views(name):
    """Datasets the tables and figures show: the compared one, the others searching its corpus
    (TREC DL 2019 / 2020 beside MS MARCO dev), then the average when configured."""
    exp = EXPERIMENTS[name]
    compared = tb_config.compared_dataset(exp)
    views = [compared] + [
        ds
        for ds, first in exp["_corpus_of"].items()
        if first == exp["_corpus_of"].get(compared) and ds != compared
    ]
    if exp["retrieval"]["average_over"]:
        views.append(exp["retrieval"]["average_name"])
    return list(dict.fromkeys(views))


def grid_views(name):
    """The datasets of an experiment's grid tables and figures, the main one first: the STS
    average; or the retrieval views."""
    exp = EXPERIMENTS[name]
    if tb_tracks.track_of(exp).dense_retrieval:
        return retrieval_views(name)
    return [exp["evaluation"]["average_name"]]


def grid_view_metric(wildcards):
    """The main view in the main metric; the others (the BEIR average: the seed's figures; TREC
    DL: graded judgements) in nDCG@10."""
    if wildcards.view == grid_views(wildcards.experiment)[0]:
        return experiment(wildcards)["evaluation"]["main_metric"]
    return "ndcg@10"


def grid_figure_title(wildcards):
    """A retrieval experiment's figures name their view (it has several)."""
    exp = experiment(wildcards)
    view = f" ({wildcards.view})" if tb_tracks.track_of(exp).dense_retrieval else ""
    return f"{wildcards.experiment}{view}: {exp['description']}"


def retrieval_ablation_groups(track):
    names = track_experiments(track)
    return ablation_groups({name: EXPERIMENTS[name] for name in names})


def ablation_base(wildcards):
    """The plain 2DMSE experiment an ablation group is compared with."""
    return EXPERIMENTS[retrieval_ablation_groups(wildcards.track)[wildcards.group][0]]


# --- targets (bound per track in rules/targets.smk) ---
def grid_outputs(name):
    """The score table and the seed's grid tables and figures (2dmse-sts, 2dmse-retrieval)."""
    base = experiment_dir(name)
    views = grid_views(name)
    return [
        scores_table_of(name),
        *expand(
            f"{base}/tables/grid.{{view}}.{{ext}}",
            view=views,
            ext=["md", "csv", "html"],
        ),
        *expand(f"{base}/tables/grid_vs_published.{{view}}.csv", view=views),
        *expand(
            f"{base}/figures/grid_layers.{{view}}.{{ext}}",
            view=views,
            ext=["png", "svg"],
        ),
    ]


def homedepot_outputs(name):
    base = f"{experiment_dir(name)}"
    return [
        scores_table_of(name),
        *expand(f"{base}/tables/homedepot.{{ext}}", ext=["md", "csv", "html"]),
        *expand(f"{base}/figures/homedepot_recall.{{ext}}", ext=["png", "svg"]),
    ]


def dense_scores(name):
    return [variant_scores_of(name, v) for v in VARIANTS[name]]


def dense_stage_targets(name, stage):
    exp, trained = EXPERIMENTS[name], trained_variants(name)
    train, evaluation = exp["train"], exp["evaluation"]
    retrieval = tb_tracks.track_of(exp).dense_retrieval
    group_trained = tb_tracks.track_of(exp).group_trained
    if stage == "data":
        eval_data = retrieval_data if retrieval else data_table
        out = [eval_data(ds, evaluation["split"]) for ds in evaluation["datasets"]]
        if trained:
            train_table = retrieval_data if group_trained else data_table
            out.append(train_table(train["dataset"], train["split"]))
        return out
    if stage == "negatives":
        if group_trained and trained:
            return [negatives_path(exp)]
        return []
    if stage == "models":
        return [trained_model(name, v.name) for v in trained]
    if stage == "embeddings":
        return [dense_embeddings(name, v.name) for v in encoded_variants(name)]
    if stage == "scores":
        return [scores_table_of(name), *bm25_scores_of(name)]
    return []


def dense_track_outputs(track):
    """Views across a track's experiments: the ablation figures found in a retrieval track; the
    side-by-side table and figure where a track has more than one experiment to compare.
    """
    if tb_tracks.TRACKS[track].dense_retrieval:
        return expand(
            f"{RESULTS}/tracks/{track}/ablation_{{group}}.{{ext}}",
            group=list(retrieval_ablation_groups(track)),
            ext=["png", "svg"],
        )
    if not tb_variants.side_by_side(track) or len(track_experiments(track)) < 2:
        return []
    base = f"{RESULTS}/tracks/{track}"
    return [
        *expand(f"{base}/sts_versions.{{ext}}", ext=["md", "csv", "html"]),
        *expand(f"{base}/sts_versions_layers.{{ext}}", ext=["png", "svg"]),
    ]
