from snakemake.utils import min_version

min_version("9.0")


# No `configfile:`: rules/common.smk reads config.yaml, or the --configfile files instead.


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/dense.smk"
include: "rules/splade.smk"
include: "rules/electra.smk"
include: "rules/export.smk"
include: "rules/profile.smk"
include: "rules/report.smk"
# Last: its stage rules (all_data, ...) take their inputs from every track's functions when they
# are defined. The other files' order does not matter: their input functions run at DAG time.
include: "rules/targets.smk"


rule all:
    default_target: True
    input:
        all_targets(),
