// The error both cross-entropy backends raise for a target that is neither a class index in
// [0, classes) nor ignore_index, so a bad label reads the same on the CPU and on CUDA (which finds
// the row on the device and raises it from the host). Host code.
#pragma once

#include <cstdint>

#include "core/error.h"

namespace moh {

[[noreturn]] inline void fail_target_out_of_range(const char* op, int64_t row, int64_t value, int64_t classes,
                                                  int64_t ignore_index) {
  MOH_FAIL(op, ": target[", row, "] = ", value, " is out of range for ", classes, " classes (expected 0 <= target < ",
           classes, " or target == ignore_index ", ignore_index, ")");
}

}  // namespace moh
