# rebalance-monitor — one command per task. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
JARS := .cache/jars
MVN := mvn -B -q -s jvm/settings.xml

.PHONY: help setup jars test test-unit test-oracle check fmt bench demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: $(VENV)/.installed jars ## create .venv, install the package with dev extras, resolve the JVM jars

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

jars: $(JARS)/oracle/.resolved $(JARS)/broker/.resolved $(JARS)/clients/.resolved $(JARS)/spark/.resolved ## resolve the Maven jars into .cache/jars (fast when warm)

$(JARS)/%/.resolved: jvm/%/pom.xml
	@echo "resolving $* jars with mvn into $(JARS)/$*"
	@rm -rf $(JARS)/$* && mkdir -p $(JARS)/$*
	@$(MVN) -f $< dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JARS)/$*
	@touch $@

# Spark's extra jars (Kafka source, Delta) minus what the pyspark wheel already ships.
$(JARS)/spark/.resolved: jvm/spark/pom.xml jvm/prune_spark_jars.py $(VENV)/.installed
	@echo "resolving spark jars with mvn into $(JARS)/spark"
	@rm -rf $(JARS)/spark && mkdir -p $(JARS)/spark
	@$(MVN) -f $< dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JARS)/spark
	@$(BIN)/python jvm/prune_spark_jars.py $(JARS)/spark
	@touch $@

test: setup ## run every test tier (unit, oracle, ...)
	$(BIN)/pytest

test-unit: setup ## only the fast unit tier
	$(BIN)/pytest -m unit

check: setup ## ruff, ruff-format and mypy --strict on assign_core
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: setup ## format the code
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup ## Python vs Java assignor benchmark (bench/assignors.py)
	$(BIN)/python bench/assignors.py

demo: setup ## what-if comparison of every assignor on the source documents' scenarios
	$(BIN)/rebalance-monitor demo

clean: ## remove the venv, caches and local state
	rm -rf $(VENV) .cache .local .pytest_cache .mypy_cache .ruff_cache
