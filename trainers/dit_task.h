// The `dit` task family: class-conditional latent diffusion with a DiT
// (models/dit) trained on autoencoder latents (an HDF5 latent file of `moh
// encode` or fast-DiT folders, data/latent_source.h), the DiT recipe: latents x
// scale factor, uniform timesteps, eps-prediction with learned sigma, loss =
// MSE + the variational bound (models/dit/diffusion_loss.h), class dropout for
// classifier-free guidance. The latent shape and class count come from the
// latent source (no config key can contradict them); the model is a preset plus
// model.* overrides with MHA or MoH attention from the shared keys. Evaluation
// gives each held-out latent i its own timestep and noise, drawn from a
// generator of (seed, i) alone, so the metrics are the same on any number of
// ranks and at every evaluation of a run: the differences between evaluations
// are the model's.
#pragma once

#include "models/dit/diffusion.h"
#include "models/dit/dit.h"
#include "trainers/task.h"

namespace moh {

TaskFamily dit_task_family();

// The model a validated dit config describes for latents [C, S, S] of
// `num_classes` classes (preset, then the model.* overrides, then the attention
// keys); ConfigErrors name the key. Used by the task and by `moh sample`.
DitOptions dit_options_from_config(const Config& cfg, int64_t channels, int64_t side, int64_t num_classes);
// The base diffusion process of diffusion.steps / diffusion.schedule (no
// respacing: what training uses).
DiffusionOptions diffusion_options_from_config(const Config& cfg);

}  // namespace moh
