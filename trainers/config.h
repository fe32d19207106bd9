// Config: a run configuration loaded from YAML and validated against a config::Schema. A file may name
// a `base:` file (relative to itself, recursively; cycles are errors) whose keys it overrides key by
// key; command-line overrides `dotted.key=value` (value parsed as YAML) apply last. Every schema key
// then holds a checked value of its type (defaults filled in), except unset optional keys. Errors are
// ConfigError naming the file and line (or the override), the key path, the value and what is allowed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainers/config_schema.h"

namespace moh {

class Config {
 public:
  Config() = default;  // empty: no keys (a placeholder until load/parse)
  // Loads the YAML file `path` with its bases, applies `overrides`, and validates.
  static Config load(const std::string& path, const config::Schema& schema,
                     const std::vector<std::string>& overrides = {});
  // The same from YAML text (a checkpoint's dump()); `source` names it in errors and a `base:` in it is
  // relative to the working directory.
  static Config parse(std::string_view yaml, const config::Schema& schema,
                      const std::string& source = "<string>", const std::vector<std::string>& overrides = {});

  // The string value of one key (e.g. `task`, which decides the rest of the schema) in a config file
  // or text with its bases and overrides, ignoring every other key; throws ConfigError when unset.
  static std::string peek_string(const std::string& path, std::string_view key,
                                 const std::vector<std::string>& overrides = {});
  static std::string peek_string_text(std::string_view yaml, std::string_view key,
                                      const std::vector<std::string>& overrides = {},
                                      const std::string& source = "<string>");

  // Whether `path` holds a value (false only for an unset optional key); throws on a path not in the schema.
  bool has(std::string_view path) const;
  // Typed reads; each throws ConfigError for a path not in the schema, a key of another type, or an unset
  // key. get_string reads string and enum keys.
  int64_t get_int(std::string_view path) const;
  double get_float(std::string_view path) const;
  bool get_bool(std::string_view path) const;
  const std::string& get_string(std::string_view path) const;
  const std::vector<int64_t>& get_int_list(std::string_view path) const;
  const std::vector<double>& get_float_list(std::string_view path) const;
  const std::vector<std::string>& get_string_list(std::string_view path) const;
  const config::Value& get(std::string_view path) const;
  // Where the value came from: "configs/vit/base.yaml:12", "override 'optim.lr=3e-4'", "default", or ""
  // for an unset key.
  const std::string& origin(std::string_view path) const;

  // The fully resolved config as YAML: every schema key in schema order, nested by section, defaults
  // filled in, unset optional keys as null. parse(dump()) gives back the same values.
  std::string dump() const;
  const config::Schema& schema() const { return schema_; }

 private:
  Config(config::Schema schema, std::vector<std::optional<config::Value>> values,
         std::vector<std::string> origins)
      : schema_(std::move(schema)), values_(std::move(values)), origins_(std::move(origins)) {}
  size_t index(std::string_view path) const;
  const config::Value& value_as(std::string_view path, config::Type want) const;

  config::Schema schema_;
  std::vector<std::optional<config::Value>> values_;  // parallel to schema_.keys()
  std::vector<std::string> origins_;
};

}  // namespace moh
