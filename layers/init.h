// Parameter initialisers (PyTorch semantics), writing in place into a parameter's tensor from a
// Philox generator so that a run's seed fixes every initial weight.
#pragma once

#include "autograd/variable.h"
#include "core/random.h"

namespace moh::init {

// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)); fans from the last two dims (2-D weights
// [out, in]); higher-rank weights fold leading dims into fan_out like PyTorch's receptive field.
void xavier_uniform(const ag::Variable& param, Generator& gen, double gain = 1.0);
// Normal(mean, std) truncated to [mean - 2 std, mean + 2 std] by redrawing (timm's trunc_normal_).
void trunc_normal(const ag::Variable& param, Generator& gen, double std, double mean = 0.0);
void normal(const ag::Variable& param, Generator& gen, double std, double mean = 0.0);
void uniform(const ag::Variable& param, Generator& gen, double low, double high);
void zeros(const ag::Variable& param);
void ones(const ag::Variable& param);

}  // namespace moh::init
