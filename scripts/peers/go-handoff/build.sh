#!/usr/bin/env bash
# Builds the Go peer offline into BUILD/bin/go-handoff with Debian's golang-go.
# usage: scripts/peers/go-handoff/build.sh [BUILD]      (BUILD: argument, else $BUILD, else build)
# Standard library only: no module downloads (GOPROXY=off), the build and module caches live in
# BUILD/go (so it works as root in CI, with no network and no writable $HOME).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${BUILD:-build}}
command -v go >/dev/null || { echo "go-handoff/build.sh: go not found (apt-get install golang-go)" >&2; exit 1; }
mkdir -p "$build/bin" "$build/go/cache" "$build/go/path"
build=$(cd "$build" && pwd)
export GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GO111MODULE=on GOWORK=off GOTOOLCHAIN=local \
       GOCACHE="$build/go/cache" GOPATH="$build/go/path" GOMODCACHE="$build/go/path/pkg/mod" \
       CGO_ENABLED=0
cd "$here"
go build -trimpath -o "$build/bin/go-handoff" .
echo "$build/bin/go-handoff"
