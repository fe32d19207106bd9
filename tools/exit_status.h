// The `moh` command line's exit-status contract (tools/cli.h) and its usage error, shared by every
// command's source file: 0 success, 2 bad usage or config, 1 runtime failure.
#pragma once

#include "core/error.h"

namespace moh::cli {

constexpr int kOk = 0, kRuntimeError = 1, kUsageError = 2;

// A malformed command line (unknown command or option, a missing or bad argument): exit kUsageError.
struct UsageError : Error {
  using Error::Error;
};

}  // namespace moh::cli
