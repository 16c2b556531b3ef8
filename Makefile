# pipedbn: every target installs what it needs first (Debian packages, Go modules).
GO       ?= go
DEB_PKGS := gcc libopenblas-dev dataset-fashion-mnist python3-numpy nats-server
CONFIG   ?= configs/quickstart.yaml

.PHONY: deps quickstart test test-purego bench lint

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

bench: deps
	$(GO) test -run '^$$' -bench . -cpu 1 -count 6 ./rbm/
