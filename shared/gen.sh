#!/usr/bin/env bash
# Regenerates shared/pb/*.pb.go from shared/proto/plugkit.proto.
#
# Needs protoc (Debian: apt-get install -y protobuf-compiler) and Go. The two Go
# generators are built at pinned versions into a throwaway folder, so the
# output does not depend on whatever happens to be on PATH.
set -euo pipefail

PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v protoc >/dev/null || {
	echo "gen.sh: protoc not found (Debian: apt-get install -y protobuf-compiler)" >&2
	exit 1
}

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install "$PROTOC_GEN_GO"
GOBIN="$bin" go install "$PROTOC_GEN_GO_GRPC"

cd "$here"
PATH="$bin:$PATH" protoc \
	--proto_path=proto \
	--go_out=pb --go_opt=paths=source_relative \
	--go-grpc_out=pb --go-grpc_opt=paths=source_relative \
	plugkit.proto
