"""The SPLADE track: losses and FLOPS against the formulas, quantisation + impact index + search
against a direct sparse dot product, ensembles on hand-made runs, empty vectors, config checks."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from conftest import REPO

from trimbench.splade import vectors as sparse

VOCAB = [f"t{j}" for j in range(40)]


def _flops_formula(weights: torch.Tensor) -> torch.Tensor:
    """Σ_j (1/n Σ_i |w_ij|)², written out term by term."""
    n, v = weights.shape
    return sum((sum(abs(weights[i, j]) for i in range(n)) / n) ** 2 for j in range(v))


def test_flops_regulariser_is_the_formula_and_the_library_flops_loss():
    from sentence_transformers.sparse_encoder.losses import FlopsLoss

    from trimbench.splade.model import BatchFlops, flops_regulariser

    torch.manual_seed(0)
    weights = torch.relu(torch.randn(5, 7))
    expected = _flops_formula(weights)
    assert torch.allclose(flops_regulariser(weights), expected)
    assert torch.allclose(FlopsLoss(None).compute_loss_from_embeddings(weights), expected)
    pos, neg = torch.relu(torch.randn(4, 7)), torch.relu(torch.randn(4, 7))
    seed_sum = BatchFlops(2).compute_loss_from_embeddings(torch.cat([pos, neg]))
    assert torch.allclose(seed_sum, _flops_formula(pos) + _flops_formula(neg))
    # the library's regulariser of the concatenation is another number (about half the sum)
    assert not torch.allclose(seed_sum, _flops_formula(torch.cat([pos, neg])))


def _tiny_splade(tiny_bert_dir):
    from trimbench.splade.model import load_splade_model

    torch.manual_seed(0)
    model = load_splade_model(tiny_bert_dir, max_seq_length=16, device="cpu")
    model.eval()  # no dropout: the loss and the hand computation see the same vectors
    return model


def _features(model, texts):
    return model.tokenize(texts)


@pytest.mark.parametrize("semantics", ["seed", "st6"])
def test_distil_loss_equals_margin_mse_plus_flops(tiny_bert_dir, semantics):
    from trimbench.splade.model import flops_regulariser, splade_loss

    model = _tiny_splade(tiny_bert_dir)
    queries, pos, neg = ["a cat", "the dog runs"], ["a cat sat", "dogs run fast"], ["stock prices", "rain today"]
    labels = torch.tensor([1.5, -0.5])
    loss = splade_loss(model, "distil_splade", lambda_q=0.3, lambda_d=0.2, semantics=semantics)
    parts = loss([_features(model, t) for t in (queries, pos, neg)], labels)
    with torch.no_grad():
        q, p, n = (model.encode(t, convert_to_tensor=True, convert_to_sparse_tensor=False) for t in (queries, pos, neg))
    margin = (q * p).sum(-1) - (q * n).sum(-1)
    docs = flops_regulariser(p) + flops_regulariser(n) if semantics == "seed" else flops_regulariser(torch.cat([p, n]))
    assert torch.allclose(parts["base_loss"], torch.mean((margin - labels) ** 2), rtol=1e-4)
    assert torch.allclose(parts["document_regularizer_loss"], 0.2 * docs, rtol=1e-4)
    assert torch.allclose(parts["query_regularizer_loss"], 0.3 * flops_regulariser(q), rtol=1e-4)


def test_max_loss_equals_in_batch_ce_plus_flops(tiny_bert_dir):
    from trimbench.splade.model import flops_regulariser, splade_loss

    model = _tiny_splade(tiny_bert_dir)
    queries, pos, neg = ["a cat", "the dog runs"], ["a cat sat", "dogs run fast"], ["stock prices", "rain today"]
    loss = splade_loss(model, "splade_max", lambda_q=0.3, lambda_d=0.2, semantics="seed")
    parts = loss([_features(model, t) for t in (queries, pos, neg)], None)
    with torch.no_grad():
        q, p, n = (model.encode(t, convert_to_tensor=True, convert_to_sparse_tensor=False) for t in (queries, pos, neg))
    docs = torch.cat([p, n])
    ce = torch.nn.functional.cross_entropy(q @ docs.T, torch.arange(2))
    assert torch.allclose(parts["base_loss"], ce, rtol=1e-4)
    assert torch.allclose(parts["document_regularizer_loss"], 0.2 * flops_regulariser(docs), rtol=1e-4)
    assert torch.allclose(parts["query_regularizer_loss"], 0.3 * flops_regulariser(q), rtol=1e-4)


@pytest.mark.parametrize("method", ["splade_max", "distil_splade"])
def test_the_plan_prices_the_forwards_the_training_loss_runs(tiny_bert_dir, method):
    """trimbench.splade.cost.training_forwards says which columns of a step share a forward (the plan
    counts each forward's memory on its own): the encoder's runs under the real loss are the ones it names."""
    from trimbench.cost.work import Forward
    from trimbench.splade.cost import training_forwards
    from trimbench.splade.model import splade_loss

    model = _tiny_splade(tiny_bert_dir)
    calls = []
    hook = model[0].auto_model.base_model.embeddings.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(tuple(kwargs.get("input_ids", args[0] if args else None).shape)),
        with_kwargs=True)
    columns = [_features(model, texts) for texts in (["a cat", "the dog runs"], ["a cat sat on the mat", "dogs"],
                                                     ["stock prices fell sharply today", "rain"])]
    try:
        splade_loss(model, method, 0.3, 0.2, "seed")(columns, torch.zeros(2) if method == "distil_splade" else None)
    finally:
        hook.remove()
    planned = training_forwards([Forward(*column["input_ids"].shape) for column in columns])
    assert calls == [(forward.batch, forward.length) for forward in planned]
    assert len(set(calls)) > 1  # the columns' lengths differ: another grouping would show


def test_splade_loss_takes_the_whole_batchs_flops_on_several_devices_and_names_a_wrong_method(tiny_bert_dir):
    """What tests/splade/test_splade_ddp.py shows on two ranks (outside mutmut's one-process tests),
    as a process alone can see it: on several devices the in-batch negatives are gathered and each
    regulariser is one FLOPS of the whole (gathered) batch; on one device, the library's FlopsLoss.
    The seed's distil documents: FLOPS(pos) + FLOPS(neg), whatever the batch size."""
    from sentence_transformers.sparse_encoder.losses import FlopsLoss

    from trimbench.splade.model import flops_regulariser, splade_loss

    model = _tiny_splade(tiny_bert_dir)
    torch.manual_seed(0)
    pos, neg = torch.relu(torch.randn(3, 7)), torch.relu(torch.randn(3, 7))
    docs = torch.cat([pos, neg])
    one = splade_loss(model, "splade_max", 0.3, 0.2, "seed")
    assert not one.loss.gather_across_devices
    assert type(one.query_regularizer) is FlopsLoss and type(one.document_regularizer) is FlopsLoss
    for method, semantics in (("splade_max", "seed"), ("distil_splade", "st6")):
        several = splade_loss(model, method, 0.3, 0.2, semantics, devices=2)
        for regulariser in (several.query_regularizer, several.document_regularizer):
            assert type(regulariser) is not FlopsLoss
            assert torch.allclose(regulariser.compute_loss_from_embeddings(docs), flops_regulariser(docs))
        assert type(splade_loss(model, method, 0.3, 0.2, semantics).document_regularizer) is FlopsLoss
    assert splade_loss(model, "splade_max", 0.3, 0.2, "seed", devices=2).loss.gather_across_devices
    seed = splade_loss(model, "distil_splade", 0.3, 0.2, "seed").document_regularizer
    assert torch.allclose(seed.compute_loss_from_embeddings(docs), flops_regulariser(pos) + flops_regulariser(neg))
    with pytest.raises(ValueError, match=re.escape("unknown SPLADE method 'splade_sum'; known: ['splade_max', ")):
        splade_loss(model, "splade_sum", 0.3, 0.2, "seed")


def test_splade_vector_is_max_log1p_relu_of_the_mlm_logits(tiny_bert_dir):
    from transformers import AutoModelForMaskedLM

    model = _tiny_splade(tiny_bert_dir)
    mlm = AutoModelForMaskedLM.from_pretrained(str(tiny_bert_dir), local_files_only=True).eval()
    features = model.tokenize(["sparse lexical expansion", "a"])
    with torch.no_grad():
        logits = mlm(input_ids=features["input_ids"], attention_mask=features["attention_mask"]).logits
        expected = (torch.log1p(torch.relu(logits)) * features["attention_mask"].unsqueeze(-1)).max(dim=1).values
        ours = model.encode(["sparse lexical expansion", "a"], convert_to_tensor=True, convert_to_sparse_tensor=False)
    assert torch.allclose(ours, expected, atol=1e-5)


def test_regulariser_schedule_constant_for_the_seed_ramped_for_st6(tiny_bert_dir):
    from transformers import TrainerControl, TrainerState

    from trimbench.splade.model import regulariser_schedule, splade_loss

    model = _tiny_splade(tiny_bert_dir)
    weights = {}
    for semantics in ("seed", "st6"):
        loss = splade_loss(model, "splade_max", lambda_q=0.3, lambda_d=0.2, semantics=semantics)
        callback = regulariser_schedule(loss, semantics)
        state = TrainerState(max_steps=30, global_step=0)
        callback.on_train_begin(None, state, TrainerControl())
        seen = []
        for step in (0, 5, 10, 29):
            state.global_step = step
            callback.on_step_begin(None, state, TrainerControl())
            seen.append((loss.query_regularizer_weight, loss.document_regularizer_weight))
        weights[semantics] = seen
        # what the trainer's log says (the weights of the last step)
        logs = {}
        callback.on_log(None, state, TrainerControl(), logs=logs)
        assert logs == {"query_regularizer_weight": 0.3, "document_regularizer_weight": 0.2}
    assert weights["seed"] == [(0.3, 0.2)] * 4
    assert weights["st6"][0] == (0.0, 0.0) and weights["st6"][-1] == (0.3, 0.2)
    assert weights["st6"][1][0] == pytest.approx(0.3 * (5 / 10) ** 2)  # quadratic over the first third


def test_quantise_rounds_and_drops_zeros():
    q = sparse.quantize(np.array([[0.004, 0.006, 1.234, 0.0], [0.0, 0.0, 0.0, 0.0]]), 100)
    assert q.toarray().tolist() == [[0, 1, 123, 0], [0, 0, 0, 0]]
    assert q.nnz == 2 and q.dtype == np.int32


def test_keep_top_terms_keeps_each_rows_largest_weights_lower_term_id_on_ties():
    weights = sp.csr_matrix(np.array([[0.0, 0.5, 0.3, 0.5, 0.0, 0.9],
                                      [0.2, 0.0, 0.0, 0.0, 0.0, 0.0],
                                      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                                      [0.1, 0.4, 0.4, 0.4, 0.7, 0.0]]))
    assert sparse.keep_top_terms(weights, 2).toarray().tolist() == [[0, 0.5, 0, 0, 0, 0.9], [0.2, 0, 0, 0, 0, 0],
                                                                   [0] * 6, [0, 0.4, 0, 0, 0.7, 0]]
    assert sparse.keep_top_terms(weights, 3).toarray()[3].tolist() == [0, 0.4, 0.4, 0, 0.7, 0]
    assert (sparse.keep_top_terms(weights, None) != weights).nnz == 0
    assert sparse.keep_top_terms(weights, 2).shape == (4, 6)
    assert sparse.keep_top_terms(sp.csr_matrix((0, 6)), 2).shape == (0, 6)  # no rows: nothing to cut


def test_flops_metric_and_active_terms_against_the_formula():
    rng = np.random.default_rng(0)
    queries = sp.csr_matrix(rng.integers(0, 3, size=(6, 9)) * (rng.random((6, 9)) < 0.4))
    docs = sp.csr_matrix(rng.integers(0, 3, size=(11, 9)) * (rng.random((11, 9)) < 0.5))
    qa, da = queries.toarray(), docs.toarray()
    expected = sum(((qa[:, j] > 0).sum() / 6) * ((da[:, j] > 0).sum() / 11) for j in range(9))
    assert sparse.flops(queries, docs) == pytest.approx(expected)
    assert sparse.active_terms(docs) == pytest.approx((da > 0).sum() / 11)


# --- encoding the vectors (encode_sparse) against the MLM's logits --------------------------------

#: texts of different lengths (the encoder batches them longest first); the last is cut at 16 tokens
ENCODED_TEXTS = ["a", "sparse lexical expansion for retrieval", "the cat sat",
                 "dogs run fast in the park every morning before work", "rain",
                 "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"]


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    """The tiny SPLADE model (max_seq_length 16) and its MLM, whose logits give the expected weights.
    The vocabulary's last terms are never active (as most terms of a trained model's vector): a
    vector's width is the vocabulary's, not its highest active term's."""
    from transformers import AutoModelForMaskedLM

    model = _tiny_splade(tiny_bert_dir)
    mlm = AutoModelForMaskedLM.from_pretrained(str(tiny_bert_dir), local_files_only=True).eval()
    with torch.no_grad():
        for head in (model[0].auto_model, mlm):
            head.cls.predictions.bias[-3:] = -100.0
    return model, mlm


def _splade_weights(encoder, texts: list[str], max_length: int) -> np.ndarray:
    """SPLADE's ``max_t log(1 + relu(logit_tj))`` (naver/splade ``splade/models/transformer_rep.py``
    ``Splade.encode``), each text alone (no padding), cut to ``max_length`` tokens with the specials."""
    model, mlm = encoder
    rows = []
    with torch.no_grad():
        for text in texts:
            features = model.tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
            logits = mlm(input_ids=features["input_ids"], attention_mask=features["attention_mask"]).logits[0]
            rows.append(torch.log1p(torch.relu(logits)).max(dim=0).values)
    return torch.stack(rows).double().numpy()


def _assert_quantised_top_terms(ours: sp.csr_matrix, weights: np.ndarray, factor: float, k: int | None):
    """Each row holds its ``k`` largest weights' terms (all when None), each impact the weight × factor
    rounded (float noise between batched and lone encodings aside), every other term 0."""
    assert ours.shape == weights.shape and ours.dtype == np.int32
    expected = weights * factor
    if k is not None:
        top = np.argsort(-weights, axis=1, kind="stable")[:, :k]
        kept = np.zeros_like(expected, dtype=bool)
        np.put_along_axis(kept, top, True, axis=1)
        expected = np.where(kept, expected, 0.0)
        assert (ours.getnnz(axis=1) == k).all()
    assert np.abs(ours.toarray() - expected).max() <= 0.5 + 1e-3


def test_encode_sparse_keeps_each_texts_top_terms_quantised_in_the_texts_order(encoder, tmp_path, capfd, caplog):
    """Several chunks of several batches (longest first inside each chunk), back in the texts' order;
    one rank writes no part files, shows no progress bar, and leaves the model's length as it was."""
    model, _ = encoder
    caplog.set_level(logging.INFO)  # a job logs at INFO: the library would show its bar there unless told not to
    parts = tmp_path / "parts"
    ours = sparse.encode_sparse(model, ENCODED_TEXTS, 6, batch_size=2, factor=100, chunk_size=4, max_terms=5,
                                parts=parts)
    _assert_quantised_top_terms(ours, _splade_weights(encoder, ENCODED_TEXTS, 6), 100, 5)
    assert model.max_seq_length == 16 and not parts.exists()
    assert "Batches" not in capfd.readouterr().err
    # no max_length: the model's own (16 tokens), every term kept, another factor
    texts = ENCODED_TEXTS[-1:] + ENCODED_TEXTS[:1]
    ours = sparse.encode_sparse(model, texts, None, batch_size=4, factor=10)
    _assert_quantised_top_terms(ours, _splade_weights(encoder, texts, 16), 10, None)
    assert model.max_seq_length == 16
    nothing = sparse.encode_sparse(model, [], 8, batch_size=2, factor=100, parts=parts)
    assert nothing.shape == (0, len(model.tokenizer)) and nothing.dtype == np.int32


def test_encode_sparse_over_two_ranks_gathers_every_ranks_rows_on_rank_0(encoder, tmp_path, monkeypatch):
    """Two ranks run one after the other in this process (no process group: the barriers pass):
    rank 1 leaves its rows in uncompressed part files and returns None, rank 0 returns every row as
    one device encodes them and removes the parts."""
    model, _ = encoder
    arguments = dict(max_length=8, batch_size=2, factor=100, chunk_size=3, max_terms=4)
    one_device = sparse.encode_sparse(model, ENCODED_TEXTS, **arguments)
    parts = tmp_path / "vectors" / "dataset"  # the ranks make it, its parent too
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert sparse.encode_sparse(model, ENCODED_TEXTS, **arguments, parts=parts) is None
    with zipfile.ZipFile(parts / ".rank1.npz") as saved:
        assert {info.compress_type for info in saved.infolist()} == {zipfile.ZIP_STORED}
    # rank 1's share: the second batch of each 3-text chunk's length order (one text each here)
    assert sorted(np.load(parts / ".rank1.positions.npy").tolist()) == [0, 4]
    monkeypatch.setenv("RANK", "0")
    gathered = sparse.encode_sparse(model, ENCODED_TEXTS, **arguments, parts=parts)
    assert (gathered != one_device).nnz == 0 and gathered.shape == one_device.shape
    assert list(parts.iterdir()) == []
    _assert_quantised_top_terms(gathered, _splade_weights(encoder, ENCODED_TEXTS, 8), 100, 4)


def test_saved_vectors_and_vocabulary_read_back(tiny_bert_dir, tmp_path):
    from transformers import AutoTokenizer

    from trimbench.errors import ArtifactError

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_dir), local_files_only=True)
    docs = sp.csr_matrix(np.array([[0, 3, 0], [7, 0, 1]], dtype=np.int32))
    queries = sp.csr_matrix(np.array([[2, 0, 0]], dtype=np.int32))
    folder = tmp_path / "vectors" / "dataset"  # parents made
    sparse.save_vectors(folder, docs, queries)
    assert (sparse.load_docs(folder) != docs).nnz == 0 and (sparse.load_queries(folder) != queries).nnz == 0
    # a dataset sharing the corpus: its queries only, the documents already there stay
    sparse.save_vectors(folder, None, 2 * queries)
    assert (sparse.load_docs(folder) != docs).nnz == 0 and sparse.load_queries(folder).toarray().tolist() == [[4, 0, 0]]
    assert sorted(p.name for p in folder.iterdir()) == [sparse.DOCS_FILE, sparse.QUERIES_FILE]
    sparse.save_vectors(tmp_path / "only-queries", None, queries)
    assert [p.name for p in (tmp_path / "only-queries").iterdir()] == [sparse.QUERIES_FILE]

    vocab = sparse.vocabulary(tokenizer)
    ids = tokenizer("sparse lexical retrieval")["input_ids"]
    assert len(vocab) == len(tokenizer) and [vocab[i] for i in ids] == tokenizer.convert_ids_to_tokens(ids)
    assert vocab[:2] == ["[PAD]", "[unused0]"]
    (tmp_path / sparse.VOCAB_FILE).write_text(json.dumps(vocab))
    assert sparse.read_vocabulary(tmp_path) == vocab
    (tmp_path / sparse.VOCAB_FILE).write_text("[")
    with pytest.raises(ArtifactError, match=re.escape(str(tmp_path))):
        sparse.read_vocabulary(tmp_path)


def test_sparsity_scores_of_a_corpus_read_once_against_numpy():
    """FLOPS ``Σ_j p_q(j) p_d(j)`` and the mean active terms of queries and documents."""
    queries = sp.csr_matrix(np.array([[1, 0, 2, 0], [0, 0, 5, 0], [0, 0, 0, 0]], dtype=np.int32))
    docs = sp.csr_matrix(np.array([[3, 1, 0, 0], [0, 0, 4, 1]], dtype=np.int32))
    corpus = sparse.CorpusSparsity.of(docs)
    assert corpus.term_shares.tolist() == [0.5, 0.5, 0.5, 0.5] and corpus.d_terms == 2.0
    assert sparse.sparsity_scores(queries, corpus) == {
        "flops": pytest.approx((1 / 3) * 0.5 + (2 / 3) * 0.5), "q_terms": pytest.approx(1.0), "d_terms": 2.0}


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """Quantised random vectors of 30 documents (two of them empty) in a pyserini impact index."""
    rng = np.random.default_rng(1)
    weights = rng.random((30, len(VOCAB))) * (rng.random((30, len(VOCAB))) < 0.3) * 2.5
    weights[[4, 17]] = 0.0  # documents whose every weight is zero
    docs = sparse.quantize(weights, 100)
    doc_ids = [f"d{i}" for i in range(30)]
    folder = tmp_path_factory.mktemp("impact")
    sparse.write_vector_collection(doc_ids, docs, VOCAB, folder / "collection")
    sparse.build_impact_index(folder / "collection", folder / "index")
    return folder / "index", doc_ids, docs


def test_impact_search_drops_a_querys_own_document_and_keeps_k(small_index):
    """N2 on the sparse path: queries named after their best document (as ArguAna's are corpus
    documents) lose that hit, and k + 1 is searched so k remain (naver/splade beir_eval.py:77,82-88)."""
    from trimbench.runs import top_k_run

    index, doc_ids, docs = small_index
    rng = np.random.default_rng(3)
    queries = sparse.quantize(rng.random((12, len(VOCAB))) * (rng.random((12, len(VOCAB))) < 0.5), 100)
    exact = (queries @ docs.T).toarray()
    best = {}
    for i in range(len(exact)):  # queries whose best document is unique and no other query's
        top = np.flatnonzero(exact[i] == exact[i].max())
        if exact[i].max() > 0 and len(top) == 1 and top[0] not in best.values() and (exact[i] > 0).sum() > 4:
            best[i] = int(top[0])
    assert len(best) >= 3
    rows = list(best)
    query_ids = [doc_ids[best[i]] for i in rows]
    maps = sparse.term_maps(queries[rows], VOCAB)
    run = top_k_run(lambda depth: sparse.impact_search(index, query_ids, maps, k=depth), 3, True)
    assert not (run["query_id"] == run["doc_id"]).any()
    assert run.groupby("query_id").size().tolist() == [3] * len(rows)
    for i, qid in zip(rows, query_ids, strict=True):
        scores = np.delete(exact[i], best[i])
        assert run[run["query_id"] == qid].sort_values("rank")["score"].tolist() == sorted(scores)[::-1][:3]
    assert (top_k_run(lambda depth: sparse.impact_search(index, query_ids, maps, k=depth), 3, False)
            .groupby("query_id")["doc_id"].first().sort_index().tolist() == sorted(query_ids))


def test_indexer_output_is_logged_line_by_line_as_it_comes(tmp_path, caplog):
    """The probe: index_sparse logged Lucene's output only once indexing had ended (hours, at paper
    scale). The child prints a line, then waits until that line is in the log."""
    go = tmp_path / "go"

    class ReleaseOnFirstLine(logging.Handler):
        def emit(self, record):
            if "progress 1" in record.getMessage():
                go.touch()

    child = ("import pathlib, sys, time\nprint('progress 1', flush=True)\ndeadline = time.time() + 60\n"
             f"while not pathlib.Path({str(go)!r}).exists():\n"
             "    if time.time() > deadline: sys.exit('the first line was never logged')\n    time.sleep(0.05)\n"
             "print('progress 2')")
    handler = ReleaseOnFirstLine()
    logging.getLogger("trimbench").addHandler(handler)
    try:
        with caplog.at_level("INFO", logger="trimbench"):
            code, tail = sparse.run_logged([sys.executable, "-c", child], "indexer")
    finally:
        logging.getLogger("trimbench").removeHandler(handler)
    assert code == 0, tail
    assert [r.getMessage() for r in caplog.records] == ["indexer: progress 1", "indexer: progress 2"]
    assert tail == "progress 1\nprogress 2\n"


def test_run_logged_keeps_the_last_40_lines_of_stdout_and_stderr_undecodable_bytes_replaced():
    child = ("import sys\nfor i in range(45):\n    print(f'line {i}', flush=True)\n"
             "sys.stderr.write('warn\\n'); sys.stderr.flush()\n"
             "sys.stdout.buffer.write(b'bad \\xff byte\\n'); sys.stdout.flush()\nsys.exit(3)")
    code, tail = sparse.run_logged([sys.executable, "-c", child], "indexer")
    assert code == 3
    assert tail.splitlines() == [f"line {i}" for i in range(7, 45)] + ["warn", "bad \ufffd byte"]


def test_impact_search_top_document_and_score_are_the_sparse_dot_product(small_index):
    index, doc_ids, docs = small_index
    rng = np.random.default_rng(2)
    queries = sparse.quantize(rng.random((8, len(VOCAB))) * (rng.random((8, len(VOCAB))) < 0.3), 100)
    query_ids = [f"q{i}" for i in range(8)]
    run = sparse.impact_search(index, query_ids, sparse.term_maps(queries, VOCAB), k=30)
    exact = (queries @ docs.T).toarray()
    for i, qid in enumerate(query_ids):
        hits = run[run["query_id"] == qid].sort_values("rank")
        if exact[i].max() == 0:
            assert hits.empty
            continue
        top = hits.iloc[0]
        assert top["score"] == exact[i].max()
        assert exact[i][doc_ids.index(top["doc_id"])] == exact[i].max()
        assert (hits["score"].to_numpy() == np.sort(exact[i][exact[i] > 0])[::-1]).all()
        assert hits["rank"].tolist() == list(range(1, len(hits) + 1))
    assert not run["doc_id"].isin(["d4", "d17"]).any()


def test_impact_search_ranks_every_document_as_the_dense_matrix_product(small_index):
    """Every hit of every query, read in trec_eval's order (score descending, ties by document id
    descending: what the metrics read), is the ranking of the dense integer product over the
    documents that share a term with the query; integer weights in {1, 2} make ties common."""
    from trimbench.runs import trec_eval_order

    index, doc_ids, docs = small_index
    rng = np.random.default_rng(4)
    queries = sp.csr_matrix(rng.integers(1, 3, size=(6, len(VOCAB))) * (rng.random((6, len(VOCAB))) < 0.15))
    query_ids = [f"q{i}" for i in range(6)]
    run = trec_eval_order(sparse.impact_search(index, query_ids, sparse.term_maps(queries, VOCAB), k=30))
    product = queries.toarray() @ docs.toarray().T
    ties = 0
    for i, query_id in enumerate(query_ids):
        scored = sorted(((float(product[i, j]), doc_ids[j]) for j in range(30) if product[i, j] > 0),
                        key=lambda hit: hit[1], reverse=True)
        scored.sort(key=lambda hit: -hit[0])  # stable: ties keep the id order
        hits = run[run["query_id"] == query_id]
        assert list(zip(hits["score"], hits["doc_id"], strict=True)) == scored, query_id
        ties += len(scored) - len({score for score, _ in scored})
    assert ties > 0  # the premise: tied scores were ranked


def test_empty_queries_and_documents_do_not_crash(small_index):
    index, _, _ = small_index
    empty = sp.csr_matrix((2, len(VOCAB)), dtype=np.int32)
    run = sparse.impact_search(index, ["e1", "e2"], sparse.term_maps(empty, VOCAB) + [], k=10)
    assert run.empty and list(run.columns) == ["query_id", "doc_id", "score", "rank"]
    unknown = sparse.impact_search(index, ["u"], [{"never-indexed": 5}], k=10)
    assert unknown.empty
    assert sparse.flops(empty, empty) == 0.0 and sparse.active_terms(empty) == 0.0
    none = sparse.impact_search(index, [], [], k=10)  # no query at all
    assert none.empty and list(none.columns) == ["query_id", "doc_id", "score", "rank"]
    assert sparse.active_terms(sp.csr_matrix((0, len(VOCAB)), dtype=np.int32)) == 0.0


def test_a_term_in_every_document_counts_in_the_score(tmp_path):
    """Its idf is 0, which pyserini's default min_idf (0) drops from the query; the SPLADE score counts it."""
    docs = sp.csr_matrix(np.array([[3, 1, 0], [2, 0, 1], [1, 0, 0]], dtype=np.int32))
    vocab = ["every", "one", "two"]
    sparse.write_vector_collection(["a", "b", "c"], docs, vocab, tmp_path / "collection")
    sparse.build_impact_index(tmp_path / "collection", tmp_path / "index")
    run = sparse.impact_search(tmp_path / "index", ["q"], [{"every": 2, "one": 5}], k=10)
    assert list(zip(run["doc_id"], run["score"], run["rank"], strict=True)) == [("a", 11.0, 1), ("b", 4.0, 2),
                                                                               ("c", 2.0, 3)]


def test_a_failed_index_build_names_the_collection_the_exit_code_and_the_last_output(tmp_path, monkeypatch):
    """A non-zero exit, or an exit 0 that left no Lucene segment, is one error with the indexer's tail."""
    index = tmp_path / "index"
    index.mkdir()
    outcomes = iter([(1, "boom\n"), (0, "nothing written\n"), (1, "late failure\n")])
    monkeypatch.setattr(sparse, "run_logged", lambda command, name: next(outcomes))
    with pytest.raises(RuntimeError, match=re.escape(
            f"pyserini's impact indexer failed on '{tmp_path / 'c'}' (exit 1); its last output:\nboom")):
        sparse.build_impact_index(tmp_path / "c", index)
    with pytest.raises(RuntimeError, match=r"\(exit 0\); its last output:\nnothing written"):
        sparse.build_impact_index(tmp_path / "c", index)
    (index / "segments_1").write_text("")
    with pytest.raises(RuntimeError, match=r"\(exit 1\); its last output:\nlate failure"):  # a segment, yet failed
        sparse.build_impact_index(tmp_path / "c", index)


def test_ensemble_normalises_per_query_and_sums():
    run_a = pd.DataFrame({"query_id": ["1", "1", "1", "2", "2"], "doc_id": ["a", "b", "c", "a", "b"],
                          "score": [10.0, 6.0, 2.0, 5.0, 5.0], "rank": [1, 2, 3, 1, 2]})
    run_b = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["c", "b", "b"], "score": [0.9, 0.1, 3.0],
                          "rank": [1, 2, 1]})
    normalised = sparse.normalise_run(run_a)
    # query 1: min 2, max 10, midrange 6, spread 8; query 2: one score for all -> 0
    assert normalised["score"].tolist() == [0.5, 0.0, -0.5, 0.0, 0.0]
    both = sparse.ensemble_runs([run_a, run_b], k=10)
    # query 1: a 0.5 + B's min (-0.5, a is not in B's run); b 0.0 + (-0.5); c -0.5 + 0.5.
    # query 2: B has one hit (0), so a, missing from B, gets B's min there: 0.
    one = both[both["query_id"] == "1"].set_index("doc_id")["score"].to_dict()
    assert one == {"a": 0.0, "b": -0.5, "c": 0.0}
    assert both[both["query_id"] == "1"].sort_values("rank")["doc_id"].tolist() == ["a", "c", "b"]
    assert both[both["query_id"] == "2"].set_index("doc_id")["score"].to_dict() == {"a": 0.0, "b": 0.0}
    assert len(sparse.ensemble_runs([run_a, run_b], k=1)) == 2
    # the whole run: queries in order, each by score then document id, ranked from 1, a fresh index
    assert both.to_dict("list") == {"query_id": ["1", "1", "1", "2", "2"], "doc_id": ["a", "c", "b", "a", "b"],
                                    "score": [0.0, 0.0, -0.5, 0.0, 0.0], "rank": [1, 2, 3, 1, 2]}
    assert both.index.tolist() == [0, 1, 2, 3, 4]


def test_ensemble_fills_missing_documents_as_pyserinis_fusion():
    """Two runs: pyserini's own ``--normalization`` fusion (``_hybrid_results``, alpha 1), which the
    seed links; three runs, one without any hit for a query: by hand."""
    from collections import namedtuple

    from trimbench.java import setup_java

    setup_java()
    from pyserini.search.hybrid._searcher import HybridSearcher

    hit = namedtuple("hit", "docid score")
    sparse_hits = {"q1": [("d1", 12.0), ("d2", 9.0), ("d3", 4.0), ("d4", 1.0)], "q2": [("d1", 3.0), ("d5", 2.0)]}
    dense_hits = {"q1": [("d3", 0.9), ("d5", 0.7), ("d1", 0.2)], "q2": [("d5", 8.0), ("d6", 6.0), ("d1", 1.0)]}

    def run(hits):
        return pd.DataFrame([(q, d, s) for q, pairs in hits.items() for d, s in pairs],
                            columns=["query_id", "doc_id", "score"]).assign(rank=0)

    ours = sparse.ensemble_runs([run(sparse_hits), run(dense_hits)], k=100)
    for query in ("q1", "q2"):
        fused = HybridSearcher._hybrid_results([hit(*h) for h in dense_hits[query]],
                                               [hit(*h) for h in sparse_hits[query]], alpha=1.0, k=100,
                                               normalization=True)
        expected = {h.docid: h.score for h in fused}
        got = ours[ours["query_id"] == query].set_index("doc_id")["score"].to_dict()
        assert got == pytest.approx(expected, abs=1e-12)
    # A third run with no hit for q2: it gives every q2 document -0.5 (pyserini's min 0, max 1).
    third = run({"q1": [("d2", 5.0), ("d4", 3.0)]})
    three = sparse.ensemble_runs([run(sparse_hits), run(dense_hits), third], k=100)
    q2 = three[three["query_id"] == "q2"].set_index("doc_id")["score"].to_dict()
    two = ours[ours["query_id"] == "q2"].set_index("doc_id")["score"].to_dict()
    assert q2 == pytest.approx({doc: score - 0.5 for doc, score in two.items()})
    # q1's d5 is only in the dense run (0.7 of 0.2..0.9: 0.2143): sparse and third add -0.5 each.
    q1 = three[three["query_id"] == "q1"].set_index("doc_id")["score"].to_dict()
    assert q1["d5"] == pytest.approx((0.7 - 0.55) / 0.7 - 1.0)


def test_ensemble_flops_are_the_sum_of_the_members():
    def member(flops_dev, flops_dl):
        return pd.DataFrame({"dataset": ["dev", "dl19", "dev"], "metric": ["flops", "flops", "mrr@10"],
                             "value": [flops_dev, flops_dl, 0.3]})

    # the seed README: B+E+F 1.48 + 4.57 + 5.35 = 11.40
    rows = sparse.ensemble_flops([member(1.48, 1.0), member(4.57, 2.0), member(5.35, 3.0)])
    assert [(r["dataset"], r["metric"]) for r in rows] == [("dev", "flops"), ("dl19", "flops")]
    assert rows[0]["value"] == pytest.approx(11.40) and rows[1]["value"] == pytest.approx(6.0)


def test_vector_collection_lines(tmp_path):
    docs = sp.csr_matrix(np.array([[0, 3, 0], [0, 0, 0]], dtype=np.int32))
    sparse.write_vector_collection(["x", "y"], docs, ["a", "b", "c"], tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "docs.jsonl").read_text().splitlines()]
    assert lines == [{"id": "x", "contents": "", "vector": {"b": 3}}, {"id": "y", "contents": "", "vector": {}}]


# --- hard negatives ------------------------------------------------------------------------------


def test_ce_scores_conversion_lookup_and_the_seeds_negative_selection(tmp_path):
    import gzip
    import pickle

    from trimbench.splade.triplets import CrossEncoderScores, convert_ce_scores, select_negatives

    scores = {7: {1: 9.0, 2: 8.5, 10: 7.0, 11: 5.4, 12: 1.0, 13: -2.0}, 3: {5: 0.5}}
    with gzip.open(tmp_path / "scores.pkl.gz", "wb") as handle:
        pickle.dump(scores, handle)
    assert convert_ce_scores(tmp_path / "scores.pkl.gz", tmp_path / "ce.parquet") == 7
    ce = CrossEncoderScores(tmp_path / "ce.parquet")
    assert ce.get(7, [2, 13, 99]).tolist()[:2] == [8.5, -2.0] and np.isnan(ce.get(7, [99])[0])
    assert ce.get(3, [5]).tolist() == [0.5]
    row = {"qid": 7, "pos": [1, 2], "neg": {"bm25": [10, 11, 12, 13], "dense": [12, 13, 11]}}
    # min positive 8.5, margin 3 -> threshold 5.5: 10 (7.0) is dropped, 11 (5.4) kept
    assert select_negatives(row, ce, 3.0, per_system=2, systems=None) == [11, 12, 13]
    assert select_negatives(row, ce, None, per_system=2, systems=None) == [10, 11, 12, 13]
    assert select_negatives(row, ce, None, per_system=5, systems=["dense"]) == [12, 13, 11]


def _seed_rotation(positives: list, negatives: list, shuffle_seed: int, epochs: int) -> list[tuple]:
    """naver/splade train_distil.py:176-195 (eb74d1a) by hand: negatives shuffled once, then each
    epoch's access pops the first positive and negative and appends them at the end."""
    import random

    positives, negatives = list(positives), list(negatives)
    random.Random(shuffle_seed).shuffle(negatives)
    shown = []
    for _ in range(epochs):
        pos = positives.pop(0)
        positives.append(pos)
        neg = negatives.pop(0)
        negatives.append(neg)
        shown.append((pos, neg))
    return shown


def test_splade_pairs_rotate_per_epoch_as_the_seed(tmp_path):
    """Over k epochs a query is shown the seed's (positive, negative, CE-margin label) sequence: a new
    negative each epoch until its pool is used up, the label of the pair shown (N1)."""
    import gzip
    import pickle

    from trimbench.data.io import RetrievalSplit
    from trimbench.pools import EpochGroups, passage_texts, pool_dataset
    from trimbench.splade.triplets import CrossEncoderScores, convert_ce_scores, hard_negative_pools

    ce_table = {1: {10: 9.0, 11: 8.0, 20: 1.0, 21: 2.0, 22: 3.0, 23: 7.5, 24: -1.0, 25: 0.5},
                2: {10: 1.0, 20: 0.0}}
    with gzip.open(tmp_path / "s.pkl.gz", "wb") as handle:
        pickle.dump(ce_table, handle)
    convert_ce_scores(tmp_path / "s.pkl.gz", tmp_path / "ce.parquet")
    ce = CrossEncoderScores(tmp_path / "ce.parquet")
    pids = [10, 11, 20, 21, 22, 23, 24, 25, 26]  # 26: in the corpus, without a CE score
    corpus = pd.DataFrame({"doc_id": [str(p) for p in pids], "title": "", "text": [f"p{p}" for p in pids]})
    split = RetrievalSplit(corpus,
                           pd.DataFrame({"query_id": ["1", "2"], "text": ["q1", "q2"]}),
                           pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["10", "10"], "relevance": [1, 1]}))
    rows = [{"qid": 1, "pos": [10, 11], "neg": {"bm25": [20, 21, 23], "dense": [22, 24, 25, 20]}},
            {"qid": 2, "pos": [10], "neg": {}}]  # no negative: not trained on, as the seed
    settings = {"ce_margin": 3.0, "per_system": 3, "systems": None}
    seed, epochs = 5, 12
    for method, negatives in (("distil_splade", [20, 21, 23, 22, 24, 25]),
                              ("splade_max", [20, 21, 22, 24, 25])):  # 23 (7.5) > min(9, 8) - 3: filtered
        pools = hard_negative_pools(split, iter(rows), ce, method, settings, seed=seed)
        assert pools["query"].tolist() == ["q1"]
        table = pool_dataset(pools)
        pairs = EpochGroups(passage_texts(split), group_size=2, seed=seed, positives_from_first=True)
        shown = []
        for epoch in range(epochs):
            pairs.epoch = epoch
            batch = pairs(table[:1])
            shown.append((batch["positive"][0], batch["negative_1"][0], batch.get("label", [None])[0]))
        expected = [(f"p{pos}", f"p{neg}", ce_table[1][pos] - ce_table[1][neg] if method == "distil_splade" else None)
                    for pos, neg in _seed_rotation([10, 11], negatives, 0 + seed, epochs)]
        assert shown == expected
        # every negative of the pool is met once before any repeats
        assert len({neg for _, neg, _ in shown[:len(negatives)]}) == len(negatives)
    with pytest.raises(ValueError, match=r"no score for query 1 and passages \[26\]"):
        hard_negative_pools(split, iter([{"qid": 1, "pos": [10], "neg": {"bm25": [26]}}]), ce, "distil_splade",
                            settings, seed=seed)


def test_the_ce_filter_threshold_is_the_weakest_positive_less_the_margin(tmp_path):
    """train_max.py:140-169: a negative scoring above min(CE of the positives) - margin is dropped.
    Positives 9.0 and 6.0, margin 3: the threshold is 3.0, so 4.5 goes and 1.0 stays (from the
    strongest positive, 6.0, both would stay)."""
    import gzip
    import pickle

    from trimbench.splade.triplets import CrossEncoderScores, convert_ce_scores, select_negatives

    with gzip.open(tmp_path / "s.pkl.gz", "wb") as handle:
        pickle.dump({1: {10: 9.0, 11: 6.0, 20: 4.5, 21: 1.0, 22: 3.0}}, handle)
    convert_ce_scores(tmp_path / "s.pkl.gz", tmp_path / "ce.parquet")
    ce = CrossEncoderScores(tmp_path / "ce.parquet")
    row = {"qid": 1, "pos": [10, 11], "neg": {"bm25": [20, 21, 22]}}
    assert select_negatives(row, ce, 3.0, per_system=5, systems=None) == [21, 22]  # 3.0 is not above 3.0
    assert select_negatives(row, ce, None, per_system=5, systems=None) == [20, 21, 22]


def test_splade_pairs_rotate_the_positives_from_the_front_on_every_row():
    """The seed pops each query's first positive whatever the query's place in the file: row 1's
    positives in epochs 0, 1, 2 are its first, second, first (a per-row offset would start it at its
    second)."""
    from trimbench.pools import EpochGroups

    pairs = EpochGroups(None, 2, seed=5, positives_from_first=True)
    assert [pairs.draw(1, [10, 11], [20, 21], epoch)[0] for epoch in range(3)] == [10, 11, 10]
    assert [pairs.draw(2, [10, 11, 12], [20], epoch)[0] for epoch in range(4)] == [10, 11, 12, 10]


def test_the_training_set_train_splade_gets_shows_each_query_the_seeds_pair_of_each_epoch(tmp_path):
    """What scripts/train_splade.py hands the trainer (trimbench.splade.triplets.epoch_pairs), read
    epoch by epoch as the trainer reads it: every query (not only the first) walks its positives from
    the front and its shuffled negatives (seeded by its row) as the seed's loop does, with the
    distillation label of the pair shown."""
    from trimbench.data.io import RetrievalSplit
    from trimbench.pools import pool_frame
    from trimbench.splade.triplets import epoch_pairs

    pids = ["a", "b", "c", "n1", "n2", "n3", "n4"]
    split = RetrievalSplit(pd.DataFrame({"doc_id": pids, "title": "", "text": [f"p{p}" for p in pids]}),
                           pd.DataFrame({"query_id": ["1", "2"], "text": ["q1", "q2"]}),
                           pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["a", "c"], "relevance": [1, 1]}))
    position = {p: i for i, p in enumerate(pids)}
    ce = {"a": 9.0, "b": 8.5, "c": 7.0, "n1": 1.0, "n2": 2.0, "n3": 3.0, "n4": 4.0}
    queries = [("q1", ["a", "b"], ["n1", "n2", "n3"]), ("q2", ["c", "a"], ["n4", "n2", "n1", "n3"])]
    pools = pool_frame([{"query": q, "positives": [position[p] for p in pos], "negatives": [position[n] for n in neg],
                         "positive_scores": [ce[p] for p in pos], "negative_scores": [ce[n] for n in neg]}
                        for q, pos, neg in queries])
    assert pools["query"].tolist() == ["q1", "q2"]  # the rows as given: row i is query i
    seed, epochs = 7, 9
    dataset, pairs = epoch_pairs(pools, split, seed)
    shown = {q: [] for q, _, _ in queries}
    for epoch in range(epochs):
        pairs.epoch = epoch  # what pairs.callback() sets at each epoch's start
        for item in dataset:
            shown[item["query"]].append((item["positive"], item["negative_1"], item["label"]))
    for row, (query, positives, negatives) in enumerate(queries):
        expected = [(f"p{pos}", f"p{neg}", ce[pos] - ce[neg])
                    for pos, neg in _seed_rotation(positives, negatives, row + seed, epochs)]
        assert shown[query] == expected, query


# --- config checks -------------------------------------------------------------------------------


def _config(**run_changes) -> dict:
    import yaml

    config = yaml.safe_load((REPO / "tests" / "configs" / "tiny_splade.yaml").read_text())
    config["experiments"]["splade-tiny"]["variants"]["A"].update(run_changes)
    return config


@pytest.mark.parametrize(("change", "message"), [
    ({"lambda_q": -0.1}, "variants.A.lambda_q: -0.1 is less than the minimum of 0"),
    ({"model": "tinny"}, "unknown model 'tinny' (did you mean 'tiny'?)"),
    ({"model": "minilm"}, "model 'minilm' has no MLM head"),
    ({"methd": "splade_max"}, "unknown key 'methd' (did you mean 'method'?)"),
])
def test_bad_variants_fail_at_config_time_naming_the_key(change, message):
    from trimbench.config.prepare import prepare
    from trimbench.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        prepare(_config(**change))


def test_tied_head_accepts_an_encoder_without_one_and_distil_needs_ce_scores():
    from trimbench.config.prepare import prepare
    from trimbench.errors import ConfigError

    assert prepare(_config(model="minilm", mlm_head="tied"))["experiments"]["splade-tiny"]["variants"]["A"]["mlm_head"]
    config = _config()
    config["experiments"]["splade-tiny"]["train"]["hard_negatives"] = None
    with pytest.raises(ConfigError, match=r"train.hard_negatives: variants \['D'\] \(distil_splade\)"):
        prepare(config)
    config = _config()
    config["experiments"]["splade-tiny"]["ensembles"]["AD"]["variants"] = ["A", "E"]
    with pytest.raises(ConfigError, match="unknown variant 'E'"):
        prepare(config)


def test_comparison_matches_runs_on_method_model_and_lambdas_and_ensembles_on_their_name():
    from trimbench import scores as score_table
    from trimbench.config.prepare import load_file
    from trimbench.splade.report import comparison, headline

    published = pd.read_csv(REPO / "reference" / "splade.csv")
    config = load_file(REPO / "configs" / "splade.yaml", overrides={"smoke": True}, workdir=REPO)
    exp = config["experiments"]["splade"]  # smoke keeps runs B and F, their ensemble, MS MARCO dev and DL19
    exp["variants"]["B"]["published_model"] = "Luyu/co-condenser-marco"  # smoke drops hub ids
    exp["variants"]["F"]["published_model"] = "Luyu/co-condenser-marco"
    rows = [{"experiment": "splade", "track": "splade", "variant": v, "dataset": "msmarco-dev", "metric": "mrr@10",
             "value": value} for v, value in (("B", 0.38), ("F", 0.40), ("BEF", 0.41))]
    long = comparison(score_table.frame(rows), published, exp).set_index(["variant", "dataset", "metric"])
    assert long.loc[("B", "msmarco-dev", "mrr@10"), "published"] == pytest.approx(0.382)  # max, λq 0.0008
    assert long.loc[("F", "msmarco-dev", "mrr@10"), "published"] == pytest.approx(0.393)  # distil, λq 0.01
    assert long.loc[("BEF", "msmarco-dev", "mrr@10"), "published"] == pytest.approx(0.399)
    assert long.loc[("B", "msmarco-dev", "mrr@10"), "delta"] == pytest.approx(0.38 - 0.382)
    assert long.loc[("B", "msmarco-dev", "flops"), "published"] == pytest.approx(1.48)  # ours missing: kept
    top = headline(score_table.frame(rows), published, exp)
    assert (top["ours"], top["published"]) == (pytest.approx(0.38), pytest.approx(0.382))


def test_ms_marco_evaluation_sets_share_one_encoded_corpus():
    import yaml

    from trimbench.data.corpora import shared_corpora

    preset = yaml.safe_load((REPO / "configs" / "splade.yaml").read_text())
    corpus_of = shared_corpora(preset["experiments"]["splade"], preset["datasets"])
    assert corpus_of["trec-dl-2019"] == corpus_of["trec-dl-2020"] == corpus_of["msmarco-dev"] == "msmarco-dev"
    assert corpus_of["scifact"] == "scifact" and len(set(corpus_of.values())) == 14
    lee = {"source": "gensim", "builder": "lee_ict", "kind": "retrieval"}
    assert shared_corpora({"evaluation": {"datasets": ["a", "b"]}}, {"a": lee, "b": lee}) == {"a": "a", "b": "b"}


# --- train_splade: the protocol's loss, regulariser weights and optimiser in the trainer ----------


def _train_seen(tiny_bert_dir, tmp_path, method: str, semantics: str, rows: int) -> tuple[list, dict, list, object]:
    """A few steps of :func:`train_splade` in batches of 2 on ``rows`` copies of one triple (so
    every batch is the same, whatever the sampler draws), dropout off: each step's logs, what the
    trainer was given (its arguments, the optimiser, the steps), the triple's vectors before training and
    the trained model."""
    from transformers import TrainerCallback

    from trimbench.config.schema import validate_schema
    from trimbench.splade.model import train_splade

    class Seen(TrainerCallback):
        def __init__(self):
            self.logs, self.given = [], {}

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.logs.append(dict(logs))

        def on_train_end(self, args, state, control, optimizer=None, **kwargs):
            optimizer = getattr(optimizer, "optimizer", optimizer)
            self.given = {"eps": optimizer.param_groups[0]["eps"], "steps": state.global_step,
                          "drop_last": args.dataloader_drop_last}

    model = _tiny_splade(tiny_bert_dir)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    with torch.no_grad():
        start = [model.encode(t, convert_to_tensor=True, convert_to_sparse_tensor=False)
                 for t in (["a cat"] * 2, ["a cat sat"] * 2, ["stock prices"] * 2)]
    triple = {"query": ["a cat"], "positive": ["a cat sat"], "negative": ["stock prices"]}
    if method == "distil_splade":
        triple["label"] = [1.5]
    frame = pd.DataFrame({key: value * rows for key, value in triple.items()})
    train = {**validate_schema(_config())["experiments"]["splade-tiny"]["train"], "batch_size": 2, "devices": 1,
             "logging_steps": 1, "lr": 1e-5, "gradient_checkpointing": False}
    seen = Seen()
    train_splade(model, frame, method, 0.3, 0.2, semantics, train, tmp_path / "model", "fingerprint",
                 callbacks=[seen])
    return seen.logs, seen.given, start, model


def test_train_splade_distils_with_the_seeds_constant_weights_regulariser_and_optimiser(tiny_bert_dir, tmp_path):
    """The seed's distillation: λ as configured from the first step (0.3, 0.2), FLOPS(pos) + FLOPS(neg)
    (regularization.py:18-24 per document column), MarginMSE, AdamW eps 1e-6, the last partial
    batch dropped (train_distil.py:207): 5 rows in batches of 2 are 2 steps."""
    from trimbench.splade.model import flops_regulariser, is_sparse_encoder_folder, load_splade_model

    logs, given, start, trained = _train_seen(tiny_bert_dir, tmp_path, "distil_splade", "seed", rows=5)
    assert given == {"eps": 1e-6, "steps": 2, "drop_last": True}
    steps = [log for log in logs if "base_loss" in log]
    assert [(s["query_regularizer_weight"], s["document_regularizer_weight"]) for s in steps] == [(0.3, 0.2)] * 2
    q, p, n = start
    margin = (q * p).sum(-1) - (q * n).sum(-1)
    first = steps[0]
    assert first["base_loss"] == pytest.approx(torch.mean((margin - 1.5) ** 2).item(), rel=1e-3, abs=1e-4)
    assert first["query_regularizer_loss"] == pytest.approx(0.3 * flops_regulariser(q).item(), rel=1e-3, abs=1e-4)
    docs = flops_regulariser(p) + flops_regulariser(n)
    assert first["document_regularizer_loss"] == pytest.approx(0.2 * docs.item(), rel=1e-3, abs=1e-4)
    assert is_sparse_encoder_folder(tmp_path / "model")
    # the saved folder loads as the trained model (another sentence the training never saw)
    text = ["sparse retrieval of a cat"]
    saved = load_splade_model(tmp_path / "model", device="cpu")
    assert saved.max_seq_length == trained.max_seq_length == 16
    with torch.no_grad():
        assert torch.allclose(saved.encode(text, convert_to_tensor=True, convert_to_sparse_tensor=False),
                              trained.encode(text, convert_to_tensor=True, convert_to_sparse_tensor=False))


def test_train_splade_st6_ramps_the_weights_from_0(tiny_bert_dir, tmp_path):
    """sentence-transformers 6's semantics: λ 0 on the first step, the full (0.3, 0.2) once the first
    third of training is over; splade_max keeps the last partial batch (train_max.py:205): 3 rows in
    batches of 2 are 2 steps."""
    logs, given, start, _ = _train_seen(tiny_bert_dir, tmp_path, "splade_max", "st6", rows=3)
    assert given == {"eps": 1e-6, "steps": 2, "drop_last": False}
    steps = [log for log in logs if "base_loss" in log]
    assert [(s["query_regularizer_weight"], s["document_regularizer_weight"]) for s in steps] == [(0, 0), (0.3, 0.2)]
    assert steps[0]["query_regularizer_loss"] == 0 and steps[0]["document_regularizer_loss"] == 0
    q, p, n = start
    # in-batch CE: each query against both positives (one its own, the same text) and both negatives
    scores = torch.stack([(q * p).sum(-1), (q * p).sum(-1), (q * n).sum(-1), (q * n).sum(-1)], dim=1)
    ce = torch.nn.functional.cross_entropy(scores, torch.tensor([0, 1]))
    assert steps[0]["base_loss"] == pytest.approx(ce.item(), rel=1e-3, abs=1e-4)


def test_train_splade_hands_the_trainer_a_loss_gathered_over_the_configured_devices(tiny_bert_dir, tmp_path,
                                                                                   monkeypatch):
    """On two devices the trainer gets the gathered loss (in-batch negatives and FLOPS of the whole
    batch), with the λ the run asked for."""
    from trimbench.splade import model as splade_model

    given = {}
    monkeypatch.setattr(splade_model, "fine_tune", lambda model, frame, loss, *args, **kwargs: given.update(loss=loss))
    splade_model.train_splade(_tiny_splade(tiny_bert_dir), pd.DataFrame(), "splade_max", 0.3, 0.2, "seed",
                              {"devices": 2, "adam_epsilon": 1e-6, "drop_last": None}, tmp_path, "fingerprint")
    loss = given["loss"]
    assert loss.loss.gather_across_devices
    assert (loss.query_regularizer_weight, loss.document_regularizer_weight) == (0.3, 0.2)


# --- the seed's optimisation (T3.1, T3.4) -------------------------------------------------------


@pytest.mark.parametrize(("method", "batches"), [("distil_splade", 2), ("splade_max", 3)])
def test_seed_optimiser_eps_and_distil_loader_dropping_its_last_partial_batch(tiny_bert_dir, tmp_path, method,
                                                                               batches):
    """The schema's defaults give the trainer transformers.AdamW's eps 1e-6 (sentence-transformers
    2.1's fit) and, for distillation only, drop_last (train_distil.py:207): 5 rows in batches of 2."""
    import datasets
    from sentence_transformers import SparseEncoderTrainer, SparseEncoderTrainingArguments

    from trimbench.config.schema import validate_schema
    from trimbench.splade.model import seed_optimisation, splade_loss
    from trimbench.training import training_arguments

    train = {**validate_schema(_config())["experiments"]["splade-tiny"]["train"], "batch_size": 2}
    assert (train["adam_epsilon"], train["drop_last"]) == (1e-6, None)  # the tiny config leaves them alone
    model = _tiny_splade(tiny_bert_dir)
    rows = {"query": [f"q{i}" for i in range(5)], "positive": [f"p{i}" for i in range(5)],
            "negative": [f"n{i}" for i in range(5)]}
    if method == "distil_splade":
        rows["label"] = [0.5] * 5
    args = training_arguments({**train, "gradient_checkpointing": False}, tmp_path, SparseEncoderTrainingArguments,
                              **seed_optimisation(train, method))
    trainer = SparseEncoderTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_dict(rows),
                                   loss=splade_loss(model, method, 0.1, 0.1, "seed"))
    assert len(trainer.get_train_dataloader()) == batches
    assert trainer.create_optimizer().defaults["eps"] == 1e-6
    assert seed_optimisation({**train, "drop_last": False, "adam_epsilon": 1e-8}, "distil_splade") == {
        "adam_epsilon": 1e-8, "dataloader_drop_last": False}


def test_paper_preset_trains_the_seeds_30_epochs_and_the_documented_overlay_one():
    import yaml

    from trimbench.config.prepare import prepare
    from trimbench.config.schema import load_config

    preset = yaml.safe_load((REPO / "configs" / "splade.yaml").read_text())
    assert preset["experiments"]["splade"]["train"]["epochs"] == 30
    # as its header runs it: the preset, then the overlay (which names it in overlay_on)
    merged = load_config([REPO / "configs" / "splade.yaml", REPO / "configs" / "overlays" / "splade-1-epoch.yaml"])
    exp = prepare({**merged, "smoke": True}, REPO)["experiments"]["splade"]
    assert exp["train"]["epochs"] == 1 and "REDUCED" in exp["description"] and len(preset["experiments"]) == 1
    assert exp["train"]["batch_size"] <= 64 and exp["semantics"] == "seed"


def test_the_bm25_baseline_is_the_last_row_of_the_splade_table():
    from trimbench import scores as score_table
    from trimbench.config.prepare import prepare
    from trimbench.splade.report import splade_tables

    exp = prepare(_config())["experiments"]["splade-tiny"]
    published = pd.read_csv(REPO / "reference" / "splade.csv")
    ours = score_table.frame([{"variant": "A", "dataset": "lee-ict-retrieval", "metric": "mrr@10", "value": 0.4}])
    bm25 = score_table.frame([{"variant": "bm25", "dataset": "lee-ict-retrieval", "metric": m, "value": v}
                              for m, v in (("mrr@10", 0.61), ("ndcg@10", 0.62))])
    out = splade_tables(ours, published, exp, bm25)
    last = out["markdown"].strip().splitlines()[-1]
    assert last.startswith("| bm25") and "BM25" in last and re.findall(r"\b0\.6[12]\b", last) == ["0.61", "0.62"]
    long = pd.read_csv(io.StringIO(out["csv"]))
    assert set(long[long["variant"] == "bm25"]["metric"]) == {"mrr@10", "ndcg@10"}
    assert "bm25" not in splade_tables(ours, published, exp)["markdown"]


# --- the integer vectors as pyserini reads them: values of each row ------------------------------


def test_quantise_rounds_a_float32_weight_times_the_factor_in_float64():
    """The encoder's weights come as float32 (``_to_scipy``): 0.015 in float32 is 0.0149999997, so
    round(w × 100) is 1; the product taken in float32 would round to 1.5 first, then 2."""
    weights = np.array([[0.015, 0.0, 0.2]], dtype=np.float32)
    assert sparse.quantize(weights, 100).toarray().tolist() == [[1, 0, 20]]
    assert sparse.quantize(sp.csr_matrix(weights), 100).toarray().tolist() == [[1, 0, 20]]


def test_term_maps_are_each_rows_own_terms_and_the_collection_needs_an_id_per_row(tmp_path):
    matrix = sp.csr_matrix(np.array([[0, 3, 0], [2, 0, 5], [0, 0, 0]], dtype=np.int32))
    maps = sparse.term_maps(matrix, ["a", "b", "c"])
    assert maps == [{"b": 3}, {"a": 2, "c": 5}, {}] and all(type(w) is int for m in maps for w in m.values())
    folder = tmp_path / "made" / "collection"  # parents made
    sparse.write_vector_collection(["x", "y", "z"], matrix, ["a", "b", "c"], folder)
    assert [json.loads(line)["vector"] for line in (folder / "docs.jsonl").read_text().splitlines()] == maps
    with pytest.raises(ValueError, match="longer than argument 1"):  # not a silent cut
        sparse.write_vector_collection(["x", "y"], matrix, ["a", "b", "c"], tmp_path / "two")


def test_a_sparse_encoder_folder_is_one_whose_modules_pool_with_splade(tmp_path):
    from trimbench.splade.model import is_sparse_encoder_folder

    (tmp_path / "splade").mkdir()
    (tmp_path / "splade" / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "type": "sentence_transformers.sparse_encoder.modules.MLMTransformer"},
        {"idx": 1, "name": "1", "type": "sentence_transformers.sparse_encoder.modules.SpladePooling"}]))
    (tmp_path / "dense").mkdir()
    (tmp_path / "dense" / "modules.json").write_text(json.dumps([
        {"idx": 1, "name": "1", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "bare").mkdir()  # a plain checkpoint: no modules.json
    assert is_sparse_encoder_folder(tmp_path / "splade") and is_sparse_encoder_folder(str(tmp_path / "splade"))
    assert not is_sparse_encoder_folder(tmp_path / "dense") and not is_sparse_encoder_folder(tmp_path / "bare")
