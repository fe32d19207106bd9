// The config schema: every key a run config may hold, as a dotted path (`optim.lr`) with a type, a
// default (or "required" / "optional, unset by default"), an allowed range or set, and a one-line doc.
// Keys are leaves; the dotted prefixes of keys are sections (`optim`), never keys themselves. The
// schema is the single source of truth: Config validates against it, dump() orders by it, and
// docs/config.md is generated from common_schema() by schema_markdown().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/error.h"

namespace moh {

// Every config problem (bad file, key, value, override, or a misuse of the schema API).
class ConfigError : public Error {
 public:
  using Error::Error;
};

namespace config {

enum class Type { Int, Float, Bool, String, Enum, IntList, FloatList, StringList };

// One value of a key; the alternative follows the key's Type (Enum holds a std::string).
using Value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                           std::vector<std::string>>;

// Whether a key may be absent: Default fills in `default_value`, Required must be given, Optional
// stays unset (Config::has() is false).
enum class Presence { Default, Required, Optional };

struct Key {
  std::string path;
  Type type = Type::String;
  Presence presence = Presence::Required;
  Value default_value;
  std::optional<double> lo, hi;      // inclusive bounds; for lists, per element
  std::vector<std::string> choices;  // Enum: the allowed values
  std::string pattern, pattern_doc;  // String: ECMAScript regex the whole value must match, and its gloss
  std::string doc;

  // Builders: `Key::Float("optim.lr", "peak learning rate").def(3e-4).min(0)`; a key without def() or
  // optional() is required.
  static Key Int(std::string path, std::string doc);
  static Key Float(std::string path, std::string doc);
  static Key Bool(std::string path, std::string doc);
  static Key String(std::string path, std::string doc);
  static Key Enum(std::string path, std::vector<std::string> choices, std::string doc);
  static Key IntList(std::string path, std::string doc);
  static Key FloatList(std::string path, std::string doc);
  static Key StringList(std::string path, std::string doc);

  // Sets the default; numbers convert to the key's type (an int default of a Float key is fine).
  template <class T>
  Key& def(const T& value) {
    return set_default(to_value(value));
  }
  Key& optional();
  Key& range(std::optional<double> low, std::optional<double> high);
  Key& min(double bound) { return range(bound, hi); }
  Key& max(double bound) { return range(lo, bound); }
  Key& match(std::string regex, std::string gloss);

  // "" when `value` has the key's type and satisfies its range/choices/pattern; else what is wrong.
  std::string check(const Value& value) const;

 private:
  static Key make(std::string path, Type type, std::string doc);
  Key& set_default(Value value);
  template <class T>
  static Value to_value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v;
    } else if constexpr (std::is_integral_v<T>) {
      return int64_t(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      return double(v);
    } else if constexpr (std::is_convertible_v<T, std::string>) {
      return std::string(v);
    } else {
      return Value(v);
    }
  }
};

// An ordered set of keys plus "exactly one of" groups. Order is the order of add(): dump() and the
// docs follow it, with each section placed where its first key was added.
class Schema {
 public:
  // Adds a key; throws ConfigError on a duplicate path, a path that is a section of another key (or
  // has a key as its section), a malformed path, or a default that fails the key's own checks.
  Schema& add(Key key);
  // Appends every key and group of `other` (a family's section onto the common schema).
  Schema& extend(const Schema& other);
  // Exactly one of `paths` must be set; each must be an Optional key already added.
  Schema& require_one_of(std::vector<std::string> paths);

  const std::vector<Key>& keys() const { return keys_; }
  const std::vector<std::vector<std::string>>& one_of_groups() const { return groups_; }
  const Key* find(std::string_view path) const;
  bool is_section(std::string_view path) const;
  // The group `path` belongs to, or nullptr.
  const std::vector<std::string>* group_of(std::string_view path) const;
  // The closest key or section path to a misspelt `path` ("" when nothing is close).
  std::string suggest(std::string_view path) const;

 private:
  std::vector<Key> keys_;
  std::vector<std::vector<std::string>> groups_;
};

// The keys every model family shares (run, train, eval, checkpoint, optim, schedule, moh, device...).
Schema common_schema();

// The candidate closest to `query` by edit distance (transpositions count 1), "" when none is within
// max(1, |query|/4) edits.
std::string closest_match(std::string_view query, const std::vector<std::string>& candidates);
// "integer", "float list", ... as written in messages and docs.
std::string type_name(Type type);
// The same with its article: "an integer", "a float list".
std::string type_phrase(Type type);
// What a key accepts: "integer >= 1", "one of adamw, adam, sgd", "cpu, cuda or cuda:N", ...
std::string allowed_text(const Key& key);
// A value as YAML flow text that reads back to the same value: 3e-04, 1.0, [0, 2, 2, 4], "a b", ...
std::string format_value(const Value& value);
// docs/config.md: a table per section with type, default, allowed values and doc of every key.
// `title` heads the page; `source` is the call that generated it, named in the generated-file comment.
std::string schema_markdown(const Schema& schema, const std::string& title = "Run config keys",
                            const std::string& source = "schema_markdown(common_schema()) (trainers/config_common.cpp)");

}  // namespace config
}  // namespace moh
