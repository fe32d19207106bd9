// CUDA twin of core/cpu/elementwise.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <optional>

#include "core/cpu/elementwise.h"  // the op enums, shared by both backends
#include "core/tensor.h"

namespace moh::cuda {

using cpu::BinaryOp;
using cpu::CompareOp;
using cpu::UnaryOp;

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, double alpha);
void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void unary(UnaryOp op, const Tensor& out, const Tensor& x);
void clamp(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace moh::cuda
