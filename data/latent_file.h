// The HDF5 latent file (docs/latents.md), written by `moh encode` and read by DiT training:
//   /latents  float32 [N, C, H, W]   the encoder's latents, unscaled
//   /labels   int64 [N]              class labels in [0, num_classes)
//   root attributes: format = "moh-latents" (string), version = 1 (int), scale_factor (double > 0: latents *
//   scale_factor have unit variance), posterior = "mean" | "sample" (string: which the encoder stored),
//   num_classes (int >= 1).
// Opening validates all of it (and reads the labels, N int64s, into memory); any deviation is an error
// naming the file and the object. LatentFileWriter streams N latents in batches into a pre-sized file at
// path + ".tmp" and renames it to `path` on finish(), so a failed or abandoned encode leaves no file under
// the final name (and removes its temp file).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/io/hdf5_file.h"
#include "data/latent_source.h"

namespace moh {

inline constexpr const char* kLatentFileFormat = "moh-latents";
inline constexpr int64_t kLatentFileVersion = 1;

std::unique_ptr<LatentSource> open_latent_file(const std::string& path, std::optional<double> scale_factor = {});

struct LatentFileInfo {
  int64_t count = 0;   // N: samples the file will hold
  Shape latent_shape;  // [C, H, W]
  int64_t num_classes = 0;
  std::string posterior = "mean";
  std::optional<double> scale_factor;  // may instead be given to finish() (e.g. measured while encoding)
};

class LatentFileWriter {
 public:
  LatentFileWriter(const std::string& path, const LatentFileInfo& info);
  ~LatentFileWriter();  // without finish(): closes and removes the temp file
  LatentFileWriter(const LatentFileWriter&) = delete;
  LatentFileWriter& operator=(const LatentFileWriter&) = delete;

  // Appends the next B samples: float32 latents [B, C, H, W] and int64 labels [B] in [0, num_classes).
  void write(const Tensor& latents, const Tensor& labels);
  int64_t written() const { return written_; }
  // Needs all N samples written and a scale factor (info's or this one); publishes the file at path.
  void finish(std::optional<double> scale_factor = {});

 private:
  std::string path_, tmp_;
  LatentFileInfo info_;
  std::unique_ptr<Hdf5File> file_;
  int64_t written_ = 0;
};

}  // namespace moh
