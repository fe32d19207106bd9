// An autoencoder run as what encodes or decodes with one opens it (moh encode, moh decode, moh sample,
// the DiT task's sample evaluation): the stored run (tools/stored_run.h) and its autoencoder with the checkpoint's weights, in
// eval mode; plus the centre crop that undoes the padding of the training images.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/autoencoder/autoencoder.h"
#include "trainers/stored_run.h"

namespace moh {

struct StoredAutoencoder {
  StoredRun run;
  std::unique_ptr<Autoencoder> model;
};

// `data_overrides` (e.g. the split a command reads) apply after the user's overrides, once the run is
// known to be an autoencoder run. A run of another task is a ConfigError naming `command`.
StoredAutoencoder load_stored_autoencoder(const std::string& target, std::vector<std::string> overrides,
                                          const std::vector<std::string>& data_overrides,
                                          const std::string& command);

// images [N, C, S, S] centre-cropped to `crop` (0 = unchanged); `what` names the option in the error when
// the crop does not fit.
Tensor centre_crop(const Tensor& images, int64_t crop, const std::string& what = "--crop");

}  // namespace moh
