"""The table of tracks (trimbench/tracks.py): every track has the whole face, the table refuses one
that does not, and the schema and the rules' dispatch name the same tracks."""

from __future__ import annotations

import re
import typing
from dataclasses import fields, replace
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO

from trimbench import tracks
from trimbench.face import Track

SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())


@pytest.mark.parametrize("track", tracks.TRACKS.values(), ids=lambda track: track.name)
def test_every_track_has_the_whole_face(track):
    hints = typing.get_type_hints(Track)
    for field in fields(Track):
        value = getattr(track, field.name)
        if hints[field.name] is bool:
            assert isinstance(value, bool), field.name
        elif hints[field.name] is str:
            assert isinstance(value, str) and value, field.name
        elif field.name == "claim_checks":
            # the trim profile reproduces no work: it has no claim to check
            assert (value or track.name == "profile") and all(callable(c) for c in value.values()), field.name
        else:
            assert callable(value), field.name
    assert tracks.face_problems(track) == []
    assert tracks.TRACKS[track.name] is track


@pytest.mark.parametrize("field", [field.name for field in fields(Track)])
def test_a_face_whose_field_is_of_the_wrong_kind_is_named(field):
    """The table's own check, field by field (the table refuses a gap when trimbench.tracks is
    imported, so the tracks above pass it by construction): a value of the wrong kind in any field
    is named (0: no name, flag, callable nor mapping)."""
    assert any(problem.startswith(f"{field} ") for problem in
               tracks.face_problems(replace(tracks.TRACKS["splade"], **{field: 0})))


@pytest.mark.parametrize("gap", ["smoke", "claim_views", "bm25", "work"])
def test_a_track_lacking_part_of_its_face_is_refused_naming_it(gap):
    sixth = replace(tracks.TRACKS["splade"], name="sixth", **{gap: None})
    with pytest.raises(TypeError, match=rf"track 'sixth' lacks part of its face.*{gap} is not"):
        tracks.table(*tracks.TRACKS.values(), sixth)


def test_a_claim_check_that_is_not_a_function_is_refused():
    sixth = replace(tracks.TRACKS["splade"], name="sixth", claim_checks={"sixth-claim": "not a check"})
    with pytest.raises(TypeError, match="claim_checks is not a mapping of claim ids to checks"):
        tracks.table(sixth)


def test_only_a_track_and_one_per_name():
    duck = SimpleNamespace(**{field.name: getattr(tracks.TRACKS["splade"], field.name) for field in fields(Track)})
    with pytest.raises(TypeError, match="is not a trimbench.face.Track"):
        tracks.table(duck)
    with pytest.raises(ValueError, match="two tracks are named 'splade'"):
        tracks.table(tracks.TRACKS["splade"], tracks.TRACKS["splade"])


def test_the_schema_names_the_tracks_of_the_table():
    """The experiment's ``track`` enum lists every track; the tracks with a shape of their own (not
    variants) each have their branch of the experiments' if-chain."""
    assert sorted(SCHEMA["$defs"]["experiment"]["properties"]["track"]["enum"]) == sorted(tracks.TRACKS)
    branch, own_shape = SCHEMA["properties"]["experiments"]["additionalProperties"], []
    while "if" in branch:
        own_shape.append(branch["if"]["properties"]["track"]["const"])
        branch = branch["else"]
    assert sorted(own_shape) == sorted(tracks.names(grid_variants=False))


def test_the_rules_dispatch_names_the_tracks_of_the_table():
    """rules/targets.smk binds each track to its rule file's outputs: the same tracks."""
    text = (REPO / "rules" / "targets.smk").read_text()
    assert sorted(re.findall(r'^    "([^"]+)": Track\(', text, re.MULTILINE)) == sorted(tracks.TRACKS)


#: what asks a track by name: a comparison of a track with a literal, or a hand-kept tuple of tracks
TRACK_BY_NAME = re.compile(r"""track"?\]?\s*(==|!=|not in|in)\s*[(\["']|\b[A-Z_]+_TRACKS\b""")


def test_nothing_outside_the_track_packages_asks_a_track_by_name():
    """Config, report, the shared modules, the rules and the scripts read the table; only a track's
    package knows its own name (a sixth track must not need an edit here)."""
    track_packages = {REPO / "trimbench" / name for name in ("dense", "splade", "electra")}
    files = [*(REPO / "trimbench").rglob("*.py"), *(REPO / "rules").rglob("*.smk"), *(REPO / "scripts").glob("*.py")]
    asking = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
              for path in files if not track_packages & set(path.parents)
              for number, line in enumerate(path.read_text().splitlines(), 1) if TRACK_BY_NAME.search(line)]
    assert asking == []


def test_names_picks_the_tracks_by_their_face():
    assert tracks.names(bm25=True) == ("2dmse-retrieval", "homedepot", "splade")
    assert tracks.names(layer_dim_cost=False) == ("splade", "profile")
    assert tracks.names(grid_variants=True, dense_retrieval=False) == ("2dmse-sts",)
