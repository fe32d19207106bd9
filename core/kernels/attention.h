// The kernels of blocked scaled dot-product attention (dense and packed-query forms), declared once
// for both backends: moh::cpu (core/cpu/attention.cpp) and moh::cuda (core/cuda/attention.cu,
// attention_backward.cu) each define the list in attention.inc. The op contract (shapes, layouts,
// causal rule) is documented in core/ops.h. Outputs are preallocated by the front end: out/lse for
// forward; grad_q/grad_k/grad_v (any layout with unit last stride) for backward, which the kernels
// overwrite completely. k, v (and grad_k, grad_v) have Hkv heads, which divides the query heads
// (q.size(1) dense, `heads` packed); the front end has checked it and the kernels read them in place.
// CUDA: on the tensors' device, on its compute stream; float math also accepts bfloat16/float16
// (computed in float32, with a float32 lse); head dims D, Dv up to 256.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/attention.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/attention.inc"
}  // namespace moh::cuda
