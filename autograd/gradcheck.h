// gradcheck: compares the tape's gradient of L = sum(fn(inputs) * W), W fixed random weights,
// with central finite differences, for every element of every input that requires grad.
// Inputs that require grad must be float64 leaves without broadcast (stride 0) dims; they are
// perturbed in place (through their strides) and restored. fn must be deterministic: a function
// that draws random numbers resets its generator itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace moh::ag {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-7;  // an element passes when |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-5;
  uint64_t seed = 20240611;  // for the output weights W
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // |a - n| / max(|a|, |n|)
  // The worst element: the largest |a - n| / (atol + rtol * |n|).
  int64_t worst_input = -1;
  int64_t worst_element = -1;  // flat index in logical (row-major) order
  double worst_analytic = 0.0;
  double worst_numeric = 0.0;
  int64_t elements_checked = 0;
  std::string message;  // one readable summary line
};

using GradcheckFn = std::function<Variable(const std::vector<Variable>&)>;

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Variable>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace moh::ag
