// Command-line options of the `moh` subcommands that take --key value options (tokenize,
// tokenizer, generate): parsing into options and positional arguments, and typed reads whose
// failures are UsageErrors (exit status 2) naming the option; the target and overrides of commands on a
// stored run.
#pragma once

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "tools/exit_status.h"

namespace moh::cli {

// --key value options and positional arguments; `flags` take no value.
struct Args {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;
  bool help = false;
};

inline Args parse_args(int argc, char** argv, int first, const std::vector<std::string>& valued,
                       const std::vector<std::string>& flags) {
  Args args;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
    } else if (std::find(flags.begin(), flags.end(), arg) != flags.end()) {
      args.options[arg] = "1";
    } else if (std::find(valued.begin(), valued.end(), arg) != valued.end()) {
      if (i + 1 >= argc) throw UsageError(str_cat(arg, " needs a value"));
      args.options[arg] = argv[++i];
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      throw UsageError(str_cat("unknown option '", arg, "'"));
    } else {
      args.positional.push_back(arg);
    }
  }
  return args;
}

// The option's value as a T, or `fallback` when it is absent.
template <class T>
T number(const Args& args, const std::string& key, T fallback) {
  const auto it = args.options.find(key);
  if (it == args.options.end()) return fallback;
  T value{};
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size())
    throw UsageError(str_cat(key, " must be a number, got '", s, "'"));
  return value;
}

inline std::string required(const Args& args, const std::string& key, const char* help) {
  const auto it = args.options.find(key);
  if (it == args.options.end()) throw UsageError(str_cat("missing ", key, "\n", help));
  return it->second;
}

// The positional arguments of a command on a stored run: the target (RUN_DIR, a checkpoint, a samples
// file: `what` names it in the error when it is missing) and the key=value config overrides.
struct TargetArgs {
  std::string target;
  std::vector<std::string> overrides;
};
inline TargetArgs target_and_overrides(const Args& args, const char* help, const char* what = "RUN_DIR or CHECKPOINT") {
  TargetArgs out;
  for (const std::string& arg : args.positional) {
    if (arg.find('=') != std::string::npos) out.overrides.push_back(arg);
    else if (out.target.empty()) out.target = arg;
    else throw UsageError(str_cat("unexpected argument '", arg, "' (overrides look like key=value)"));
  }
  if (out.target.empty()) throw UsageError(str_cat("missing ", what, "\n", help));
  return out;
}

}  // namespace moh::cli
