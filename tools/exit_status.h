// The `moh` command line's exit-status contract (tools/cli.h) and its usage error, shared by every
// command's source file: 0 success, 2 bad usage or config, 1 runtime failure; and the one place that
// turns a command's exception into its exit status and its line on stderr.
#pragma once

#include <exception>
#include <iostream>
#include <string>

#include "core/error.h"
#include "trainers/config_schema.h"
#include "trainers/run_folder.h"

namespace moh::cli {

constexpr int kOk = 0, kRuntimeError = 1, kUsageError = 2;

// A malformed command line (unknown command or option, a missing or bad argument): exit kUsageError.
struct UsageError : Error {
  using Error::Error;
};

// Runs `command` (returning an exit status) and maps what it throws: a UsageError, ConfigError or
// RunFolderError (a run folder that cannot be used as asked) to kUsageError, anything else to
// kRuntimeError, printing "<prefix>: <message>" (config errors "<prefix>: config error: ...", the
// others "<prefix>: error: ...") on stderr.
template <class Command>
int exit_status_of(const std::string& prefix, Command&& command) {
  try {
    return command();
  } catch (const UsageError& e) {
    std::cerr << prefix << ": " << e.what() << "\n";
    return kUsageError;
  } catch (const ConfigError& e) {
    std::cerr << prefix << ": config error: " << e.what() << "\n";
    return kUsageError;
  } catch (const RunFolderError& e) {
    std::cerr << prefix << ": error: " << e.what() << "\n";
    return kUsageError;
  } catch (const std::exception& e) {
    std::cerr << prefix << ": error: " << e.what() << "\n";
    return kRuntimeError;
  }
}

}  // namespace moh::cli
