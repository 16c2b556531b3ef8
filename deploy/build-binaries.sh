#!/bin/sh
# Builds the static binaries of pipedbn's images on the host, since no base
# image (golang, debian) can be pulled here, and lays out the Docker build
# context: DIR/{Dockerfile, nats.conf, bin/, rootfs/}. Nothing else, and
# never deploy/secrets, goes into the context.
#
#   deploy/build-binaries.sh [DIR]     DIR defaults to deploy/build
#
# master and slave link OpenBLAS statically (cgo, Debian's
# libopenblas-pthread libopenblas.a; it needs -lm after it, hence the
# -extldflags) with glibc; netgo and osusergo keep glibc's NSS (dlopen) out.
# BLAS=purego builds them in pure Go instead (no cgo; about 10x slower GEMM).
# nats-server is built from its Go module at the version go.mod pins.
set -eu
cd "$(dirname "$0")/.."
out=${1:-deploy/build}
GO=${GO:-go}
mkdir -p "$out/bin" "$out/rootfs/data"
chmod 1777 "$out/rootfs/data" # the JetStream store: writable by any PIPEDBN_UID

if [ "${BLAS:-openblas}" = purego ]; then
	echo "building master, slave: pure Go (BLAS=purego)"
	for cmd in master slave; do
		CGO_ENABLED=0 $GO build -trimpath -tags purego -ldflags '-s -w' -o "$out/bin/$cmd" "./cmd/$cmd"
	done
else
	lib=$(${CC:-gcc} -print-file-name=libopenblas.a)
	if [ ! -f "$lib" ]; then
		echo "build-binaries: libopenblas.a not found: install libopenblas-dev (make deps), or build pure Go with BLAS=purego" >&2
		exit 1
	fi
	echo "building master, slave: static, OpenBLAS from $(readlink -f "$lib")"
	for cmd in master slave; do
		CGO_ENABLED=1 $GO build -trimpath -tags netgo,osusergo \
			-ldflags '-s -w -linkmode external -extldflags "-static -lm"' \
			-o "$out/bin/$cmd" "./cmd/$cmd"
	done
fi
echo "building nats-server $($GO list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2), healthcheck"
CGO_ENABLED=0 $GO build -trimpath -ldflags '-s -w' -o "$out/bin/nats-server" github.com/nats-io/nats-server/v2
CGO_ENABLED=0 $GO build -trimpath -ldflags '-s -w' -o "$out/bin/healthcheck" ./deploy/cmd/healthcheck
cp deploy/Dockerfile deploy/nats/nats.conf "$out/"
