"""The profile's full-model cells of the packaged all-MiniLM-L6-v2 on the local STS-B test and SciFact
test equal MTEB's published scores (reference/mteb.csv) within 1e-4: its own pooling and normalisation,
cosine, ``title + " " + text`` documents, every cut from the same pass."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from trimbench.data.beir import read_beir_folder
from trimbench.profile.run import Settings, profile_retrieval, profile_sts

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "mteb.csv"


def _mteb(dataset: str) -> float:
    table = pd.read_csv(REFERENCE)
    return table[(table["model"] == "sentence-transformers/all-MiniLM-L6-v2") & (table["dataset"] == dataset)][
        "value"].item()


def _full_model_settings(repeats: int = 1) -> Settings:
    return Settings(layers=[6], dims=[384], precisions=["float32"], rescore_multiplier=0, funnel=[],
                    repeats=repeats, batch_size=32, speed_texts=64)


@pytest.mark.realdata
def test_full_model_cell_on_the_local_stsb_test_is_mtebs_score(shared_data, minilm_dir):
    from trimbench.models import load_sentence_model

    frame = pd.read_json(shared_data / "stsb" / "test.jsonl", lines=True)
    assert len(frame) == 1379
    table, _ = profile_sts(load_sentence_model(minilm_dir, device="cpu"), frame, _full_model_settings())
    assert table["value"].item() == pytest.approx(_mteb("stsb"), abs=1e-4)


@pytest.mark.realdata
@pytest.mark.slow  # the 5,183 abstracts at 256 tokens: minutes on a CPU core
def test_full_model_cell_on_the_local_scifact_test_is_mtebs_score(shared_data, minilm_dir):
    from trimbench.models import load_sentence_model

    split = read_beir_folder(shared_data / "scifact", "test")
    table, _, _, _ = profile_retrieval(load_sentence_model(minilm_dir, device="cpu"), split,
                                       _full_model_settings(), ignore_identical_ids=True)
    assert table["value"].item() == pytest.approx(_mteb("scifact"), abs=1e-4)
