"""Exported trimmed models: standalone, k layers, truncate_dim d, the grid's (k, d) cell exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from trimbench.config import prepare as tb_config
from trimbench.encoding import encode_layers
from trimbench.errors import ConfigError
from trimbench.export import PROVENANCE_FILE, export_trimmed, main
from trimbench.models import load_sentence_model, read_shape

REPO = Path(__file__).resolve().parent.parent
TEXTS = [
    "The cat sat on the mat.",
    "A much longer sentence about trimmed text embeddings, layers, dimensions and how fast they run.",
    "Short.",
    "Bushfires burned across New South Wales as firefighters fought through the night.",
    "Matryoshka embeddings keep their quality when truncated to the first few dimensions.",
]


@pytest.mark.parametrize(("which", "pooling", "layers", "dim"), [
    ("minilm", None, 4, 128),   # the model's own mean pooling and Normalize module
    ("tiny", "cls", 2, 16),     # pooling replaced, as an experiment's `pooling` does
    ("tiny", "mean", 0, 8),     # k = 0: the embedding output alone
])
def test_exported_model_equals_the_grid_cell(which, pooling, layers, dim, minilm_dir, tiny_bert_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    source = minilm_dir if which == "minilm" else tiny_bert_dir
    out = export_trimmed(source, layers, dim, tmp_path / "exported", pooling=pooling, max_seq_length=64)

    full = load_sentence_model(source, pooling=pooling, max_seq_length=64, device="cpu")
    cell = encode_layers(full, TEXTS, [layers], batch_size=2, max_dim=dim, show_progress=False)[0]

    standalone = SentenceTransformer(str(out), device="cpu")  # plain loading, no trimbench
    embeddings = standalone.encode(TEXTS, batch_size=3, convert_to_numpy=True)
    assert embeddings.shape == (len(TEXTS), dim)
    np.testing.assert_allclose(embeddings, cell, atol=1e-5, rtol=0)
    assert read_shape(out).layers == layers  # physically cut: the blocks are gone from disk too
    assert len(standalone[0].auto_model.encoder.layer) == layers
    assert json.loads((out / PROVENANCE_FILE).read_text())["source_layers"] == read_shape(source).layers


def test_cli_exports_and_names_a_cell_outside_the_model(tiny_bert_dir, tmp_path, capsys):
    main(["--model", str(tiny_bert_dir), "--layers", "1", "--dim", "8", "--out", str(tmp_path / "ok")])
    assert read_shape(tmp_path / "ok").layers == 1
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", str(tiny_bert_dir), "--layers", "4", "--dim", "8", "--out", str(tmp_path / "deep")])
    assert exit_info.value.code == 2
    assert "cannot keep 4 layers of a 3-layer model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--model", str(tiny_bert_dir), "--layers", "2", "--dim", "33", "--out", str(tmp_path / "wide")])
    assert "cannot truncate a 32-dim model to 33 dims" in capsys.readouterr().err
    assert not (tmp_path / "deep").exists() and not (tmp_path / "wide").exists()


@pytest.fixture
def default() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.mark.parametrize(("export", "message"), [
    ({"cells": [[7, 64]]}, r"experiments\.sts-v1\.export\.cells: \[7, 64\] keeps 7 layers; model 'minilm' has 6"),
    ({"cells": [[4, 512]]}, r"experiments\.sts-v1\.export\.cells: \[4, 512\] truncates to 512 dims; .* width 384"),
    ({"cells": [[4, 0]]}, r"experiments\.sts-v1\.export\.cells: \[4, 0\] truncates to 0 dims"),
    ({"cells": [[4]]}, r"experiments\.sts-v1\.export\.cells\.0"),
    ({"cells": [[4, 64]], "variants": ["separate"]}, r"experiments\.sts-v1\.export\.variants\.0: 'separate' is not"),
])
def test_export_config_errors_name_the_key(default, export, message):
    default["experiments"]["sts-v1"]["export"] = export
    with pytest.raises(ConfigError, match=message):
        tb_config.prepare(default, REPO)


def test_export_variants_must_be_methods_of_the_experiment(default):
    default["experiments"]["sts-v2"]["export"] = {"cells": [[2, 64]], "variants": ["pretrained"]}
    with pytest.raises(ConfigError, match=r"experiments\.sts-v2\.export\.variants: \['pretrained'\] are not among"):
        tb_config.prepare(default, REPO)
