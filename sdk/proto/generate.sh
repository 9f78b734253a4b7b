#!/bin/sh
# Regenerates the Go code of sdk/proto/engine/v1/engine.proto into sdk/engine/internal/enginepb.
# Needs protoc (Debian protobuf-compiler) and, on PATH or in $(go env GOPATH)/bin, the pinned
# plugins below. `make proto` calls this script; `make verify` runs it and `git diff --exit-code`.
set -eu

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
PATH="$gobin:$PATH"
export PATH

want_version() { # tool, version
	"$1" --version 2>/dev/null | grep -q "${2#v}"
}
if ! want_version protoc-gen-go "$PROTOC_GEN_GO_VERSION"; then
	go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
fi
if ! want_version protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"; then
	go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi
command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

out=sdk/engine/internal/enginepb
mkdir -p "$out"
protoc -I sdk/proto \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	engine/v1/engine.proto
# source_relative keeps the engine/v1 folders: flatten them into the package folder.
mv "$out/engine/v1/"*.go "$out/"
rm -rf "$out/engine"
