"""The dense tracks' encoding costs (trimbench.dense.cost) on hand-made experiments and a fake context."""

from __future__ import annotations

from cost_fakes import TableContext, experiment

from trimbench.dense.cost import job_cost

DATASETS = {"sts": {"source": "local", "path": "sts", "kind": "sts"},
            "ret": {"source": "local", "path": "ret", "kind": "retrieval"}}
MODELS = {"enc": {"source": "tiny", "layers": 2, "dim": 32}}


def _exp(track: str, **keys) -> dict:
    exp = experiment({"datasets": DATASETS, "models": MODELS, "experiments": {"d": {
        "track": track, "model": "enc", "methods": ["pretrained"], "grid": {"layers": [1, 2], "dims": [32, 16]},
        **keys}}}, "d")
    exp["_depth"], exp["_width"] = 2, 32  # prepare's
    exp["_corpus_of"] = {"ret": "ret"}
    return exp


def _context() -> TableContext:
    # a text of each column is padded to its base + the batch asked for (cost_fakes): batch 1 is the mean
    return TableContext(DATASETS, MODELS, rows={("sts", "test"): 130}, queries={("ret", "test"): 70},
                        corpora={"ret": 1000}, depths={"enc": 2}, max_lengths={"enc": 512},
                        base_lengths={"sentence1": 10, "sentence2": 14, "query": 9, "document": 100})


def test_encodings_pad_each_length_sorted_batch_to_its_own_texts_not_a_random_batchs_longest():
    # trimbench.encoding.encode_layers batches the texts longest first: a batch of 64 is padded to
    # about its texts' own length, the padded length of a batch of one (9 + 1 tokens for a query),
    # not to the longest of 64 random draws (9 + 64 in the fake)
    context = _context()
    sts = job_cost("encode_texts", {"experiment": "d", "variant": "pretrained"},
                   _exp("2dmse-sts", evaluation={"datasets": ["sts"], "split": "test", "batch_size": 64}), context)
    assert [(p.count, p.batch, p.length) for p in sts.phases] == [(3, 64, 11), (3, 64, 15)]
    retrieval = _exp("2dmse-retrieval", evaluation={"datasets": ["ret"], "split": "test", "batch_size": 64},
                     retrieval={"p_max_length": 96})
    corpus = job_cost("encode_corpus", {"experiment": "d", "variant": "pretrained"}, retrieval, context)
    # the queries at 9 + 1 tokens; the passages' 100 + 1 cut at p_max_length 96
    assert [(p.count, p.batch, p.length) for p in corpus.phases] == [(2, 64, 10), (16, 64, 96)]
    assert {question[-1] for question in context.padded} == {1}
