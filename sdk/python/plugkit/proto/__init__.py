"""Generated protobuf and gRPC modules (sdk/python/gen.sh); do not edit."""
