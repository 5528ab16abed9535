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
from trimbench.config import schema as config_schema
from trimbench.config import schema_docs
from trimbench.errors import ConfigError
from trimbench.face import ExperimentSchema, Track

#: the packages of the table's tracks (each face's experiment_schema lies in its package)
TRACK_PACKAGES = {track.experiment_schema.file.parent for track in tracks.TRACKS.values()}


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
        elif field.name == "presets":
            assert value and all((REPO / path).is_file() for files in value.values() for path in files), field.name
        elif field.name == "experiment_schema":
            assert isinstance(value, ExperimentSchema) and value.file.parent in TRACK_PACKAGES, field.name
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


def test_the_schema_routes_each_track_to_the_shape_its_face_names():
    """The assembled schema: every track of the table is a valid ``track``, and an experiment of it is
    held to its own shape (a key only another shape takes is refused naming its allowed keys)."""
    schema = config_schema.load_schema()
    assert sorted(schema["$defs"]["experiment"]["properties"]["track"]["enum"]) == sorted(tracks.TRACKS)
    validator = config_schema._validator_filling_defaults()(schema)
    for name, track in tracks.TRACKS.items():
        definition = schema["$defs"][track.experiment_schema.definition]
        errors = list(validator.iter_errors({"datasets": {"d": {}}, "models": {"m": {}},
                                             "experiments": {"x": {"track": name, "not-a-key": 1}}}))
        unknown = [error for error in errors if error.validator == "additionalProperties"
                   and list(error.absolute_path) == ["experiments", "x"]]
        assert unknown and unknown[0].schema is definition, name


def _toy_shape(tmp_path, also_defines=()):
    file = tmp_path / "experiment.schema.yaml"
    file.write_text(yaml.safe_dump({"$defs": {**dict.fromkeys(also_defines, {"type": "object"}), "toy_experiment": {
        "type": "object", "additionalProperties": False, "required": ["track", "words"],
        "description": "a toy track's experiment",
        "properties": {"track": {"description": "toy: the toy track"},
                       "words": {"type": "integer", "minimum": 1, "description": "words per text, at least"}}}}}))
    return ExperimentSchema(file, "toy_experiment")


def test_a_new_tracks_keys_are_validated_and_in_the_reference(tmp_path):
    """A sixth track with its own shape: its experiments are validated against it, and the generated
    configuration reference has a section with its keys (the gap the review found silent)."""
    toy = replace(tracks.TRACKS["splade"], name="toy", experiment_schema=_toy_shape(tmp_path))
    table = tracks.table(*tracks.TRACKS.values(), toy)
    schema = config_schema.assemble_schema(yaml.safe_load(config_schema.SCHEMA_PATH.read_text()), table)
    validator = config_schema._validator_filling_defaults()(schema)
    config = {"datasets": {"d": {}}, "models": {"m": {}}, "experiments": {"x": {"track": "toy", "words": 0}}}
    assert [error.message for error in validator.iter_errors(config)
            if error.absolute_path[0] == "experiments"] == ["0 is less than the minimum of 1"]
    reference = schema_docs.reference(schema)
    assert "## `experiments` of track toy" in reference
    assert "| `experiments.<name>.words` | integer, required |  | ≥ 1 | words per text, at least |" in reference


def test_a_shape_missing_from_its_file_or_defined_twice_is_named(tmp_path):
    base = yaml.safe_load(config_schema.SCHEMA_PATH.read_text())
    missing = replace(tracks.TRACKS["splade"], name="toy",
                      experiment_schema=ExperimentSchema(_toy_shape(tmp_path).file, "toy_shape"))
    with pytest.raises(ValueError, match="track toy: its experiment_schema names definition 'toy_shape', which .* "
                                         "does not define under \\$defs"):
        config_schema.assemble_schema(base, tracks.table(*tracks.TRACKS.values(), missing))
    clash = replace(tracks.TRACKS["splade"], name="toy", experiment_schema=_toy_shape(tmp_path, ["negatives"]))
    with pytest.raises(ValueError, match="definition 'negatives' is defined twice: in .*config.schema.yaml and "):
        config_schema.assemble_schema(base, tracks.table(*tracks.TRACKS.values(), clash))


def test_an_unknown_track_is_refused_naming_the_tables_tracks():
    config = {"datasets": {}, "models": {}, "experiments": {"x": {"track": "colbert"}}}
    with pytest.raises(ConfigError, match=r"experiments.x.track: 'colbert' is not one of \[") as error:
        config_schema.validate_schema(config)
    assert all(f"'{name}'" in str(error.value) for name in tracks.TRACKS)


def test_the_rules_dispatch_names_the_tracks_of_the_table():
    """rules/targets.smk binds each track to its rule file's outputs: the same tracks."""
    text = (REPO / "rules" / "targets.smk").read_text()
    assert sorted(re.findall(r'^    "([^"]+)": Track\(', text, re.MULTILINE)) == sorted(tracks.TRACKS)


#: what asks a track by name: a comparison of a track with a literal, or a hand-kept tuple of tracks
TRACK_BY_NAME = re.compile(r"""track"?\]?\s*(==|!=|not in|in)\s*[(\["']|\b[A-Z_]+_TRACKS\b""")


def test_nothing_outside_the_track_packages_asks_a_track_by_name():
    """Config, report, the shared modules, the rules and the scripts read the table; only a track's
    package knows its own name (a sixth track must not need an edit here)."""
    track_packages = TRACK_PACKAGES
    files = [*(REPO / "trimbench").rglob("*.py"), *(REPO / "rules").rglob("*.smk"), *(REPO / "scripts").glob("*.py")]
    asking = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
              for path in files if not track_packages & set(path.parents)
              for number, line in enumerate(path.read_text().splitlines(), 1) if TRACK_BY_NAME.search(line)]
    assert asking == []


@pytest.mark.parametrize("flag", [field.name for field in fields(Track) if field.type in ("bool", bool)])
def test_names_picks_the_tracks_by_their_face(flag):
    """Each flag, on and off, picks the table's tracks whose face says so, in the table's order."""
    for wanted in (True, False):
        assert tracks.names(**{flag: wanted}) == tuple(
            name for name, track in tracks.TRACKS.items() if getattr(track, flag) is wanted)
    both = tracks.names(**{flag: True, "bm25": True})
    assert set(both) == set(tracks.names(**{flag: True})) & set(tracks.names(bm25=True))
