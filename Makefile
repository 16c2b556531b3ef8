# pipedbn: every target installs what it needs first (Debian packages, Go modules).
GO       ?= go
# prometheus: TestPrometheusScrapesRun (monitor/) scrapes a run with it.
DEB_PKGS := gcc libopenblas-dev dataset-fashion-mnist python3-numpy nats-server prometheus
CONFIG   ?= configs/quickstart.yaml

.PHONY: deps quickstart test test-purego bench lint images compose-secrets compose-up compose-down compose-test

# deps installs the Debian packages that are missing (as root, or with sudo)
# and downloads the Go modules.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	$(GO) mod download

# quickstart is the main job: pre-train + fine-tune a DBN on Fashion-MNIST.
quickstart: deps
	$(GO) run ./cmd/master run --config $(CONFIG)

lint: deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags purego ./...

# test is what CI runs: lint, the race-checked suite, and the pure-Go build's suite.
test: lint
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -tags purego -count=1 -timeout 30m ./...
	$(MAKE) compose-test

bench: deps
	$(GO) test -run '^$$' -bench . -cpu 1 -count 6 ./rbm/

# --- Docker compose (README.md, "Docker compose") ---------------------------
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
images: deps
	deploy/build-binaries.sh deploy/build
	$(COMPOSE) build

# compose-secrets makes the NATS credentials in deploy/secrets (gitignored);
# it keeps existing ones: `make compose-secrets FORCE=1` replaces them.
compose-secrets:
	$(GO) run ./deploy/cmd/compose-secrets --dir deploy/secrets --slaves $(IDENTITIES) $(if $(FORCE),--force)

# compose-up runs the cluster's job (deploy/config.yaml, or PIPEDBN_CONFIG)
# with $(SLAVES) slaves; the master's exit ends the run and sets the status.
compose-up: images compose-secrets
	mkdir -p $${PIPEDBN_RUNS:-runs}
	$(COMPOSE) up --scale slave=$(SLAVES) --abort-on-container-exit --exit-code-from master; \
	rc=$$?; $(COMPOSE) down; exit $$rc

compose-down:
	$(COMPOSE) down -v

# compose-test is the end-to-end test: images, a small pipelined job in
# compose, result.json checked, everything torn down. It skips, saying why,
# where no Docker engine answers. Part of `make test`.
compose-test: deps
	$(GO) vet -tags compose ./deploy/
	$(GO) test -tags compose -run '^TestCompose' -count=1 -v -timeout 10m ./deploy/
