// The differences between two resolved configs (see config_diff.h).
#include "trainers/config_diff.h"

namespace moh {
namespace {

std::string value_text(const Config& cfg, const std::string& key) {
  if (!cfg.schema().find(key)) return "absent";
  return cfg.has(key) ? config::format_value(cfg.get(key)) : "unset";
}

}  // namespace

std::vector<ConfigDifference> config_differences(const Config& a, const Config& b,
                                                 const std::set<std::string>& ignore) {
  std::vector<ConfigDifference> out;
  auto compare = [&](const std::string& key) {
    if (ignore.count(key)) return;
    std::string va = value_text(a, key), vb = value_text(b, key);
    if (va != vb) out.push_back({key, std::move(va), std::move(vb)});
  };
  for (const config::Key& k : a.schema().keys()) compare(k.path);
  for (const config::Key& k : b.schema().keys())
    if (!a.schema().find(k.path)) compare(k.path);
  return out;
}

std::string describe_differences(const std::vector<ConfigDifference>& diffs) {
  std::string out;
  for (const ConfigDifference& d : diffs) out += str_cat(out.empty() ? "" : ", ", d.key, " ", d.a, " -> ", d.b);
  return out;
}

}  // namespace moh
