# The only track dispatch: TRACKS binds each track (the config's `track`) to its outputs, stage
# targets, score tables and cross-experiment views, for `rule all`, collect_scores and the stage
# rules (all_data, all_models, ...). Included last: the stage rules' inputs are computed when they
# are defined (at parse time), from functions of every track's rule file.


include: "functions/targets.smk"


TRACKS = {
    "2dmse-sts": Track(
        grid_outputs, dense_stage_targets, dense_scores, dense_track_outputs
    ),
    "2dmse-retrieval": Track(
        grid_outputs, dense_stage_targets, dense_scores, dense_track_outputs
    ),
    "homedepot": Track(
        homedepot_outputs, dense_stage_targets, dense_scores, dense_track_outputs
    ),
    "splade": Track(splade_outputs, splade_stage_targets, splade_scores, no_views),
    "electra": Track(
        electra_outputs, electra_stage_targets, fine_tuning_scores, no_views
    ),
    "profile": Track(profile_outputs, profile_stage_targets, profile_scores, no_views),
}


rule all_data:
    input:
        stage_targets("data"),


rule all_negatives:
    input:
        stage_targets("negatives"),


rule all_models:
    input:
        stage_targets("models"),


rule all_embeddings:
    input:
        stage_targets("embeddings"),


rule all_scores:
    input:
        stage_targets("scores"),


rule all_exported:
    input:
        [path for name in EXPERIMENTS for path in exported_models(name)],
