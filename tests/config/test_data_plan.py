"""The shared data stages' plan: the miners and the split each BM25 index reads, on hand-made configs."""

from conftest import REPO

from trimbench.config.data_plan import bm25_corpus_splits, miner_key, miners
from trimbench.config.prepare import corpus_per_split, prepare
from trimbench.config.schema import load_config
from trimbench.face import Miner
from trimbench.jobs.packaged import packaged_models
from trimbench.tracks import TRACKS


def _negatives(miner="bm25", model=None, cross_encoder=None):
    return {"miner": miner, "depth": 30, "keep": 10, "model": model, "cross_encoder": cross_encoder, "margin": 0.5}


BM25 = {"enabled": True, "fields": "flat", "k1": 0.9, "b": 0.4}


def _dense_exp(negatives, dataset="msmarco", split="train", evaluation=("msmarco",), eval_split="dev",
               methods=("pretrained", "2dmse"), bm25=BM25):
    return {"track": "2dmse-retrieval", "pooling": "cls", "methods": list(methods), "bm25": bm25,
            "retrieval": {"negatives": negatives, "similarity": "cosine"},
            "train": {"dataset": dataset, "split": split},
            "evaluation": {"datasets": list(evaluation), "split": eval_split}}


def _splade_exp(negatives, hard_negatives=None, dataset="msmarco", split="train", bm25=BM25):
    return {"track": "splade", "bm25": bm25, "train": {"dataset": dataset, "split": split, "negatives": negatives,
                                         "hard_negatives": hard_negatives},
            "evaluation": {"datasets": ["msmarco"], "split": "dev"}}


def test_miner_key_names_every_setting_that_changes_the_mined_file():
    assert miner_key(Miner(_negatives(), None, "dot", BM25)) == "bm25-d30-k10-k1_0.9-b0.4"
    assert miner_key(Miner(_negatives(), None, "dot", {**BM25, "k1": 1.2, "b": 0.75})) == "bm25-d30-k10-k1_1.2-b0.75"
    # a dense miner does not search BM25: its key and params leave the bm25 section out
    dense = Miner(_negatives("dense", model="minilm"), None, "dot", {**BM25, "k1": 1.2})
    assert (miner_key(dense), dense.bm25_parameters) == ("dense-d30-k10-minilm", None)
    assert miner_key(Miner(_negatives(cross_encoder="ce"), None, "dot", BM25)) == "bm25-d30-k10-k1_0.9-b0.4-ce-ce-m0.5"
    assert miner_key(Miner({**_negatives("dataset"), "depth": 99}, None, "dot", BM25)) == "dataset"


def test_a_bm25_miner_searches_at_its_experiments_k1_and_b():
    """Two experiments mining one split with BM25 at other k1 / b mine two files, each with its own
    parameters (the rule's param bm25, what scripts/mine_negatives.py hands bm25_mine)."""
    other = {**BM25, "k1": 1.5, "b": 0.6, "fields": "multifield"}
    found = miners({"a": _dense_exp(_negatives()), "b": _splade_exp(_negatives(), bm25=other)})
    assert {key: miner.bm25_parameters for key, miner in found.items()} == {
        "bm25-d30-k10-k1_0.9-b0.4": {"k1": 0.9, "b": 0.4}, "bm25-d30-k10-k1_1.5-b0.6": {"k1": 1.5, "b": 0.6}}


def test_miners_are_named_fields_a_dense_miner_pools_its_own_way_for_splade():
    dense = _negatives("dense", model="minilm", cross_encoder="ce")
    found = miners({"a": _dense_exp(_negatives()), "b": _splade_exp(dense),
                    "c": _splade_exp(_negatives("dense", model="other"), hard_negatives={"source": "hub"})})
    assert list(found) == ["bm25-d30-k10-k1_0.9-b0.4", "dense-d30-k10-minilm-ce-ce-m0.5"]  # c downloads its negatives
    bm25, dense_miner = found.values()
    assert bm25 == Miner(_negatives(), "cls", "cosine", BM25)
    assert (bm25.searches_bm25, bm25.model, bm25.cross_encoder) == (True, None, None)
    assert (dense_miner.pooling, dense_miner.similarity) == (None, "dot")
    assert (dense_miner.searches_bm25, dense_miner.model, dense_miner.cross_encoder) == (False, "minilm", "ce")


def test_a_miner_both_a_dense_and_a_splade_experiment_name_mines_the_splade_way_whatever_their_order():
    """One key, one cached file: where a SPLADE experiment and a group-trained dense one name the same
    negatives settings, the SPLADE way (the model's own pooling, dot product) is the one kept."""
    negatives = _negatives("dense", model="minilm")
    for experiments in ({"s": _splade_exp(negatives), "d": _dense_exp(negatives)},
                        {"d": _dense_exp(negatives), "s": _splade_exp(negatives)}):
        assert miners(experiments) == {"dense-d30-k10-minilm": Miner(negatives, None, "dot", BM25)}


def test_a_dataset_with_one_corpus_is_indexed_once_from_the_first_split_read():
    datasets = {"msmarco": {"source": "hub"}, "lee": {"source": "gensim"}, "scifact": {"source": "hub"}}
    experiments = {"a": _dense_exp(_negatives()),  # trains on msmarco train, scored on msmarco dev
                   "b": _dense_exp(_negatives(), dataset="lee", evaluation=("lee", "scifact"), eval_split="test"),
                   "sts": {"track": "2dmse-sts", "methods": ["2dmse"],
                           "train": {"dataset": "scifact", "split": "a-train"},
                           "evaluation": {"datasets": ["scifact"], "split": "a-dev"}}}
    # lee makes a corpus per split (not listed); an STS experiment reads no BM25 index
    assert bm25_corpus_splits({"datasets": datasets, "experiments": experiments}) == {"msmarco": "dev",
                                                                                       "scifact": "test"}


def test_packaged_models_names_the_packaged_inputs_only():
    registry = {"pkg": {"source": "package", "package": "snakemake", "subfolder": "x"}, "hub": {"source": "hub"}}
    found = packaged_models(registry, model="pkg", miner="hub", cross_encoder=None)
    assert list(found) == ["model"] and found["model"]["package"] == "snakemake"
    assert packaged_models(registry, model=None) == {}


def test_a_retrieval_experiment_that_trains_on_nothing_reads_only_its_evaluation_split():
    """Pretrained models (and the BM25 baseline) only, no training dataset: its BM25 index reads the
    evaluation split; a training dataset it names but does not train on is not read."""
    datasets = {"msmarco": {"source": "hub"}, "scifact": {"source": "hub"}}
    untrained = _dense_exp(_negatives(), evaluation=("scifact",), methods=("pretrained",))
    del untrained["train"]["dataset"]
    assert bm25_corpus_splits({"datasets": datasets, "experiments": {"a": untrained}}) == {"scifact": "dev"}
    named = _dense_exp(_negatives(), dataset="msmarco", split="a-train", evaluation=("msmarco",),
                       methods=("pretrained",))
    assert bm25_corpus_splits({"datasets": datasets, "experiments": {"a": named}}) == {"msmarco": "dev"}


def test_the_embedded_default_with_a_retrieval_experiment_of_pretrained_models_only_is_planned():
    """Issue 41: a retrieval experiment without a training dataset stopped the parse with a bare
    KeyError: 'dataset'; it is valid (no training), and its BM25 index reads its evaluation split."""
    raw = load_config([REPO / "config.yaml"])
    retrieval = raw["experiments"]["retrieval"]
    retrieval["methods"] = ["pretrained"]
    del retrieval["train"]["dataset"]
    config = prepare({**raw, "experiments": {"retrieval": retrieval}}, REPO)
    assert TRACKS["2dmse-retrieval"].training_data(config["experiments"]["retrieval"]) is None
    evaluated = config["experiments"]["retrieval"]["evaluation"]
    assert bm25_corpus_splits(config) == {dataset: evaluated["split"] for dataset in evaluated["datasets"]
                                          if not corpus_per_split(config["datasets"][dataset])}
