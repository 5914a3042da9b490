#!/usr/bin/env bash
# CMake flags for compiling llama.cpp's server (ggml) on this machine: the portable AVX2 build
# (GGML_NATIVE=OFF), plus AVX-512 and VNNI kernels when /proc/cpuinfo lists every instruction
# set they need. Never AMX: a native build on a CPU with AMX compiles AMX kernels that die with
# SIGILL where the VM does not grant the AMX state. Measured on this project's 2-core Xeon with
# AVX-512, the 1.5B model, one stream, a 366-token prompt: prompt evaluation 38.5 -> 55 tokens/s,
# generation 10.9 -> 11.3 tokens/s (tests/benchmarks/bench_model.py --long, docs/selfscore.md).
set -euo pipefail
flags="-DGGML_NATIVE=OFF"
cpu=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { [[ "$cpu" == *" $1 "* ]]; }
if has avx512f && has avx512cd && has avx512vl && has avx512dq && has avx512bw; then
    flags+=" -DGGML_AVX512=ON"
    has avx512vbmi && flags+=" -DGGML_AVX512_VBMI=ON"
    has avx512_vnni && flags+=" -DGGML_AVX512_VNNI=ON"
    has avx512_bf16 && flags+=" -DGGML_AVX512_BF16=ON"
fi
has avx_vnni && flags+=" -DGGML_AVX_VNNI=ON"
echo "$flags"
