// open_latent_source: picks the format from what the path is (see latent_source.h).
#include "data/latent_source.h"

#include <filesystem>

#include "data/fast_dit_latents.h"
#include "data/latent_file.h"

namespace moh {

std::unique_ptr<LatentSource> open_latent_source(const std::string& path, const LatentSourceOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return open_latent_file(path, options.scale_factor);
  MOH_CHECK(fs::is_directory(path, ec), "latent source '", path, "' does not exist (expected an HDF5 latent file or a ",
            "fast-DiT folder holding ", options.features_dir, "/ and ", options.labels_dir, "/)");
  const fs::path features = fs::path(path) / options.features_dir, labels = fs::path(path) / options.labels_dir;
  MOH_CHECK(fs::is_directory(features, ec) && fs::is_directory(labels, ec), "latent source '", path,
            "' is a folder without the fast-DiT sub-folders '", features.string(), "' and '", labels.string(), "'");
  return open_fast_dit_latents(features.string(), labels.string(), options);
}

void check_latent_indices(const std::vector<int64_t>& indices, int64_t size, const std::string& what) {
  for (int64_t i : indices) MOH_CHECK(i >= 0 && i < size, what, ": sample index ", i, " is outside [0, ", size, ")");
}

}  // namespace moh
