# Input functions and parse-time tables of rules/targets.smk.
from collections import namedtuple

#: outputs(name), stage_targets(name, stage), scores(name) and views(track) of a track
Track = namedtuple("Track", "outputs stage_targets scores views")


def no_views(track):
    return []


def track_of(name):
    return TRACKS[EXPERIMENTS[name]["track"]]


def all_targets():
    tracks = sorted({exp["track"] for exp in EXPERIMENTS.values()})
    return (
        [path for name in EXPERIMENTS for path in track_of(name).outputs(name)]
        + [path for track in tracks for path in TRACKS[track].views(track)]
        + [path for name in EXPERIMENTS for path in exported_models(name)]
        + [path for name in EXPERIMENTS for path in claims_outputs(name)]
        + SCOREBOARD
    )


def stage_targets(stage):
    """Targets of one stage over every experiment."""
    return [
        path
        for name in EXPERIMENTS
        for path in track_of(name).stage_targets(name, stage)
    ]
