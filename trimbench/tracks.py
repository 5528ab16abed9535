"""The table of tracks: one line per track, each the face its package gives (trimbench.face.Track).
Config, rules and report read it; what a track is lives in its package. A new track is a package with
its face and one line here (docs/developing.md, "Adding a track").
"""

from __future__ import annotations

import collections.abc
import typing

from trimbench.dense.face import HOMEDEPOT, RETRIEVAL, STS
from trimbench.electra.face import ELECTRA
from trimbench.face import Track
from trimbench.profile.face import PROFILE
from trimbench.splade.face import SPLADE


def face_problems(track) -> list[str]:
    """What ``track`` lacks of the whole face: each field of :class:`Track` present and of its type
    (a callable where the face says Callable, a mapping of claim ids to checks)."""
    if not isinstance(track, Track):
        return [f"{track!r} is not a trimbench.face.Track"]
    problems = []
    for field, kind in typing.get_type_hints(Track).items():
        value = getattr(track, field, None)
        origin = typing.get_origin(kind) or kind
        if origin is collections.abc.Callable:
            if not callable(value):
                problems.append(f"{field} is not callable")
        elif origin is collections.abc.Mapping:
            item = typing.get_origin(typing.get_args(kind)[1]) or typing.get_args(kind)[1]
            fits = callable if item is collections.abc.Callable else lambda entry, item=item: isinstance(entry, item)
            if not isinstance(value, collections.abc.Mapping) or not all(
                    isinstance(key, str) and fits(entry) for key, entry in value.items()):
                what = "claim ids to checks" if item is collections.abc.Callable else f"names to {item.__name__}s"
                problems.append(f"{field} is not a mapping of {what}")
        elif not isinstance(value, origin) or (origin is str and not value):
            problems.append(f"{field} is not a {origin.__name__}" + (" (or is empty)" if origin is str else ""))
    return problems


def table(*tracks: Track) -> dict[str, Track]:
    """The tracks by name, each with the whole face; two tracks of one name, or a face with a gap, is
    an error naming the track and what it lacks."""
    out: dict[str, Track] = {}
    for track in tracks:
        problems = face_problems(track)
        name = getattr(track, "name", repr(track))
        if problems:
            raise TypeError(f"track '{name}' lacks part of its face (trimbench.face.Track): {'; '.join(problems)}")
        if name in out:
            raise ValueError(f"two tracks are named '{name}'")
        out[name] = track
    return out


TRACKS = table(STS, RETRIEVAL, HOMEDEPOT, SPLADE, ELECTRA, PROFILE)


def track_of(exp: dict) -> Track:
    """An experiment's track (its ``track`` is one of the table's: the schema's enum says so)."""
    return TRACKS[exp["track"]]


def names(**flags: bool) -> tuple[str, ...]:
    """The tracks whose face has every one of the boolean ``flags`` as given (``names(bm25=True)``)."""
    return tuple(name for name, track in TRACKS.items()
                 if all(getattr(track, flag) == wanted for flag, wanted in flags.items()))
