# llmfleet.rocm - the two set-up commands are `make sandbox` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements.sha256
COLLECTION_LINK := .collections/ansible_collections/llmfleet/rocm
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
# ansible-playbook forks a process per task and host, and each loads the plugins it uses: with Python's bytecode cache
# off (some images set PYTHONDONTWRITEBYTECODE), each load compiles Ansible's and the plugin files again. The caches land
# in __pycache__ (git-ignored, left out of the built collection). Python that plugins import through the collection
# loader (plugin_utils, module_utils) is compiled from source in each process whatever this says: the filters import it
# at their first call (plugins/filter/__roles.py).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help venv collection collection-test test lint yamllint ansible-lint sanity unit molecule sandbox lab-deps lab-up lab-down lab-status

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

venv: $(STAMP) collection ## Create .venv from requirements.txt (the one pinned file)

$(STAMP): requirements.txt
	@echo "==> creating $(VENV) from requirements.txt"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	@sha256sum requirements.txt > $(STAMP)

collection: ## Link the checkout as ansible_collections/llmfleet/rocm
	@mkdir -p $(dir $(COLLECTION_LINK))
	@test -L $(COLLECTION_LINK) || ln -sfn ../../.. $(COLLECTION_LINK)

test: venv ## Run every test: yamllint, ansible-lint, ansible-test sanity, the shipped collection, pytest, molecule and the sandbox
	@tests/run-all.sh

lint: yamllint ansible-lint ## yamllint and ansible-lint only

yamllint: venv
	$(BIN)/yamllint --strict .

ansible-lint: venv
	$(BIN)/ansible-lint

sanity: venv ## ansible-test sanity on a temporary ansible_collections tree
	tests/sanity/run.sh

collection-test: venv ## Build the tarball, install it offline into a temporary path, ansible-doc and syntax-check it from outside the checkout
	tests/collection/run.sh

unit: venv ## pytest on parsers, modules, filters and lab tooling
	PYTHONPATH=$(CURDIR)/.collections $(BIN)/python -m pytest tests/unit -q

molecule: venv lab-deps ## Every molecule scenario against lab hosts
	lab/bin/labctl molecule test --all

lab-deps: ## Install the Debian packages the lab needs (podman, runc, debootstrap, ...)
	lab/bin/labctl deps

lab-up: venv lab-deps ## Start the lab hosts of inventories/sandbox (idempotent)
	lab/bin/labctl up

lab-down: ## Remove every lab container, the network and the repository server
	lab/bin/labctl down

lab-status: ## Show what of the lab exists and runs
	lab/bin/labctl status

sandbox: venv ## The main job on the local lab: start the hosts, run site.yml (ansible-runner; SANDBOX_TWICE=1: twice, the second must change nothing), show what happened
	@tests/sandbox.sh
