// Process-wide numerics switches the backends read (set once by the trainer from config):
//  - deterministic algorithms: every kernel gives bitwise-identical results run to run (the CUDA
//    kernels never reduce through float atomics; this switch additionally pins cuBLASLt to the
//    first heuristic algorithm without split-K workspaces). The CPU backend is always deterministic.
//  - TF32: float32 GEMMs on CUDA may use TF32 tensor cores (10-bit mantissa inputs, float32
//    accumulation). Off by default; a config opts in.
//  - GEMM autocast (mixed precision): Float32 = off; BFloat16 or Float16 = float32 matmuls on CUDA
//    round their inputs to this 16-bit type and accumulate and output in float32, so activations,
//    weights and gradients stay float32 outside the GEMMs. It takes precedence over TF32 for the
//    GEMMs it covers. The CPU backend ignores it (CPU GEMMs are always float32 or float64).
#pragma once

#include "core/dtype.h"

namespace moh {

void set_deterministic_algorithms(bool on);
bool deterministic_algorithms();
void set_allow_tf32(bool on);
bool allow_tf32();
// Throws moh::Error for any dtype other than Float32, BFloat16 or Float16.
void set_gemm_autocast(DType dtype);
DType gemm_autocast();

}  // namespace moh
