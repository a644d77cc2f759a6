#!/usr/bin/env bash
# Regenerates sdk/python/plugkit/proto/ from the .proto files in
# shared/proto/: the plugkit contract and the go-plugin and gRPC services a
# plugin serves (broker, controller, stdio, health).
#
# Needs Debian 12's protoc and gRPC Python generator, the versions the
# generated code is for (python3-protobuf 3.21, python3-grpcio 1.51):
#   apt-get install -y protobuf-compiler protobuf-compiler-grpc
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
proto="$here/../../shared/proto"
for tool in protoc grpc_python_plugin; do
	command -v "$tool" >/dev/null || {
		echo "gen.sh: $tool not found (Debian: apt-get install -y protobuf-compiler protobuf-compiler-grpc)" >&2
		exit 1
	}
done

# protoc names a generated module after its .proto file's path, so the files
# are laid out as the package they become: plugkit/proto/NAME.proto is
# imported as plugkit.proto.NAME_pb2.
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
mkdir -p "$src/plugkit/proto"
cp "$proto/plugkit.proto" "$proto"/go-plugin/*.proto "$proto/grpc-health/health.proto" "$src/plugkit/proto/"

out="$here/plugkit/proto"
rm -f "$out"/*_pb2.py "$out"/*_pb2_grpc.py
cd "$src"
protoc --proto_path=. \
	--python_out="$here" \
	--plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
	--grpc_python_out="$here" \
	plugkit/proto/*.proto
