// Schema building and checking: key builders, value checks against type/range/choices/pattern,
// "did you mean" suggestions, YAML text of values, and the markdown reference generated from a schema.
#include "trainers/config_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>

namespace moh::config {
namespace {

bool is_list(Type t) { return t == Type::IntList || t == Type::FloatList || t == Type::StringList; }
bool is_numeric(Type t) {
  return t == Type::Int || t == Type::Float || t == Type::IntList || t == Type::FloatList;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string_view leaf(std::string_view path) {
  size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

bool valid_path(std::string_view path) {
  if (path.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view part =
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty()) return false;
    for (char c : part)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string format_double(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  // Always a '.', so that YAML 1.1 readers (PyYAML) also read a float: 1.0, 1.0e-08.
  size_t e = s.find('e');
  if (s.find('.') == std::string::npos) s.insert(e == std::string::npos ? s.size() : e, ".0");
  return s;
}

// Plain YAML scalars that every YAML reader takes as this same string; everything else is quoted.
bool plain_safe(const std::string& s) {
  static const std::regex plain("[A-Za-z_/][A-Za-z0-9_./:+-]*");
  if (!std::regex_match(s, plain) || s.back() == ':') return false;
  std::string lower = s;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"null", "true", "false", "yes", "no", "on", "off", "y", "n"})
    if (lower == word) return false;
  return true;
}

std::string format_string(const std::string& s) {
  if (plain_safe(s)) return s;
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

template <class T, class F>
std::string format_list(const std::vector<T>& items, F&& fmt) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + fmt(items[i]);
  return out + "]";
}

std::string format_bound(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

// The range problem of one number, "" when inside.
std::string range_problem(const Key& k, double v) {
  if ((k.lo && v < *k.lo) || (k.hi && v > *k.hi)) return "out of range";
  return "";
}

std::string element_problem(const Key& k, const Value& v) {
  if (auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return "not a finite number";
    return range_problem(k, *d);
  }
  if (auto* i = std::get_if<int64_t>(&v)) return range_problem(k, double(*i));
  if (auto* s = std::get_if<std::string>(&v)) {
    if (k.type == Type::Enum && std::find(k.choices.begin(), k.choices.end(), *s) == k.choices.end())
      return "not an allowed value";
    if (!k.pattern.empty() && !std::regex_match(*s, std::regex(k.pattern))) return "not an allowed value";
  }
  return "";
}

template <class T>
std::string list_problem(const Key& k, const std::vector<T>& items) {
  for (size_t i = 0; i < items.size(); ++i) {
    std::string p = element_problem(k, Value(items[i]));
    if (!p.empty()) return "element " + std::to_string(i) + " is " + p;
  }
  return "";
}

std::string markdown_cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string type_name(Type type) {
  switch (type) {
    case Type::Int: return "integer";
    case Type::Float: return "float";
    case Type::Bool: return "bool";
    case Type::String: return "string";
    case Type::Enum: return "enum";
    case Type::IntList: return "integer list";
    case Type::FloatList: return "float list";
    case Type::StringList: return "string list";
  }
  return "?";
}

std::string type_phrase(Type type) {
  std::string name = type_name(type);
  return (name[0] == 'i' || name[0] == 'e' ? "an " : "a ") + name;
}

Key Key::make(std::string path, Type type, std::string doc) {
  Key k;
  k.path = std::move(path);
  k.type = type;
  k.doc = std::move(doc);
  return k;
}

Key Key::Int(std::string path, std::string doc) { return make(std::move(path), Type::Int, std::move(doc)); }
Key Key::Float(std::string path, std::string doc) {
  return make(std::move(path), Type::Float, std::move(doc));
}
Key Key::Bool(std::string path, std::string doc) { return make(std::move(path), Type::Bool, std::move(doc)); }
Key Key::String(std::string path, std::string doc) {
  return make(std::move(path), Type::String, std::move(doc));
}
Key Key::IntList(std::string path, std::string doc) {
  return make(std::move(path), Type::IntList, std::move(doc));
}
Key Key::FloatList(std::string path, std::string doc) {
  return make(std::move(path), Type::FloatList, std::move(doc));
}
Key Key::StringList(std::string path, std::string doc) {
  return make(std::move(path), Type::StringList, std::move(doc));
}

Key Key::Enum(std::string path, std::vector<std::string> choices, std::string doc) {
  Key k = make(std::move(path), Type::Enum, std::move(doc));
  k.choices = std::move(choices);
  return k;
}

Key& Key::set_default(Value value) {
  if (type == Type::Float)
    if (auto* i = std::get_if<int64_t>(&value)) value = double(*i);
  if (type == Type::FloatList)
    if (auto* l = std::get_if<std::vector<int64_t>>(&value))
      value = std::vector<double>(l->begin(), l->end());
  default_value = std::move(value);
  presence = Presence::Default;
  return *this;
}

Key& Key::optional() {
  presence = Presence::Optional;
  return *this;
}

Key& Key::range(std::optional<double> low, std::optional<double> high) {
  if (!is_numeric(type))
    throw ConfigError(
        str_cat("config schema: key '", path, "' is a ", type_name(type), "; only numbers take a range"));
  if (low && high && *low > *high)
    throw ConfigError(
        str_cat("config schema: key '", path, "' has an empty range [", *low, ", ", *high, "]"));
  lo = low;
  hi = high;
  return *this;
}

Key& Key::match(std::string regex, std::string gloss) {
  if (type != Type::String && type != Type::StringList)
    throw ConfigError(
        str_cat("config schema: key '", path, "' is a ", type_name(type), "; only strings take a pattern"));
  try {
    std::regex check(regex);
  } catch (const std::regex_error& e) {
    throw ConfigError(str_cat("config schema: key '", path, "' has a bad pattern '", regex, "': ", e.what()));
  }
  pattern = std::move(regex);
  pattern_doc = std::move(gloss);
  return *this;
}

std::string Key::check(const Value& value) const {
  bool type_ok = false;
  switch (type) {
    case Type::Int: type_ok = std::holds_alternative<int64_t>(value); break;
    case Type::Float: type_ok = std::holds_alternative<double>(value); break;
    case Type::Bool: type_ok = std::holds_alternative<bool>(value); break;
    case Type::String:
    case Type::Enum: type_ok = std::holds_alternative<std::string>(value); break;
    case Type::IntList: type_ok = std::holds_alternative<std::vector<int64_t>>(value); break;
    case Type::FloatList: type_ok = std::holds_alternative<std::vector<double>>(value); break;
    case Type::StringList: type_ok = std::holds_alternative<std::vector<std::string>>(value); break;
  }
  if (!type_ok) return "not " + type_phrase(type);
  if (auto* l = std::get_if<std::vector<int64_t>>(&value)) return list_problem(*this, *l);
  if (auto* l = std::get_if<std::vector<double>>(&value)) return list_problem(*this, *l);
  if (auto* l = std::get_if<std::vector<std::string>>(&value)) return list_problem(*this, *l);
  return element_problem(*this, value);
}

Schema& Schema::add(Key key) {
  auto fail = [&](const std::string& why) {
    throw ConfigError("config schema: key '" + key.path + "' " + why);
  };
  if (!valid_path(key.path)) fail("is not a dotted path of lower-case words ([a-z0-9_], '.' between)");
  if (key.path == "base") fail("is reserved (a file's base config)");
  if (find(key.path)) fail("is already in the schema");
  if (is_section(key.path)) fail("is already a section of other keys");
  for (const Key& k : keys_)
    if (key.path.starts_with(k.path + ".")) fail("lies under '" + k.path + "', which is a key");
  if (key.type == Type::Enum && key.choices.empty()) fail("is an enum without allowed values");
  if (key.type != Type::Enum && !key.choices.empty()) fail("has allowed values but is not an enum");
  if (key.doc.empty()) fail("has no doc line");
  if (key.presence == Presence::Default) {
    std::string problem = key.check(key.default_value);
    if (!problem.empty())
      fail("has default " + format_value(key.default_value) + ", which is " + problem +
           " (allowed: " + allowed_text(key) + ")");
  }
  keys_.push_back(std::move(key));
  return *this;
}

Schema& Schema::extend(const Schema& other) {
  for (const Key& k : other.keys_) add(k);
  for (const auto& g : other.groups_) require_one_of(g);
  return *this;
}

Schema& Schema::require_one_of(std::vector<std::string> paths) {
  if (paths.size() < 2) throw ConfigError("config schema: a one-of group needs at least two keys");
  for (const std::string& p : paths) {
    const Key* k = find(p);
    if (!k) throw ConfigError("config schema: one-of group names unknown key '" + p + "'");
    if (k->presence != Presence::Optional)
      throw ConfigError("config schema: one-of group key '" + p +
                        "' must be optional (no default, not required)");
    if (group_of(p)) throw ConfigError("config schema: key '" + p + "' is already in a one-of group");
  }
  groups_.push_back(std::move(paths));
  return *this;
}

const Key* Schema::find(std::string_view path) const {
  for (const Key& k : keys_)
    if (k.path == path) return &k;
  return nullptr;
}

bool Schema::is_section(std::string_view path) const {
  for (const Key& k : keys_)
    if (k.path.size() > path.size() && k.path.starts_with(path) && k.path[path.size()] == '.') return true;
  return false;
}

const std::vector<std::string>* Schema::group_of(std::string_view path) const {
  for (const auto& g : groups_)
    if (std::find(g.begin(), g.end(), path) != g.end()) return &g;
  return nullptr;
}

std::string closest_match(std::string_view query, const std::vector<std::string>& candidates) {
  size_t limit = std::max<size_t>(1, query.size() / 4), best = limit + 1;
  std::string found;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(query, c);
    if (d < best) best = d, found = c;
  }
  return found;
}

std::string Schema::suggest(std::string_view path) const {
  std::vector<std::string> candidates;
  for (const Key& k : keys_) {
    candidates.push_back(k.path);
    for (size_t dot = k.path.find('.'); dot != std::string::npos; dot = k.path.find('.', dot + 1))
      candidates.push_back(k.path.substr(0, dot));
  }
  std::string found = closest_match(path, candidates);
  if (!found.empty()) return found;
  // The right name in the wrong section (`train.lr` for `optim.lr`), or a truncated name.
  std::string_view name = leaf(path);
  std::vector<std::string> leaves;
  for (const Key& k : keys_) leaves.emplace_back(leaf(k.path));
  std::string near = closest_match(name, leaves);
  for (const Key& k : keys_)
    if ((!near.empty() && leaf(k.path) == near) || (name.size() >= 4 && leaf(k.path).starts_with(name)))
      return k.path;
  return "";
}

std::string allowed_text(const Key& key) {
  std::string out;
  switch (key.type) {
    case Type::Bool: return "true or false";
    case Type::Enum: {
      out = "one of ";
      for (size_t i = 0; i < key.choices.size(); ++i) out += (i ? ", " : "") + key.choices[i];
      return out;
    }
    case Type::String: return key.pattern.empty() ? "any string" : key.pattern_doc;
    case Type::StringList: return key.pattern.empty() ? "list of strings" : "list of: " + key.pattern_doc;
    case Type::Int: out = "integer"; break;
    case Type::Float: out = "float"; break;
    case Type::IntList: out = "list of integers"; break;
    case Type::FloatList: out = "list of floats"; break;
  }
  std::string each = is_list(key.type) ? ", each" : "";
  if (key.lo && key.hi)
    out += each + " in [" + format_bound(*key.lo) + ", " + format_bound(*key.hi) + "]";
  else if (key.lo)
    out += each + " >= " + format_bound(*key.lo);
  else if (key.hi)
    out += each + " <= " + format_bound(*key.hi);
  return out;
}

std::string format_value(const Value& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_double(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return format_string(v); }
    std::string operator()(const std::vector<int64_t>& v) const { return format_list(v, (*this)); }
    std::string operator()(const std::vector<double>& v) const { return format_list(v, (*this)); }
    std::string operator()(const std::vector<std::string>& v) const { return format_list(v, (*this)); }
  };
  return std::visit(Visitor{}, value);
}

std::string schema_markdown(const Schema& schema, const std::string& title, const std::string& source) {
  std::ostringstream md;
  md << "# " << title << "\n\n"
        "<!-- Generated by moh::config::" << source << ".\n"
        "     Do not edit by hand; regenerate with:\n"
        "     MOH_UPDATE_DOCS=1 build/moh_tests --gtest_filter='ConfigDocs.*' -->\n\n"
        "A run config is a YAML file of nested maps: `optim:` then `  lr: 3e-4` sets the key `optim.lr`.\n\n"
        "- `base: ../common.yaml` at the top level loads that file first (relative to this file; a base\n"
        "  may have its own base). This file's keys override the base's key by key; lists are replaced.\n"
        "- `null` resets a key to its default (an optional key becomes unset).\n"
        "- Of the keys marked \"exactly one of\" set one; setting one in a file or an override drops the\n"
        "  others inherited from its bases (`train.epochs: 3` in a child of a `train.steps` file).\n"
        "- Overrides on the command line use the same dotted paths, values are parsed as YAML:\n"
        "  `build/moh train CONFIG.yaml optim.lr=3e-4 model.routed_topk=[0,2,2,4]`.\n"
        "- `build/moh config CONFIG.yaml [overrides]` prints the fully resolved config, defaults included.\n"
        "- Unknown keys, wrong types, out-of-range values and missing required keys are errors naming the\n"
        "  file, line and key.\n\n"
        "Model families add their own `model.*` keys on top of the ones below.\n";
  // One table per top-level section in order of first appearance; keys without a section go under
  // "top level".
  auto section_of = [](const std::string& path) {
    size_t dot = path.find('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
  };
  std::vector<std::string> sections;
  for (const Key& k : schema.keys())
    if (std::find(sections.begin(), sections.end(), section_of(k.path)) == sections.end())
      sections.push_back(section_of(k.path));
  for (const std::string& section : sections) {
    md << "\n## " << (section.empty() ? "top level" : "`" + section + "`") << "\n\n"
       << "| key | type | default | allowed | description |\n| --- | --- | --- | --- | --- |\n";
    for (const Key& k : schema.keys()) {
      if (section_of(k.path) != section) continue;
      std::string def;
      if (k.presence == Presence::Default) {
        def = "`" + format_value(k.default_value) + "`";
      } else if (k.presence == Presence::Required) {
        def = "*required*";
      } else if (const auto* group = schema.group_of(k.path)) {
        def = "unset; exactly one of";
        for (size_t i = 0; i < group->size(); ++i) def += (i ? ", `" : " `") + (*group)[i] + "`";
      } else {
        def = "unset";
      }
      md << "| `" << k.path << "` | " << type_name(k.type) << " | " << markdown_cell(def) << " | "
         << markdown_cell(allowed_text(k)) << " | " << markdown_cell(k.doc) << " |\n";
    }
  }
  return md.str();
}

}  // namespace moh::config
