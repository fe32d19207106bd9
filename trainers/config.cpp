// Config loading: YAML files flattened to dotted leaves (checked against the schema where they are
// written, so every error knows its file and line), `base:` chains merged child-over-parent, overrides
// applied, then required keys and one-of groups checked on the merged result.
#include "trainers/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace moh {
namespace fs = std::filesystem;
using config::Key;
using config::Presence;
using config::Schema;
using config::Type;
using config::Value;

namespace {

struct Leaf {
  std::optional<Value> value;  // nullopt: the key was written as null (reset to default / unset)
  std::string origin;
};
using Leaves = std::map<std::string, Leaf>;

std::string at(const std::string& file, const YAML::Mark& mark) {
  return file + ":" + std::to_string(mark.line + 1);
}

// The value as the user wrote it, for messages.
std::string node_text(const YAML::Node& node) {
  std::string text;
  if (node.IsScalar()) {
    text = node.Tag() == "?" ? node.Scalar() : "\"" + node.Scalar() + "\"";
  } else if (node.IsNull()) {
    text = "null";
  } else {
    YAML::Emitter out;
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
    out << node;
    text = out.c_str();
  }
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

std::optional<int64_t> parse_int(std::string_view s) {
  if (s.starts_with('+')) s.remove_prefix(1);
  int64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// YAML floats: decimal or exponent notation (integers too), and .inf/.nan (which the checks then reject).
std::optional<double> parse_float(std::string_view s) {
  bool negative = s.starts_with('-');
  std::string_view body = (negative || s.starts_with('+')) ? s.substr(1) : s;
  for (std::string_view inf : {".inf", ".Inf", ".INF"})
    if (body == inf) return negative ? -HUGE_VAL : HUGE_VAL;
  for (std::string_view nan : {".nan", ".NaN", ".NAN"})
    if (s == nan) return std::numeric_limits<double>::quiet_NaN();
  if (body.empty() || body.find_first_not_of("0123456789.eE+-") != std::string_view::npos ||
      body.find_first_of("0123456789") == std::string_view::npos)
    return std::nullopt;
  if (s.starts_with('+')) s.remove_prefix(1);
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ptr != s.data() + s.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range) return negative ? -HUGE_VAL : HUGE_VAL;
  if (res.ec != std::errc()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

// One scalar as `type` (Int, Float, Bool, or a string type); nullopt when it is not one.
std::optional<Value> scalar_value(const YAML::Node& node, Type type) {
  if (!node.IsScalar()) return std::nullopt;
  if (type == Type::String || type == Type::Enum || type == Type::StringList) return Value(node.Scalar());
  if (node.Tag() != "?") return std::nullopt;  // quoted: a string, not a number or bool
  if (type == Type::Int || type == Type::IntList) {
    if (auto v = parse_int(node.Scalar())) return Value(*v);
  } else if (type == Type::Float || type == Type::FloatList) {
    if (auto v = parse_float(node.Scalar())) return Value(*v);
  } else if (auto v = parse_bool(node.Scalar())) {
    return Value(*v);
  }
  return std::nullopt;
}

template <class T>
std::optional<Value> list_value(const YAML::Node& node, Type type, std::string& problem) {
  std::vector<T> items;
  for (size_t i = 0; i < node.size(); ++i) {
    auto v = scalar_value(node[i], type);
    if (!v) {
      Type element = type == Type::IntList ? Type::Int : type == Type::FloatList ? Type::Float : Type::String;
      problem = "element " + std::to_string(i) + " (" + node_text(node[i]) + ") is not " +
                config::type_phrase(element);
      return std::nullopt;
    }
    items.push_back(std::get<T>(*v));
  }
  return Value(std::move(items));
}

// The checked value of `key` written as `node` at `where`; nullopt for null.
std::optional<Value> convert(const Key& key, const YAML::Node& node, const std::string& where) {
  if (node.IsNull()) return std::nullopt;
  std::optional<Value> value;
  std::string problem;
  if (key.type == Type::IntList || key.type == Type::FloatList || key.type == Type::StringList) {
    if (node.IsSequence()) {
      if (key.type == Type::IntList) value = list_value<int64_t>(node, key.type, problem);
      if (key.type == Type::FloatList) value = list_value<double>(node, key.type, problem);
      if (key.type == Type::StringList) value = list_value<std::string>(node, key.type, problem);
    }
  } else {
    value = scalar_value(node, key.type);
  }
  if (value) problem = key.check(*value);
  if (!value && problem.empty()) problem = "not " + config::type_phrase(key.type);
  if (problem.empty()) return value;
  std::string msg = where + ": key '" + key.path + "' = " + node_text(node) + ": " + problem +
                    "; allowed: " + allowed_text(key);
  if (key.type == Type::Enum && node.IsScalar()) {
    std::string near = config::closest_match(node.Scalar(), key.choices);
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
  }
  throw ConfigError(msg);
}

[[noreturn]] void unknown_key(const Schema& schema, const std::string& where, const std::string& path,
                              const std::string& given) {
  std::string msg = where + ": unknown key '" + path + "' (value " + given + ")";
  std::string near = schema.suggest(path);
  if (!near.empty()) {
    msg += "; did you mean '" + near + "'?";
  } else {
    std::string section = path.substr(0, path.rfind('.') == std::string::npos ? 0 : path.rfind('.'));
    if (!schema.is_section(section)) section.clear();
    std::vector<std::string> known;
    for (const Key& k : schema.keys()) {
      std::string top = k.path.substr(0, k.path.find('.'));
      if (!section.empty() && k.path.starts_with(section + ".")) known.push_back(k.path);
      if (section.empty() && std::find(known.begin(), known.end(), top) == known.end()) known.push_back(top);
    }
    msg += section.empty() ? "; top-level keys and sections are: " : "; keys of '" + section + "' are: ";
    for (size_t i = 0; i < known.size(); ++i) msg += (i ? ", " : "") + known[i];
  }
  throw ConfigError(msg);
}

// `upper` (a child file or the overrides) over `lower`. Setting one key of a one-of group (train.steps)
// unsets the others inherited from below (train.epochs), so a child can switch between them.
void merge_into(const Schema& schema, Leaves& lower, const Leaves& upper) {
  for (const auto& [path, leaf] : upper) {
    if (const auto* group = schema.group_of(path); group && leaf.value)
      for (const std::string& other : *group)
        if (other != path && !upper.count(other)) lower.erase(other);
    lower[path] = leaf;
  }
}

class Loader {
 public:
  // A lenient loader skips keys the schema does not know (used to peek at one key, such as `task`,
  // before the full schema is known).
  explicit Loader(const Schema& schema, bool lenient = false) : schema_(schema), lenient_(lenient) {}

  Leaves file(const fs::path& path, const std::string& included_at) {
    std::string name = path.string();
    auto fail = [&](const std::string& why) {
      throw ConfigError(included_at.empty() ? "config file '" + name + "' " + why
                                            : included_at + ": base file '" + name + "' " + why);
    };
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i].first != canonical) continue;
      std::string chain;
      for (size_t j = i; j < stack_.size(); ++j) chain += stack_[j].second + " -> ";
      throw ConfigError(included_at + ": base cycle: " + chain + name);
    }
    if (!fs::exists(path, ec)) fail("does not exist");
    if (fs::is_directory(path, ec)) fail("is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    stack_.emplace_back(canonical, name);
    Leaves leaves = text_leaves(text.str(), name, path.parent_path());
    stack_.pop_back();
    return leaves;
  }

  Leaves text_leaves(const std::string& text, const std::string& name, const fs::path& dir) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ":" +
                        std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
    }
    if (root.IsNull()) return {};
    if (!root.IsMap())
      throw ConfigError(at(name, root.Mark()) + ": a config file holds a map of keys, got " +
                        node_text(root));
    Leaves leaves;
    std::string base_at, base_path;
    for (const auto& entry : root) {
      if (!entry.first.IsScalar() || entry.first.Scalar() != "base") continue;
      std::string where = at(name, entry.first.Mark());
      if (!base_at.empty())
        throw ConfigError(where + ": key 'base' is given twice (also at " + base_at + ")");
      base_at = where;
      const YAML::Node& base = entry.second;
      if (!base.IsScalar() || base.Scalar().empty())
        throw ConfigError(where + ": key 'base' = " + node_text(base) +
                          ": not a file path; allowed: a path relative to this file");
      base_path = base.Scalar();
    }
    if (!base_at.empty()) leaves = file((dir / base_path).lexically_normal(), base_at);
    Leaves own;
    flatten(root, "", name, own);
    merge_into(schema_, leaves, own);
    return leaves;
  }

  std::optional<Leaf> override_leaf(const std::string& text, std::string& path) {
    std::string where = "override '" + text + "'";
    size_t eq = text.find('=');
    path = text.substr(0, eq);
    if (eq == std::string::npos || path.empty() || path.find_first_of(" \t") != std::string::npos)
      throw ConfigError(where +
                        ": expected dotted.key=value, e.g. optim.lr=3e-4 or model.routed_topk=[0,2,2,4]");
    std::string value_text = text.substr(eq + 1);
    const Key* key = schema_.find(path);
    if (!key && schema_.is_section(path))
      throw ConfigError(where + ": '" + path + "' is a section; override its keys one by one (" + path +
                        ".KEY=VALUE)");
    if (!key && lenient_) return std::nullopt;
    if (!key) unknown_key(schema_, where, path, value_text);
    YAML::Node node;
    try {
      node = YAML::Load(value_text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(where + ": key '" + path + "' = " + value_text + ": YAML syntax error at column " +
                        std::to_string(e.mark.column + 1) + " of the value: " + e.msg);
    }
    return Leaf{convert(*key, node, where), where};
  }

 private:
  void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file, Leaves& out) {
    for (const auto& entry : map) {
      const YAML::Node& k = entry.first;
      const YAML::Node& v = entry.second;
      std::string where = at(file, k.Mark());
      if (!k.IsScalar()) throw ConfigError(where + ": keys are names, got " + node_text(k));
      if (prefix.empty() && k.Scalar() == "base") continue;
      std::string path = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      if (const Key* key = schema_.find(path)) {
        if (auto seen = out.find(path); seen != out.end())
          throw ConfigError(where + ": key '" + path + "' is given twice (also at " + seen->second.origin +
                            ")");
        out[path] = Leaf{convert(*key, v, where), where};
      } else if (schema_.is_section(path)) {
        if (v.IsMap()) {
          flatten(v, path, file, out);
        } else if (!v.IsNull()) {
          throw ConfigError(where + ": '" + path + "' = " + node_text(v) + ": '" + path +
                            "' is a section; allowed: a map of its keys (" + path + ".KEY)");
        }
      } else if (!lenient_) {
        unknown_key(schema_, where, path, node_text(v));
      }
    }
  }

  const Schema& schema_;
  bool lenient_;
  std::vector<std::pair<fs::path, std::string>> stack_;  // files being loaded: canonical path, name
};

struct Resolved {
  std::vector<std::optional<Value>> values;
  std::vector<std::string> origins;
};

// Applies the overrides, fills defaults, and checks required keys and one-of groups.
Resolved resolve(const Schema& schema, Leaves leaves, const std::string& source,
                 const std::vector<std::string>& overrides, Loader& loader) {
  Leaves over;
  for (const std::string& text : overrides) {
    std::string path;
    if (std::optional<Leaf> leaf = loader.override_leaf(text, path)) over[path] = std::move(*leaf);
  }
  merge_into(schema, leaves, over);

  Resolved r;
  std::string missing;
  for (const Key& key : schema.keys()) {
    auto it = leaves.find(key.path);
    if (it != leaves.end() && it->second.value) {
      r.values.push_back(it->second.value);
      r.origins.push_back(it->second.origin);
    } else if (key.presence == Presence::Default) {
      r.values.push_back(key.default_value);
      r.origins.push_back("default");
    } else {
      if (key.presence == Presence::Required)
        missing += str_cat(missing.empty() ? "" : "; ", "'", key.path, "' (", key.doc,
                           "; allowed: ", allowed_text(key), ")");
      r.values.emplace_back();
      r.origins.emplace_back();
    }
  }
  for (const auto& group : schema.one_of_groups()) {
    std::vector<std::string> set;
    for (const std::string& path : group) {
      size_t i = size_t(schema.find(path) - schema.keys().data());
      if (r.values[i]) set.push_back("'" + path + "' (" + r.origins[i] + ")");
    }
    std::string names;
    for (const std::string& path : group) names += (names.empty() ? "'" : ", '") + path + "'";
    if (set.empty()) missing += str_cat(missing.empty() ? "" : "; ", "one of ", names);
    if (set.size() > 1) {
      std::string both;
      for (const std::string& s : set) both += (both.empty() ? "" : " and ") + s;
      throw ConfigError(source + ": " + both + " are both set; set exactly one of " + names +
                        " (null unsets a key)");
    }
  }
  if (!missing.empty()) throw ConfigError(source + ": missing required key " + missing);
  return r;
}

}  // namespace

Config Config::load(const std::string& path, const Schema& schema,
                    const std::vector<std::string>& overrides) {
  Loader loader(schema);
  Resolved r = resolve(schema, loader.file(path, ""), path, overrides, loader);
  return Config(schema, std::move(r.values), std::move(r.origins));
}

Config Config::parse(std::string_view yaml, const Schema& schema, const std::string& source,
                     const std::vector<std::string>& overrides) {
  Loader loader(schema);
  Resolved r =
      resolve(schema, loader.text_leaves(std::string(yaml), source, fs::path()), source, overrides, loader);
  return Config(schema, std::move(r.values), std::move(r.origins));
}

namespace {

// The string value of `key` in a file or text, ignoring every other key (the full schema is not
// known yet); throws when it is missing.
std::string peek(const std::string& source, std::string_view key, const std::vector<std::string>& overrides,
                 const std::function<Leaves(Loader&)>& leaves_of) {
  Schema schema;
  schema.add(Key::String(std::string(key), "the key being peeked at").optional());
  Loader loader(schema, /*lenient=*/true);
  Resolved r = resolve(schema, leaves_of(loader), source, overrides, loader);
  if (!r.values[0]) throw ConfigError(source + ": missing required key '" + std::string(key) + "'");
  return std::get<std::string>(*r.values[0]);
}

}  // namespace

std::string Config::peek_string(const std::string& path, std::string_view key,
                                const std::vector<std::string>& overrides) {
  return peek(path, key, overrides, [&](Loader& loader) { return loader.file(path, ""); });
}

std::string Config::peek_string_text(std::string_view yaml, std::string_view key,
                                     const std::vector<std::string>& overrides, const std::string& source) {
  return peek(source, key, overrides,
              [&](Loader& loader) { return loader.text_leaves(std::string(yaml), source, fs::path()); });
}

size_t Config::index(std::string_view path) const {
  if (const Key* key = schema_.find(path)) return size_t(key - schema_.keys().data());
  std::string near = schema_.suggest(path);
  throw ConfigError(
      str_cat("config has no key '", path, "'", near.empty() ? "" : "; did you mean '" + near + "'?"));
}

bool Config::has(std::string_view path) const { return values_[index(path)].has_value(); }

const Value& Config::get(std::string_view path) const {
  size_t i = index(path);
  if (!values_[i]) throw ConfigError(str_cat("config key '", path, "' is not set (check has() first)"));
  return *values_[i];
}

const Value& Config::value_as(std::string_view path, Type want) const {
  const Key& key = schema_.keys()[index(path)];
  bool ok = key.type == want || (want == Type::String && key.type == Type::Enum);
  if (!ok)
    throw ConfigError(
        str_cat("config key '", path, "' is a ", type_name(key.type), ", read as a ", type_name(want)));
  return get(path);
}

int64_t Config::get_int(std::string_view path) const { return std::get<int64_t>(value_as(path, Type::Int)); }
double Config::get_float(std::string_view path) const {
  return std::get<double>(value_as(path, Type::Float));
}
bool Config::get_bool(std::string_view path) const { return std::get<bool>(value_as(path, Type::Bool)); }
const std::string& Config::get_string(std::string_view path) const {
  return std::get<std::string>(value_as(path, Type::String));
}
const std::vector<int64_t>& Config::get_int_list(std::string_view path) const {
  return std::get<std::vector<int64_t>>(value_as(path, Type::IntList));
}
const std::vector<double>& Config::get_float_list(std::string_view path) const {
  return std::get<std::vector<double>>(value_as(path, Type::FloatList));
}
const std::vector<std::string>& Config::get_string_list(std::string_view path) const {
  return std::get<std::vector<std::string>>(value_as(path, Type::StringList));
}

const std::string& Config::origin(std::string_view path) const { return origins_[index(path)]; }

std::string Config::dump() const {
  // Emits the keys in schema order, opening a section the first time one of its keys appears and
  // gathering the section's later keys under it.
  std::string out;
  std::vector<bool> done(schema_.keys().size(), false);
  auto emit = [&](auto&& self, const std::string& prefix, size_t first, int depth) -> void {
    for (size_t i = first; i < schema_.keys().size(); ++i) {
      const std::string& path = schema_.keys()[i].path;
      if (done[i] || !path.starts_with(prefix)) continue;
      std::string rest = path.substr(prefix.size());
      std::string indent(size_t(2 * depth), ' ');
      size_t dot = rest.find('.');
      if (dot == std::string::npos) {
        out += indent + rest + ": " + (values_[i] ? config::format_value(*values_[i]) : "null") + "\n";
        done[i] = true;
      } else {
        out += indent + rest.substr(0, dot) + ":\n";
        self(self, prefix + rest.substr(0, dot + 1), i, depth + 1);
      }
    }
  };
  emit(emit, "", 0, 0);
  return out;
}

}  // namespace moh
