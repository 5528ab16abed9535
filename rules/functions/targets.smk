# Input functions and parse-time tables of rules/targets.smk.
from collections import namedtuple

#: outputs(name), stage_targets(name, stage), scores(name) and views(track) of a track
Track = namedtuple("Track", "outputs stage_targets scores views")


def no_views(track):
    return []


def track_of(name):
    return TRACKS[EXPERIMENTS[name]["track"]]


def all_targets():
    """Every output of the run. Under `--config only=`, the views across experiments that would be
    rebuilt from a subset (a track's views and claims where some of its experiments are left
    out, the scoreboard where any is) are left as they are on disk."""
    tracks = sorted({exp["track"] for exp in EXPERIMENTS.values()} - TRACKS_LEFT_OUT)
    whole = [name for name in EXPERIMENTS if EXPERIMENTS[name]["track"] in tracks]
    return (
        [path for name in EXPERIMENTS for path in track_of(name).outputs(name)]
        + [path for track in tracks for path in TRACKS[track].views(track)]
        + [path for name in EXPERIMENTS for path in exported_models(name)]
        + [path for name in whole for path in claims_outputs(name)]
        + ([] if TRACKS_LEFT_OUT else SCOREBOARD)
    )


def stage_targets(stage):
    """Targets of one stage over every experiment."""
    return [
        path
        for name in EXPERIMENTS
        for path in track_of(name).stage_targets(name, stage)
    ]
