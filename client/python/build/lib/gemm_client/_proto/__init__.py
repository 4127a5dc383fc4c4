"""Generated gRPC/protobuf code of gemm.v1 (see ../../regen_stubs.py). Do not edit."""
