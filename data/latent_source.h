// LatentSource: a class-labelled set of autoencoder latents, what the DiT family trains on (docs/latents.md).
// Two formats: the HDF5 latent file `moh encode` writes (data/latent_file.h) and fast-DiT's folders of
// per-sample .npy files (data/fast_dit_latents.h). A source is opened and validated whole up front (every
// error names the file); afterwards read() gives random-access batches in any order (DiT training draws a
// shuffled order from data/epoch_sampler.h) and may be called from several threads at once.
// Latents come back as stored: multiply them by scale_factor() to get the unit-variance latents a diffusion
// model sees (and divide samples by it before decoding).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh {

struct LatentBatch {
  Tensor latents;  // float32 [B, C, H, W], as stored
  Tensor labels;   // int64 [B], each in [0, num_classes)
};

class LatentSource {
 public:
  virtual ~LatentSource() = default;
  virtual int64_t size() const = 0;
  virtual const Shape& latent_shape() const = 0;  // [C, H, W]
  virtual int64_t num_classes() const = 0;
  virtual double scale_factor() const = 0;           // latents * scale_factor have unit variance
  virtual const std::string& posterior() const = 0;  // "mean" or "sample": what the encoder stored
  virtual const std::string& path() const = 0;       // the file or folder it reads, for messages
  // Samples `indices` (each in [0, size()), any order, repeats allowed), in that order.
  virtual LatentBatch read(const std::vector<int64_t>& indices) const = 0;
};

struct LatentSourceOptions {
  // Replaces the scale factor the source states (the HDF5 file's attribute; for fast-DiT folders, 1:
  // fast-DiT's extract_features.py stores latents already multiplied by 0.18215).
  std::optional<double> scale_factor;
  // fast-DiT folders: the sub-folders of the root (absolute paths are taken as they are) ...
  std::string features_dir = "imagenet256_features";
  std::string labels_dir = "imagenet256_labels";
  // ... the class count (default: the largest label + 1) ...
  std::optional<int64_t> num_classes;
  // ... and whether open checks every feature file's header (true) or only the first one's (each file is
  // checked anyway when read). Label files are always read whole on open.
  bool check_all_features = true;
};

// An HDF5 latent file, or a folder holding options.features_dir and options.labels_dir (fast-DiT).
std::unique_ptr<LatentSource> open_latent_source(const std::string& path, const LatentSourceOptions& options = {});

// Checks every index of a read() against the source's size; `what` names the source.
void check_latent_indices(const std::vector<int64_t>& indices, int64_t size, const std::string& what);

}  // namespace moh
