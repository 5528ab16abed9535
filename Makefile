# The README's two commands: `make demo` (embedded default end to end) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.trimbench-installed

.PHONY: demo test env lint report bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# The CPU torch wheel first: a bare torch requirement would pull several GB of CUDA packages.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e ".[dev]"
	touch $(STAMP)

env: $(STAMP)

# The workflow through trimbench.warm: one interpreter imports torch & co. once for every job.
demo:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory env && \
	$(BIN)/python -m trimbench.warm && \
	$(BIN)/snakemake --report results/report.html && \
	echo "make demo: results/report.html ready; wall time $$(( $$(date +%s) - start )) s (set-up included)"

test: env
	$(BIN)/python -m pytest -ra

# The performance figures (README, "Performance"); each benchmark takes --help for bigger runs.
BENCHMARKS := grid_eval cut_speed export_speed workflow_overhead warm_start train_throughput encode_memory search_speed

bench: env
	@for name in $(BENCHMARKS); do echo "== benchmarks/$$name.py"; $(BIN)/python benchmarks/$$name.py || exit 1; done

lint: env
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check .
	$(BIN)/ruff check .

report: env
	$(BIN)/snakemake --report results/report.html

clean:
	rm -rf results .snakemake
