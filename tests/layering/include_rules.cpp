// The rule tables and the include scanner (include_rules.h).
#include "tests/layering/include_rules.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"

namespace moh::layering {
namespace {

namespace fs = std::filesystem;

struct Folder {
  const char* name;
  int layer;
};

// Lowest layer first. Same layer, different folder: siblings.
constexpr Folder kFolders[] = {
    {"core", 0},   {"autograd", 1}, {"layers", 2}, {"models", 3}, {"data", 3},
    {"trainers", 4}, {"tools", 5},  {"bench", 6},  {"fuzz", 6},   {"tests", 6},
};

// Sibling edges that are allowed: (from folder, to folder).
constexpr std::pair<const char*, const char*> kCrossEdges[] = {
    {"fuzz", "tests"},  // the JPEG/PNG fuzzers build their seeds with the suites' image writers
};

// Inside core: files under the first prefix include nothing under the second. The backends share
// only core/kernels (the kernel declarations) and core/math (per-element math, op kinds); neither of
// those includes a backend, and core/math, the lower of the two, not core/kernels either.
constexpr std::pair<const char*, const char*> kCoreForbidden[] = {
    {"core/cpu/", "core/cuda/"},     {"core/cuda/", "core/cpu/"},     {"core/kernels/", "core/cpu/"},
    {"core/kernels/", "core/cuda/"}, {"core/kernels/", "core/ops/"},  {"core/math/", "core/cpu/"},
    {"core/math/", "core/cuda/"},    {"core/math/", "core/kernels/"}, {"core/math/", "core/ops/"},
    {"core/math/", "core/io/"},      {"core/math/", "core/dist/"},
};

std::string first_component(const std::string& path) { return path.substr(0, path.find('/')); }

std::optional<Folder> folder_of(const std::string& path) {
  const std::string name = first_component(path);
  for (const Folder& f : kFolders)
    if (name == f.name) return f;
  return std::nullopt;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_cross_edge(const std::string& from, const std::string& to) {
  return std::any_of(std::begin(kCrossEdges), std::end(kCrossEdges),
                     [&](const auto& e) { return from == e.first && to == e.second; });
}

bool is_source_file(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc"};
  return kExtensions.count(p.extension().string()) > 0;
}

// The target of `#include "x"` or `#include <x>` on this line (std::nullopt for any other line),
// and whether it was quoted.
std::optional<std::pair<std::string, bool>> parse_include(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return std::nullopt;
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return std::nullopt;
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) return std::nullopt;
  const bool quoted = line[i] == '"';
  const size_t end = line.find(quoted ? '"' : '>', i + 1);
  if (end == std::string::npos) return std::nullopt;
  return std::make_pair(line.substr(i + 1, end - i - 1), quoted);
}

std::string layer_picture() {
  return "core -> autograd -> layers -> models | data -> trainers -> tools -> bench | fuzz | tests";
}

}  // namespace

const std::vector<std::string>& source_folders() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Folder& f : kFolders) out.push_back(f.name);
    return out;
  }();
  return names;
}

std::vector<IncludeLine> scan_includes(const fs::path& root, const std::string& folder) {
  const fs::path dir = root / folder;
  MOH_CHECK(fs::is_directory(dir), "include layering: ", dir.string(),
            " is not a folder (is MOH_SOURCE_DIR the source tree?)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && is_source_file(entry.path())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<IncludeLine> out;
  for (const fs::path& path : files) {
    std::ifstream in(path);
    MOH_CHECK(in, "include layering: cannot read ", path.string());
    const std::string relative = path.lexically_relative(root).generic_string();
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const auto parsed = parse_include(line);
      if (!parsed) continue;
      const auto& [target, quoted] = *parsed;
      if (quoted || folder_of(target)) out.push_back({relative, number, target});
    }
  }
  return out;
}

std::vector<std::string> layering_violations(const std::vector<IncludeLine>& includes) {
  std::vector<std::string> out;
  for (const IncludeLine& inc : includes) {
    const std::string where = str_cat(inc.file, ":", inc.line, ": includes \"", inc.target, "\": ");
    const auto from = folder_of(inc.file);
    const auto to = folder_of(inc.target);
    MOH_CHECK(from, "include layering: ", inc.file, " is outside the layered folders (", layer_picture(), ")");
    if (!to) {
      out.push_back(str_cat(where, "not rooted at a source folder; name it from the repository root, e.g. \"",
                            from->name, "/...\""));
      continue;
    }
    const std::string from_name = from->name, to_name = to->name;
    if (from_name != to_name && !is_cross_edge(from_name, to_name)) {
      if (to->layer > from->layer) {
        out.push_back(str_cat(where, "points up the layers: ", from_name, " (layer ", from->layer, ") may not include ",
                              to_name, " (layer ", to->layer, "); includes point down only (", layer_picture(), ")"));
        continue;
      }
      if (to->layer == from->layer) {
        out.push_back(str_cat(where, from_name, " and ", to_name, " are siblings (layer ", from->layer,
                              ") and may not include each other (", layer_picture(), ")"));
        continue;
      }
    }
    for (const auto& [from_prefix, to_prefix] : kCoreForbidden)
      if (starts_with(inc.file, from_prefix) && starts_with(inc.target, to_prefix))
        out.push_back(str_cat(where, "files under ", from_prefix, " may not include ", to_prefix,
                              " (what both backends share belongs in core/kernels, core/math or core/)"));
  }
  return out;
}

}  // namespace moh::layering
