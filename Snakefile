from snakemake.utils import min_version

min_version("9.0")


# No `configfile:`: rules/common.smk reads config.yaml, or the --configfile files instead.


report: "report/workflow.rst"


include: "rules/common.smk"
# Before the stage files: their stage target rules call into this track's functions.
include: "rules/electra_common.smk"
include: "rules/splade_common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/encode.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/electra.smk"
include: "rules/retrieval.smk"
include: "rules/export.smk"
include: "rules/splade.smk"


rule all:
    default_target: True
    input:
        all_targets(),
