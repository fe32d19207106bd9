// fast-DiT latent folders (github.com/chuanyangjin/fast-DiT, extract_features.py): one sample per pair of
// .npy files with the same name, <features_dir>/<name>.npy holding float32 (1, C, H, W) or (C, H, W) and
// <labels_dir>/<name>.npy holding an int64 or int32 label of shape (1,) or (). extract_features.py writes
// <feature-path>/imagenet256_features/<i>.npy and imagenet256_labels/<i>.npy for i = 0, 1, ... with the
// latents already multiplied by 0.18215 (so the scale factor here is 1 unless overridden) and drawn from the
// posterior (posterior() == "sample").
// Samples are ordered by name: numerically when every name is a decimal integer ("9.npy" before "10.npy"),
// else by byte order. Opening lists both folders (names must match one to one), reads every label and checks
// the feature headers (dtype, shape equal across files, fortran order, size); every error names the file.
#pragma once

#include <memory>
#include <string>

#include "data/latent_source.h"

namespace moh {

// features_dir and labels_dir are folders; options.features_dir / labels_dir are not used.
std::unique_ptr<LatentSource> open_fast_dit_latents(const std::string& features_dir, const std::string& labels_dir,
                                                    const LatentSourceOptions& options = {});

}  // namespace moh
