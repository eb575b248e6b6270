# kafka-log-analytics — `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYTEST_ARGS ?=
# make test runs the suite on this many processes (pytest-xdist), a file's tests on one of them
TEST_WORKERS ?= 2
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

STAMP := $(VENV)/.installed
SOURCES_FOR_INSTALL := pyproject.toml setup.py $(wildcard kafka_format/records/*.c kafka_format/records/*.h kafka_format/log/cleaner/*.c kafka_format/registry/*.c kafka_format/registry/*.h)

.PHONY: help setup lint test test-reference test-cluster conformance conformance-tiered demo bench bench-scale fuzz sanitize sanitize-threads package samples clean docs docs-cli

help: ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): $(SOURCES_FOR_INSTALL)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel
	$(PIP) install --quiet -e '.[spark,test,docs,tiered,iceberg]'
	$(PY) -m kafka_format.spark.jars    # delta-spark's and hadoop-aws's jars resolved once (Ivy's cache ~/.ivy2.5.2), recorded in ~/.cache/kafka-log-analytics/jars
	touch $(STAMP)

setup: $(STAMP) ## Create .venv and install the package (with its compiled decoder) and test deps

lint: $(STAMP) ## ruff over the package, the jobs and the tests, then mypy over the package and the jobs
	$(VENV)/bin/ruff check kafka_format jobs tests data_samples
	$(VENV)/bin/mypy    # files and settings: [tool.mypy] in pyproject.toml

test: $(STAMP) lint ## Lint, then run the test suite (fast decoder; reference decoder parity included)
	$(PY) -m pytest --ignore=tests/conformance -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)   # conformance: make conformance (own conftest, real brokers)

test-reference: $(STAMP) ## Run the format tests with the reference decoder forced
	KAFKA_FORMAT_DECODER=reference $(PY) -m pytest tests/format $(PYTEST_ARGS)

test-cluster: $(STAMP) ## Distributed tests: local-cluster and a standalone cluster started from the pyspark install
	$(PY) -m pytest -m cluster tests/spark $(PYTEST_ARGS)

conformance: $(STAMP) ## Compare with real Apache Kafka brokers, a tiered-storage one among them (jars fetched by Maven on first run); writes CONFORMANCE.md
	$(PY) -m pytest -m conformance tests/conformance $(PYTEST_ARGS)

conformance-tiered: $(STAMP) ## Only the tiered-storage broker (Kafka 4.3.1, LocalTieredStorage) and its tests, about 30 s with the jars in ~/.m2; writes CONFORMANCE.md
	$(PY) -m pytest -m conformance tests/conformance/test_tiered.py $(PYTEST_ARGS)

demo: $(STAMP) ## Run the product on data_samples/ on the local engine and local Spark; print times and where results are
	$(VENV)/bin/klogs demo --out build/demo

bench: $(STAMP) ## Decode/plan/scan, the jobs and typed export on both engines: the report in BENCHMARKS.md (the one it replaces moved to BENCHMARKS-history.md)
	$(PY) tests/benchmarks/run.py --out BENCHMARKS.md

SCALE_SIZES ?= 1g,4g,16g
bench-scale: $(STAMP) ## Every job on generated 1/4/16 GB log dirs (local[2], 1 GB driver), its section of BENCHMARKS.md replaced (the old one to BENCHMARKS-history.md)
	$(PY) tests/benchmarks/scale.py --sizes $(SCALE_SIZES) --out BENCHMARKS.md

fuzz: $(STAMP) ## Longer coverage-guided fuzzing run
	$(PY) -m pytest -m fuzz_long tests/fuzz $(PYTEST_ARGS)

sanitize: $(STAMP) ## The C parsers built with ASan + UBSan (in build/sanitize), under the format, registry and fuzz tests
	$(PY) tests/sanitize.py -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

sanitize-threads: $(STAMP) ## The C parsers and kernels built with ThreadSanitizer, under the tests that run them on several threads
	$(PY) tests/sanitize.py --thread $(PYTEST_ARGS)

samples: $(STAMP) ## Regenerate data_samples/ with the writer
	$(PY) data_samples/generate.py

package: $(STAMP) ## Build the wheel and a packed virtualenv for spark-submit --archives
	$(PY) -m pip wheel --no-deps -w dist .
	$(PY) -m kafka_format.cli.package --wheel-dir dist --out dist/kla-env.tar.gz

docs: $(STAMP) ## Build the documentation site (MkDocs, strict: broken links fail) into build/site
	$(VENV)/bin/mkdocs build --strict --site-dir build/site

docs-cli: $(STAMP) ## Regenerate docs/cli.md from the argparse definitions
	$(PY) -m kafka_format.cli.reference --out docs/cli.md

clean: ## Remove build outputs (keeps .venv)
	rm -rf build dist *.egg-info kafka_format/*.so kafka_format/records/*.so
