// load_stored_autoencoder and centre_crop (see stored_autoencoder.h).
#include "trainers/stored_autoencoder.h"

#include "trainers/autoencoder_task.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

// The image channels a stored run trained on, from its checkpoint (the encoder's first convolution).
int64_t stored_image_channels(const StoredRun& run) {
  const auto it = run.data.model.find("encoder.conv_in.weight");
  if (it == run.data.model.end() || it->second.dim() != 4)
    MOH_FAIL("'", run.checkpoint, "' has no encoder.conv_in.weight [ch, C, 3, 3]: not an autoencoder checkpoint");
  return it->second.size(1);
}

}  // namespace

StoredAutoencoder load_stored_autoencoder(const std::string& target, std::vector<std::string> overrides,
                                          const std::vector<std::string>& data_overrides,
                                          const std::string& command) {
  StoredAutoencoder loaded{open_stored_run(target, overrides, command), nullptr};
  require_task(loaded.run, "autoencoder", command, "a run of the autoencoder task");
  if (!data_overrides.empty()) {
    overrides.insert(overrides.end(), data_overrides.begin(), data_overrides.end());
    loaded.run.config = Config::parse(loaded.run.data.config_text, training_schema("autoencoder"),
                                      loaded.run.checkpoint + " (stored config)", overrides);
  }
  Generator init(0);  // the weights are the checkpoint's
  const int64_t channels = stored_image_channels(loaded.run);
  loaded.model = std::make_unique<Autoencoder>(autoencoder_options_from_config(loaded.run.config, channels), init);
  loaded.model->load_state_dict(weights_to_evaluate(loaded.run));
  loaded.model->eval();
  return loaded;
}

Tensor centre_crop(const Tensor& images, int64_t crop, const std::string& what) {
  const int64_t s = images.size(2);
  if (crop == 0 || crop == s) return images;
  if (crop > s || (s - crop) % 2 != 0)
    MOH_FAIL(what, " ", crop, " does not fit the decoded ", s, " x ", s,
             " images (at most their side, with an even difference)");
  const int64_t o = (s - crop) / 2;
  return images.narrow(2, o, crop).narrow(3, o, crop);
}

}  // namespace moh
