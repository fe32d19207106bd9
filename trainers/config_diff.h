// config_differences(): the keys whose resolved values differ between two configs, for the checks
// that two configs describe the same job (data-parallel ranks at start-up, a resume against the
// checkpoint's stored config). The configs may come from different schemas (another task family,
// an older build): a key one of them lacks reads as "absent", an unset optional key as "unset".
// Differences come in the order of `a`'s schema, then the keys only `b` has in `b`'s order.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "trainers/config.h"

namespace moh {

struct ConfigDifference {
  std::string key;
  std::string a, b;  // the values as YAML flow text (config::format_value), "unset" or "absent"
};

// Keys in `ignore` are skipped.
std::vector<ConfigDifference> config_differences(const Config& a, const Config& b,
                                                 const std::set<std::string>& ignore = {});

// "optim.lr 0.01 -> 0.02, train.steps 5 -> 7": each difference as `key a -> b`.
std::string describe_differences(const std::vector<ConfigDifference>& diffs);

}  // namespace moh
