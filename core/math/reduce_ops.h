// The reduction kinds both backends implement (core/kernels/reduce.h) and the front ends
// (core/ops/reduce.cpp) pick, with the name each reports in errors. Backend-neutral: plain host code.
// (moh::dist::ReduceOp, the collectives' sum/avg, is another enum in another namespace.)
#pragma once

namespace moh {

enum class ReduceOp { Sum, Mean, Amax, Amin };

// "sum", "mean", "amax", "amin", for error messages.
inline const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Amax: return "amax";
    case ReduceOp::Amin: return "amin";
  }
  return "reduce";
}

}  // namespace moh
