// Process-wide numerics switches the backends read (set once by the trainer from config):
//  - deterministic algorithms: every kernel gives bitwise-identical results run to run (the CUDA
//    kernels never reduce through float atomics; this switch additionally pins cuBLASLt to the
//    first heuristic algorithm without split-K workspaces). The CPU backend is always deterministic.
//  - TF32: float32 GEMMs on CUDA may use TF32 tensor cores (10-bit mantissa inputs, float32
//    accumulation). Off by default; a config opts in.
#pragma once

namespace moh {

void set_deterministic_algorithms(bool on);
bool deterministic_algorithms();
void set_allow_tf32(bool on);
bool allow_tf32();

}  // namespace moh
