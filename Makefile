# pipedbn: every target installs what it needs first (Debian packages, Go modules).
# `make` alone lists the targets.
GO       ?= go
# What the main job needs: a C compiler and OpenBLAS for cgo, and the data set.
RUN_PKGS  := gcc libopenblas-dev dataset-fashion-mnist
# What the tests add:
# python3-numpy: the tests that check pipedbn against NumPy, examples/numpy.
# nats-server: a NATS server of your own, for a cluster by hand (docs/operations.md).
# prometheus: TestPrometheusScrapesRun (monitor/) scrapes a run with it.
# chromium: TestChromiumShowsRun and TestChromiumShowsSweep (monitor/) render the status page headless.
# python3-sklearn: TestDigits (cmd/master) makes its data set from sklearn's digits.
TEST_PKGS := python3-numpy nats-server prometheus chromium python3-sklearn
CONFIG   ?= configs/quickstart.yaml

.PHONY: help build deps deps-run deps-test quickstart test bench lint images compose-secrets compose-up compose-down compose-test
.PHONY: stack-up stack-down stack-test

# help lists every target with the line after its `##`.
help: ## list the targets (the default)
	@echo "usage: make TARGET [VAR=value]..."
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# debs installs the Debian packages of $(1) that are missing (as root, or
# with sudo).
define debs
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps-run: ## install what the main job needs: gcc, libopenblas-dev, dataset-fashion-mnist, the Go modules
	$(call debs,$(RUN_PKGS))
	$(GO) mod download

deps-test: deps-run ## install what the tests add: python3-numpy, nats-server, prometheus, chromium, python3-sklearn
	$(call debs,$(TEST_PKGS))

deps: deps-test ## both of the above

build: deps-run ## build master and slave into ./bin
	$(GO) build -buildvcs=auto -o bin/ ./cmd/master ./cmd/slave

# quickstart is the main job: pre-train + fine-tune a DBN on Fashion-MNIST.
quickstart: deps-run ## the main job: pipelined pre-training and fine-tuning on Fashion-MNIST (CONFIG=...)
	$(GO) run ./cmd/master run --config $(CONFIG)

# lint's last step, internal/lintnotes, fails on a date, a commit hash or an
# issue number in a Go comment of a non-test file, README.md, docs/ (but
# docs/results.md) or configs/: measurements belong in experiments/results/.
# It fails too on a function of a non-test, non-generated Go file over 80
# lines: split it by step.
lint: deps-test ## gofmt, go vet (both builds), no lab notes in comments, README, docs, configs, no function over 80 lines
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags purego ./...
	$(GO) run ./internal/lintnotes

# test is what CI runs: lint, the race-checked suite, and the pure-Go build's suite.
test: lint ## what CI runs: lint, the race-checked suite, the pure-Go suite, compose and Swarm tests
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -tags purego -count=1 -timeout 30m ./...
	$(MAKE) compose-test
	$(MAKE) stack-test

bench: deps-run ## the RBM benchmarks (CD-1 on one thread)
	$(GO) test -run '^$$' -bench . -cpu 1 -count 6 ./rbm/

# --- Docker compose (docs/operations.md, "Docker compose") ---------------------------
COMPOSE    ?= docker-compose
# SLAVES: slave containers of compose-up; IDENTITIES: slave identities that
# compose-secrets makes, the most slaves connected at once.
SLAVES     ?= 4
IDENTITIES ?= 8
# The containers run as you, so that they can read the secrets (0600) and
# write runs/.
export PIPEDBN_UID ?= $(shell id -u)
export PIPEDBN_GID ?= $(shell id -g)

# images builds static binaries on the host (nothing can be pulled) and the
# FROM scratch images pipedbn/nats, pipedbn/master, pipedbn/slave.
images: deps-run ## static binaries and the FROM scratch images pipedbn/nats, master, slave
	deploy/build-binaries.sh deploy/build
	$(COMPOSE) build

# compose-secrets makes the NATS credentials in deploy/secrets (gitignored),
# and the Swarm stack's TLS CA and certificate (TLS_HOSTS: more names for
# it, comma-separated); it keeps existing ones: `make compose-secrets
# FORCE=1` replaces them.
compose-secrets: ## NATS credentials and TLS certificates in deploy/secrets (FORCE=1 replaces them)
	$(GO) run ./deploy/cmd/compose-secrets --dir deploy/secrets --slaves $(IDENTITIES) $(if $(FORCE),--force) $(if $(TLS_HOSTS),--tls-hosts $(TLS_HOSTS))

# compose-up runs the cluster's job (deploy/config.yaml, or PIPEDBN_CONFIG)
# with $(SLAVES) slaves; the master's exit ends the run and sets the status.
compose-up: images compose-secrets ## the cluster job in docker-compose (SLAVES=4 slaves)
	mkdir -p $${PIPEDBN_RUNS:-runs}
	$(COMPOSE) up --scale slave=$(SLAVES) --abort-on-container-exit --exit-code-from master; \
	rc=$$?; $(COMPOSE) down; exit $$rc

compose-down: ## remove the compose containers, network and volume
	$(COMPOSE) down -v

# compose-test is the end-to-end test: images, a small pipelined job in
# compose, result.json checked, everything torn down. It skips, saying why,
# where no Docker engine answers. Part of `make test`.
compose-test: deps-run ## the compose end-to-end test (skips without Docker)
	$(GO) vet -tags compose ./deploy/
	$(GO) test -tags compose -run '^TestCompose' -count=1 -v -timeout 10m ./deploy/

# --- Docker Swarm (docs/operations.md, "Several hosts") ------------------------------
# STACK: the stack's name; the job, slaves and the rest: deploy/stack.yml's
# settings (PIPEDBN_CONFIG, PIPEDBN_SLAVES, ...), paths absolute here since
# docker stack reads them relative to deploy/.
STACK ?= pipedbn

# stack-up deploys deploy/stack.yml: three NATS nodes, the master, the
# slaves. An engine in no swarm becomes a single-node one (on 127.0.0.1;
# for several hosts, `docker swarm init --advertise-addr IP` first). The
# master's log: docker service logs -f $(STACK)_master; results in runs/.
stack-up: images compose-secrets ## deploy deploy/stack.yml on a Docker Swarm (3 NATS nodes)
	@state=$$(docker info --format '{{.Swarm.LocalNodeState}}'); \
	if [ "$$state" = inactive ]; then echo "stack-up: docker swarm init --advertise-addr 127.0.0.1 (a single-node swarm; make stack-down keeps it: docker swarm leave --force)"; \
		docker swarm init --advertise-addr 127.0.0.1 >/dev/null || exit 1; fi
	mkdir -p $${PIPEDBN_RUNS:-runs}
	PIPEDBN_RUNS=$$(realpath $${PIPEDBN_RUNS:-runs}) PIPEDBN_SECRETS=$$(realpath $${PIPEDBN_SECRETS:-deploy/secrets}) \
	PIPEDBN_CONFIG=$$(realpath $${PIPEDBN_CONFIG:-deploy/config.yaml}) \
		docker stack deploy --resolve-image never -c deploy/stack.yml $(STACK)

# stack-down removes the stack and, once its containers are gone, the NATS
# nodes' volumes (the JetStream stores).
stack-down: ## remove the stack and its NATS volumes
	docker stack rm $(STACK)
	@for i in $$(seq 60); do [ -z "$$(docker ps -aq --filter label=com.docker.stack.namespace=$(STACK))" ] && break; sleep 1; done
	-docker volume rm $(STACK)_nats1-data $(STACK)_nats2-data $(STACK)_nats3-data

# stack-test is the Swarm end-to-end test: a swarm if none (left again
# afterwards), images, the stack with 3 NATS nodes and 3 slaves, the
# master's NATS node killed mid-run, result.json checked, everything torn
# down. It skips, saying why, where no Docker engine answers. Part of
# `make test`.
stack-test: deps-run ## the Swarm end-to-end test (skips without Docker)
	$(GO) vet -tags stack ./deploy/
	$(GO) test -tags stack -run '^TestStack' -count=1 -v -timeout 10m ./deploy/

# docs writes docs/configuration.md, the reference of every config key,
# from the config package (config/reference.go): `master config --doc`.
# The pure-Go build needs no OpenBLAS; TestReferenceFile (config/) fails
# while the file and the code disagree.
.PHONY: docs
docs: ## write docs/configuration.md, the reference of every config key, from the code
	$(GO) run -tags purego ./cmd/master config --doc > docs/configuration.md.tmp
	mv docs/configuration.md.tmp docs/configuration.md
