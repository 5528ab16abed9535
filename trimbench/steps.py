"""One function per workflow rule: read the job's inputs and params, call the library, write outputs.

Each takes a :class:`trimbench.jobs.run.Job`; ``scripts/<rule>.py`` only calls ``rules.run`` on it.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from trimbench import scores as score_table
from trimbench.jobs.artifacts import reading
from trimbench.jobs.atomic import atomic_path

log = logging.getLogger("trimbench")


def prepare_data(job) -> None:
    from trimbench.data.tables import load_split

    p = job.params
    # Relative paths in the config are the working directory's: a job runs there (also on SLURM).
    frame = load_split(p.name, p.entry, job.wildcards.split, Path.cwd())
    log.info("dataset %s split %s: %d rows", p.name, job.wildcards.split, len(frame))
    if frame.empty:
        raise ValueError(f"dataset '{p.name}' split '{job.wildcards.split}' has no rows")
    with atomic_path(job.output.table) as tmp:
        frame.to_parquet(tmp, index=False)


def fetch_model(job) -> None:
    from trimbench.models import build_tiny_model, fetch_hub_model

    entry, out_dir = job.params.entry, Path(job.output.model)
    with atomic_path(out_dir) as tmp:
        if entry["source"] == "tiny":
            build_tiny_model(entry, Path(job.params.vocab_folder), Path(tmp))
        else:
            fetch_hub_model(entry, Path(tmp))
    log.info("model ready in %s", out_dir)


def _model_to_train(job, max_seq_length):
    """The job's base model, loaded for training (its params: train, pooling, cut_layers)."""
    from transformers import set_seed

    from trimbench.models import cut_layers, load_sentence_model, use_attention

    p = job.params
    # Seeded before loading too: weights the base folder lacks (e.g. BERT's unused pooler) are
    # initialised at random, and a resumed run must start from the same ones.
    set_seed(p.train["seed"])
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling, max_seq_length=max_seq_length)
    use_attention(model, p.train["attention"])
    if p.cut_layers is not None:
        cut_layers(model, p.cut_layers)
        log.info("cut to %d layers", p.cut_layers)
    return model


def train_model(job) -> None:
    from trimbench.dense.losses import build_sts_loss
    from trimbench.training import fine_tune, run_fingerprint, training_rows

    p = job.params
    train = p.train
    model = _model_to_train(job, train["max_seq_length"])
    frame = training_rows(pd.read_parquet(job.input.data), p.kind, train["max_samples"], train["seed"])
    log.info("method %s on %d rows of kind %s", p.method, len(frame), p.kind)
    loss = build_sts_loss(model, p.method, train, p.dims, p.semantics, p.objective)
    log.info("objective %s: loss %s", p.objective, type(loss).__name__)
    fingerprint = run_fingerprint(job.named("params"), [job.input.model, job.input.data])
    fine_tune(model, frame, loss, train, Path(job.output.model), fingerprint)


def encode_texts(job) -> None:
    from trimbench.data.tables import sts_texts
    from trimbench.encoding import encode_layers
    from trimbench.models import load_sentence_model

    p = job.params
    # Trained BERT-S models were saved cut, so every model is encoded as it is on disk.
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling, max_seq_length=p.max_seq_length)
    out_dir = Path(job.output.embeddings)
    with atomic_path(out_dir) as tmp:
        Path(tmp).mkdir(parents=True)
        manifest = {"layers": p.layers, "max_dim": p.max_dim, "datasets": {}}
        for dataset, table in zip(p.datasets, job.input.data, strict=True):
            texts, _, _ = sts_texts(pd.read_parquet(table))
            array = encode_layers(model, texts, p.layers, batch_size=p.batch_size, max_dim=p.max_dim)
            np.save(Path(tmp) / f"{dataset}.npy", array)
            manifest["datasets"][dataset] = {"texts": len(texts), "shape": list(array.shape)}
            log.info("encoded %s: %s", dataset, array.shape)
        (Path(tmp) / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


def export_model(job) -> None:
    from trimbench.export import save_trimmed
    from trimbench.models import load_sentence_model

    p = job.params
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling, max_seq_length=p.max_seq_length)
    with atomic_path(job.output.model) as tmp:
        save_trimmed(model, p.layers, p.dim, tmp, job.input.model)


def evaluate_sts(job) -> None:
    from trimbench.dense.sts import evaluate_variant

    p = job.params
    frame = evaluate_variant(Path(job.input.embeddings), dict(zip(p.datasets, job.input.data, strict=True)), p.meta,
                             p.layers, p.dims, p.metrics, p.average_name)
    with atomic_path(job.output.scores) as tmp:
        score_table.write(frame, tmp)


def collect_scores(job) -> None:
    frame = score_table.concat([score_table.read(path) for path in job.input.scores])
    with atomic_path(job.output.scores) as tmp:
        score_table.write(frame, tmp)


def sts_table(job) -> None:
    from trimbench.report.grid import sts_grid_tables

    p = job.params
    published = pd.read_csv(job.input.reference)
    outputs = sts_grid_tables(score_table.read(job.input.scores), published, p.reference_variant,
                              p.dataset, p.metric)
    for name, text in outputs.items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)


def sts_figure(job) -> None:
    from trimbench.report.grid import sts_layer_figure

    p = job.params
    published = pd.read_csv(job.input.reference)
    sts_layer_figure(score_table.read(job.input.scores), published, p.reference_variant, p.dataset, p.metric,
                     p.title, {"png": job.output.png, "svg": job.output.svg}, depth=p.depth)


def sts_versions(job) -> None:
    from trimbench.report.grid import VersionBlock, sts_versions_figure, sts_versions_tables

    p = job.params
    blocks = [
        VersionBlock(spec["label"], score_table.read(scores), pd.read_csv(reference), spec["reference_variant"],
                     spec["dataset"], spec["metric"])
        for spec, scores, reference in zip(p.blocks, job.input.scores, job.input.references, strict=True)
    ]
    for name, text in sts_versions_tables(blocks).items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)
    sts_versions_figure(blocks, p.title, {"png": job.output.png, "svg": job.output.svg})


def scoreboard(job) -> None:
    import base64

    from trimbench.report.scoreboard import comparisons_html, readable_status, status_html, status_table

    experiments = _scoreboard_experiments(job)
    status = status_table(experiments)
    figure_uri = "data:image/png;base64," + base64.b64encode(Path(job.input.figure).read_bytes()).decode()
    outputs = {
        "csv": status.to_csv(index=False, float_format="%.6f"),
        "markdown": "# Reproduction status\n\n" + readable_status(status).to_markdown(index=False) + "\n",
        "html": status_html(status, figure_uri, job.params.figure_caption),
        "comparisons": comparisons_html(experiments),
    }
    for name, text in outputs.items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)


def _scoreboard_experiments(job) -> list:
    from trimbench.report.scoreboard import Experiment

    p = job.params
    return [
        Experiment(name, config, score_table.read(scores), pd.read_csv(reference), metrics)
        for name, config, metrics, scores, reference in zip(p.names, p.configs, p.main_metrics, job.input.scores,
                                                            job.input.references, strict=True)
    ]


def pareto(job) -> None:
    from trimbench.report.figures import cross_track_pareto_figure
    from trimbench.report.scoreboard import COSTS, pareto_points

    p = job.params
    experiments = _scoreboard_experiments(job)
    for (dataset, cost), points_path, png, svg in zip(p.figures, job.output.points, job.output.png, job.output.svg,
                                                      strict=True):
        points = pareto_points(experiments, dataset, cost)
        with atomic_path(points_path) as tmp:
            points.to_csv(tmp, index=False, float_format="%.6f")
        metrics = sorted({metrics[dataset] for metrics in p.main_metrics if dataset in metrics})
        cross_track_pareto_figure(points, COSTS[cost][0], " / ".join(metrics),
                                  f"{dataset}: every variant of every experiment", {"png": png, "svg": svg})


# --- the ELECTRA track (rules/electra.smk) ------------------------------------------------------


def adapt_domain(job) -> None:
    from trimbench.electra.train import adapt_domain as adapt
    from trimbench.electra.train import unique_texts
    from trimbench.training import run_fingerprint

    p = job.params
    table = pd.concat([pd.read_parquet(path) for path in job.input.data], ignore_index=True)
    texts = unique_texts(table, p.kind, p.stage["max_samples"], p.stage["seed"])
    output = Path(job.output.model)
    fingerprint = run_fingerprint(job.named("params"), [job.input.model, *job.input.data])
    with atomic_path(output) as tmp:
        adapt(Path(job.input.model), texts, p.stage, Path(tmp), output.with_name(output.name + ".ckpt"), fingerprint)


def pretune_word_similarity(job) -> None:
    from trimbench.data.columns import KIND_COLUMNS
    from trimbench.electra.train import fine_tune_pairs
    from trimbench.models import cut_layers, load_sentence_model
    from trimbench.training import training_rows

    p, stage = job.params, job.params.stage
    with reading(job.input.model):
        model = cut_layers(load_sentence_model(job.input.model, pooling=p.pooling), p.k)
    # Words need few tokens; the saved model keeps its own length for the sentences that follow.
    own_length, model.max_seq_length = model.max_seq_length, stage["max_seq_length"] or model.max_seq_length
    train = pd.concat([pd.read_parquet(path) for path in job.input.train], ignore_index=True)
    dev = pd.concat([pd.read_parquet(path) for path in job.input.validation], ignore_index=True)
    train = training_rows(train, "sts", stage["max_samples"], stage["seed"])
    log.info("word-similarity pre-fine-tuning at k=%d on %d pairs (%d for dev)", p.k, len(train), len(dev))
    _, history = fine_tune_pairs(model, "cosine_mse", 2, train, dev[list(KIND_COLUMNS["sts"])], stage,
                                 stage["seed"], p.eval_batch_size)
    model.max_seq_length = own_length
    with atomic_path(job.output.model) as tmp:
        model.save(str(tmp))
        (Path(tmp) / "trimbench_history.json").write_text(json.dumps(history, indent=1, sort_keys=True))


def train_electra(job) -> None:
    from trimbench.electra.train import reinitialise, train_runs
    from trimbench.models import load_sentence_model
    from trimbench.training import run_fingerprint

    p = job.params
    # One start model for every k, or one per k (word-similarity pre-tuned cuts), as the params say.
    start = dict(zip(p.start_layers, job.input.models, strict=True)) if p.start_layers else {}
    loaded = {}  # the start model of the runs at hand (runs come k by k), read from disk once

    def load_model(k, seed):
        path = start.get(k, job.input.models[0])
        if path not in loaded:
            loaded.clear()
            with reading(path):
                loaded[path] = load_sentence_model(path, pooling=p.pooling, max_seq_length=p.train["max_seq_length"])
        model = copy.deepcopy(loaded[path])  # each run cuts and trains its own copy
        return reinitialise(model, seed) if p.random_init else model

    tables = {split: pd.read_parquet(getattr(job.input, split)) for split in ("train", "validation", "test")}
    inputs = [*job.input.models, job.input.train, job.input.validation, job.input.test]
    work_dir = Path(job.output.scores).with_name("unfinished")
    finished = train_runs(load_model, p.runs, p.objective, p.num_labels, p.kind, tables, p.train, p.eval_batch_size,
                          work_dir, run_fingerprint(job.named("params"), inputs))
    rows = [{**p.meta, "layer": k, "seed": seed, **row} for k, seed, run_rows, _ in finished for row in run_rows]
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(rows), tmp)
    histories = {f"L{k}/seed{seed}": history for k, seed, _, history in finished}
    with atomic_path(job.output.history) as tmp:
        Path(tmp).write_text(json.dumps(histories, indent=1, sort_keys=True))
    shutil.rmtree(work_dir)


def _electra_layer_table(job) -> pd.DataFrame:
    from trimbench.electra.report import layer_table

    p = job.params
    return layer_table(score_table.read(job.input.scores), pd.read_csv(job.input.reference),
                       p.reference_experiments, p.main_metrics)


def electra_table(job) -> None:
    from trimbench.electra.report import choice_tables, layer_tables

    table = _electra_layer_table(job)
    outputs = {f"layers_{k}": v for k, v in layer_tables(table).items()}
    outputs |= {f"choice_{k}": v for k, v in choice_tables(table).items()}
    for name, text in outputs.items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)


def electra_figure(job) -> None:
    from trimbench.electra.report import layer_figure

    p = job.params
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        layer_figure(score_table.read(job.input.scores), _electra_layer_table(job), p.roles, p.main_metrics,
                     p.title, {"png": png, "svg": svg})


def pareto_figure(job) -> None:
    from trimbench.electra.report import pareto_figure as draw

    p = job.params
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        draw(_electra_layer_table(job), p.roles, p.title, {"png": png, "svg": svg})


# --- retrieval tracks (2DMSE retrieval, Home Depot) ---------------------------------------------


def prepare_retrieval(job) -> None:
    from trimbench.data.beir import load_retrieval

    p = job.params
    split = load_retrieval(p.name, p.entry, job.wildcards.split, Path.cwd())
    log.info("dataset %s split %s: %d documents, %d queries, %d judgements", p.name, job.wildcards.split,
             len(split.corpus), len(split.queries), len(split.qrels))
    with atomic_path(job.output.folder) as tmp:
        split.save(Path(tmp))


def mine_negatives(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.negatives import bm25_mine, cross_encoder_filter, dataset_negatives, dense_mine, write_rows

    p = job.params
    settings = p.negatives
    split = RetrievalSplit.load(job.input.data)
    if settings["miner"] == "dataset":
        rows = dataset_negatives(split)
    elif settings["miner"] == "bm25":
        rows = bm25_mine(split, settings["depth"], settings["keep"], threads=int(job.threads))
    else:
        from trimbench.models import load_sentence_model

        with reading(job.input.miner):
            model = load_sentence_model(job.input.miner, pooling=p.pooling)
        rows = dense_mine(split, model, settings["depth"], settings["keep"], p.similarity)
    if settings["cross_encoder"]:
        rows = cross_encoder_filter(rows, split, job.input.cross_encoder, settings["margin"])
    with atomic_path(job.output.negatives) as tmp:
        count = write_rows(rows, tmp)
    log.info("%s negatives for %d queries written", settings["miner"], count)


def train_retriever(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.retrieval_loss import EpochGroups, GroupedContrastiveLoss, group_pools
    from trimbench.negatives import iter_rows
    from trimbench.training import fine_tune, run_fingerprint

    p = job.params
    train, settings = p.train, p.settings
    model = _model_to_train(job, settings["p_max_length"])
    table, texts = group_pools(RetrievalSplit.load(job.input.data), iter_rows(Path(job.input.negatives)),
                               train["max_samples"], train["seed"])
    groups = EpochGroups(texts, settings["group_size"], train["seed"])
    log.info("method %s on %d queries, groups of %d passages drawn afresh each epoch", p.method, len(table),
             settings["group_size"])
    loss = GroupedContrastiveLoss(model, p.method, settings["target_dims"], settings, p.cut_dim)
    fingerprint = run_fingerprint(job.named("params"), [job.input.model, job.input.data, job.input.negatives])
    fine_tune(model, table.with_transform(groups), loss, train, Path(job.output.model), fingerprint,
              callbacks=[groups.callback()])


def encode_corpus(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.search import encode_queries, encode_retrieval_set, write_manifest
    from trimbench.models import load_sentence_model

    p = job.params
    with reading(job.input.model):
        model = load_sentence_model(job.input.model, pooling=p.pooling)
    with atomic_path(job.output.embeddings) as tmp:
        counts = {}
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            docs_of = p.corpus_of[dataset]
            if docs_of == dataset:
                counts[dataset] = encode_retrieval_set(model, RetrievalSplit.load(folder), p.layers, p.max_dim,
                                                       Path(tmp) / dataset, p.q_max_length, p.p_max_length,
                                                       p.batch_size, p.chunk)
            else:  # its corpus is encoded with dataset docs_of's
                counts[dataset] = {"docs_of": docs_of, **encode_queries(
                    model, RetrievalSplit.read(folder, "queries"), p.layers, p.max_dim, Path(tmp) / dataset,
                    p.q_max_length, p.batch_size)}
            log.info("encoded %s: %s", dataset, counts[dataset])
        write_manifest(Path(tmp), p.layers, p.max_dim, counts)


def retrieval_scores(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.dense.search import grid_scores
    from trimbench.runs import with_average

    p = job.params
    rows = []
    with atomic_path(job.output.runs) as runs:
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            # doc ids only: MS MARCO's 8.8M passages need not be read to score its runs
            split = RetrievalSplit(RetrievalSplit.read(folder, "corpus", ["doc_id"]),
                                   RetrievalSplit.read(folder, "queries"), RetrievalSplit.read(folder, "qrels"))
            rows += grid_scores(Path(job.input.embeddings), dataset, split, p.layers, p.dims,
                                p.metrics, p.top_k, p.similarity, Path(runs), p.meta, p.passage_layer,
                                p.relevance_level[dataset])
    table = with_average(pd.DataFrame(rows), p.average_over, p.average_name, p.meta)
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(table.to_dict("records")), tmp)


def homedepot_table(job) -> None:
    from trimbench.dense.homedepot import tables

    outputs = tables(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config)
    for name, text in outputs.items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)


def homedepot_figure(job) -> None:
    from trimbench.dense.homedepot import recall_figure

    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        recall_figure(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config,
                      job.params.title, {"png": png, "svg": svg})


def retrieval_ablation(job) -> None:
    from trimbench.dense.ablations import ablation_figure

    p = job.params
    with atomic_path(job.output.png) as png, atomic_path(job.output.svg) as svg:
        ablation_figure([score_table.read(path) for path in job.input.scores], p.configs, p.dataset, p.metric,
                        p.title, {"png": png, "svg": svg})


# --- the SPLADE track (rules/splade.smk) ---------------------------------------------------------


def fetch_hard_negatives(job) -> None:
    from huggingface_hub import hf_hub_download

    hard = job.params.hard_negatives
    with atomic_path(job.output.file) as tmp:
        download = Path(f"{tmp}.download")  # the hub client's own folder, removed below
        found = hf_hub_download(hard["id"], job.wildcards.file, repo_type="dataset", revision=hard.get("revision"),
                                local_dir=str(download))
        Path(found).rename(tmp)
        shutil.rmtree(download, ignore_errors=True)


def convert_ce_scores(job) -> None:
    from trimbench.splade.triplets import convert_ce_scores as convert

    with atomic_path(job.output.table) as tmp:
        pairs = convert(Path(job.input.scores), Path(tmp))
    log.info("%d (query, passage) cross-encoder scores converted", pairs)


def splade_triplets(job) -> None:
    import tempfile

    from trimbench.data.io import RetrievalSplit
    from trimbench.negatives import read_rows
    from trimbench.splade import triplets as hn

    p, method = job.params, job.wildcards.method
    split = RetrievalSplit.load(job.input.data)
    hard = p.hard_negatives
    if hard is None:
        frame = hn.mined_triplets(split, read_rows(Path(job.input.negatives)), p.seed, p.max_samples)
    elif hard["source"] == "standin":
        with tempfile.TemporaryDirectory(prefix="hard-negatives-") as work:
            hn.standin_files(split, Path(work), p.seed)
            hn.convert_ce_scores(Path(work) / "scores.pkl.gz", Path(work) / "ce-scores.parquet")
            rows = hn.read_hard_negatives(Path(work) / "negatives.jsonl.gz")
            scores = hn.CrossEncoderScores(Path(work) / "ce-scores.parquet")
            frame = hn.hard_negative_triplets(hn.numbered(split), rows, scores, method, hard, p.seed, p.max_samples)
    else:
        with reading(job.input.ce_scores):
            scores = hn.CrossEncoderScores(Path(job.input.ce_scores))
        frame = hn.hard_negative_triplets(split, hn.read_hard_negatives(Path(job.input.negatives)), scores, method,
                                          hard, p.seed, p.max_samples)
    if frame.empty:
        raise ValueError(f"no training triplet for {method}: no query has both a positive and a negative")
    log.info("%s: %d training triplets", method, len(frame))
    with atomic_path(job.output.triplets) as tmp:
        frame.to_parquet(tmp, index=False)


def train_splade(job) -> None:
    from transformers import set_seed

    from trimbench.splade.model import load_splade_model, train_splade
    from trimbench.training import run_fingerprint

    p = job.params
    run = p.run
    # Seeded before loading: a head the checkpoint lacks (mlm_head: tied) starts the same on a resume.
    set_seed(p.train["seed"])
    with reading(job.input.model):
        model = load_splade_model(job.input.model, max_seq_length=p.max_length)
    frame = pd.read_parquet(job.input.triplets)
    log.info("%s from %s on %d triplets, lambda_q %g, lambda_d %g, semantics %s", run["method"], run["model"],
             len(frame), run["lambda_q"], run["lambda_d"], p.semantics)
    fingerprint = run_fingerprint(job.named("params"), [job.input.model, job.input.triplets])
    train_splade(model, frame, run["method"], run["lambda_q"], run["lambda_d"], p.semantics, p.train,
                 Path(job.output.model), fingerprint)


def encode_sparse(job) -> None:
    from trimbench.data.io import RetrievalSplit, doc_texts
    from trimbench.splade import vectors as sparse
    from trimbench.splade.model import load_splade_model

    p = job.params
    settings = p.settings
    with reading(job.input.model):
        model = load_splade_model(job.input.model)
    encoded = {}  # corpus -> (documents, terms per document), for the log of datasets sharing it
    with atomic_path(job.output.vectors) as tmp:
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            first = p.corpus_of[dataset]
            if first != dataset:  # the same corpus as an earlier dataset: encoded once, linked
                (Path(tmp) / dataset).mkdir(parents=True)
                source, target = Path(tmp) / first / sparse.DOCS_FILE, Path(tmp) / dataset / sparse.DOCS_FILE
                try:
                    os.link(source, target)
                except OSError:  # a file system without hard links
                    shutil.copyfile(source, target)
                docs = None
            else:
                corpus = RetrievalSplit.read(folder, "corpus")
                docs = sparse.encode_sparse(model, doc_texts(corpus), settings["p_max_length"] or p.max_length,
                                            settings["batch_size"], settings["quantization"], settings["encode_chunk"],
                                            settings["d_max_terms"])
                encoded[dataset] = docs.shape[0], sparse.active_terms(docs)
            queries = sparse.encode_sparse(model, list(RetrievalSplit.read(folder, "queries")["text"]),
                                           settings["q_max_length"] or p.max_length, settings["batch_size"],
                                           settings["quantization"], settings["encode_chunk"], settings["q_max_terms"])
            sparse.save_vectors(Path(tmp) / dataset, docs, queries)
            log.info("%s: %d documents (%.1f terms each), %d queries (%.1f terms each)", dataset, *encoded[first],
                     queries.shape[0], sparse.active_terms(queries))
        (Path(tmp) / sparse.VOCAB_FILE).write_text(json.dumps(sparse.vocabulary(model.tokenizer)))


def _vocabulary(folder: Path) -> list[str]:
    from trimbench.splade import vectors as sparse

    with reading(folder):
        return json.loads((folder / sparse.VOCAB_FILE).read_text())


def index_sparse(job) -> None:
    """An impact index per corpus of the run; each finished one is kept, so a job cut short
    resumes with the corpora left."""
    import tempfile

    from trimbench.data.io import RetrievalSplit
    from trimbench.splade import vectors as sparse
    from trimbench.training import FINGERPRINT_FILE, run_fingerprint, stamped_work_dir

    p, out, vectors = job.params, Path(job.output.index), Path(job.input.vectors)
    work = stamped_work_dir(out.with_name(out.name + ".unfinished"),
                            run_fingerprint(job.named("params"), [job.input.vectors, *job.input.data]))
    vocab = _vocabulary(vectors)
    for dataset, folder in zip(p.datasets, job.input.data, strict=True):
        if p.corpus_of[dataset] != dataset:
            continue  # searched in the index of the first dataset with its corpus
        if (work / dataset).is_dir():
            log.info("impact index of %s: built by an earlier attempt, kept", dataset)
            continue
        with reading(vectors):
            docs = sparse.load_docs(vectors / dataset)
        doc_ids = list(RetrievalSplit.read(folder, "corpus", columns=["doc_id"])["doc_id"])
        with tempfile.TemporaryDirectory(prefix="vectors-") as collection, atomic_path(work / dataset) as tmp:
            sparse.write_vector_collection(doc_ids, docs, vocab, Path(collection))
            sparse.build_impact_index(Path(collection), Path(tmp), threads=int(job.threads))
        log.info("impact index of %s: %d documents", dataset, docs.shape[0])
    (work / FINGERPRINT_FILE).unlink()
    work.rename(out)


def _write_run_scores(job, runs: dict, extra_rows: list[dict]) -> None:
    """TREC runs per dataset and the score table (run metrics, ``extra_rows``, the average)."""
    from trimbench.data.io import RetrievalSplit
    from trimbench.runs import evaluate_run, with_average, write_trec_run

    p = job.params
    rows = list(extra_rows)
    with atomic_path(job.output.runs) as runs_dir:
        Path(runs_dir).mkdir(parents=True, exist_ok=True)
        for dataset, folder in zip(p.datasets, job.input.data, strict=True):
            run = runs[dataset]
            write_trec_run(run, Path(runs_dir) / f"{dataset}.trec", job.wildcards.variant)
            qrels = RetrievalSplit.read(folder, "qrels")
            for metric, value in evaluate_run(run, qrels, p.metrics, p.relevance_level[dataset]).items():
                rows.append({**p.meta, "dataset": dataset, "metric": metric, "value": value})
            log.info("%s: %s", dataset, ", ".join(f"{r['metric']} {r['value']:.4f}" for r in rows
                                                  if r["dataset"] == dataset))
    table = with_average(pd.DataFrame(rows), p.average_over, p.average_name, p.meta, ["metric"])
    with atomic_path(job.output.scores) as tmp:
        score_table.write(score_table.frame(table.to_dict("records")), tmp)


def splade_scores(job) -> None:
    from trimbench.data.io import RetrievalSplit
    from trimbench.splade import vectors as sparse

    p, vectors = job.params, Path(job.input.vectors)
    vocab = _vocabulary(vectors)
    runs, rows, corpora = {}, [], {}
    for dataset, folder in zip(p.datasets, job.input.data, strict=True):
        index = p.index_of[dataset]
        with reading(vectors):
            if index not in corpora:  # evaluation sets over one corpus read its documents once
                corpora[index] = sparse.CorpusSparsity.of(sparse.load_docs(vectors / dataset))
            queries = sparse.load_queries(vectors / dataset)
        query_ids = list(RetrievalSplit.read(folder, "queries", columns=["query_id"])["query_id"])
        with reading(index):
            runs[dataset] = sparse.impact_search(Path(index), query_ids, sparse.term_maps(queries, vocab), p.top_k,
                                                 threads=int(job.threads))
        rows += [{**p.meta, "dataset": dataset, "metric": metric, "value": value}
                 for metric, value in sparse.sparsity_scores(queries, corpora[index]).items()]
    _write_run_scores(job, runs, rows)


def splade_ensemble(job) -> None:
    from trimbench.runs import read_trec_run
    from trimbench.splade import vectors as sparse

    p = job.params
    runs = {}
    for dataset in p.datasets:
        members = []
        for folder in job.input.runs:
            with reading(folder):
                members.append(read_trec_run(Path(folder) / f"{dataset}.trec"))
        runs[dataset] = sparse.ensemble_runs(members, p.top_k)
    flops = sparse.ensemble_flops([score_table.read(path) for path in job.input.member_scores])
    _write_run_scores(job, runs, [{**p.meta, **row} for row in flops if row["dataset"] in p.datasets])


def splade_table(job) -> None:
    from trimbench.splade.report import splade_tables

    outputs = splade_tables(score_table.read(job.input.scores), pd.read_csv(job.input.reference), job.params.config)
    for name, text in outputs.items():
        with atomic_path(getattr(job.output, name)) as tmp:
            Path(tmp).write_text(text)
