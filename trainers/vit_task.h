// The `vit` task family: image classification with a VisionTransformer (models/vit) whose blocks use
// MHA or MoH attention, on Fashion-MNIST (in memory, the default) or an ImageNet-style image folder.
// Loss: cross entropy with optional label smoothing and Mixup/CutMix; evaluation reports top-1, top-5
// and loss on the held-out split and can write per-sample logits to HDF5 (eval.predictions).
#pragma once

#include "data/image_source.h"
#include "models/vit/vit.h"
#include "trainers/task.h"

namespace moh {

TaskFamily vit_task_family();

// The model a validated vit config describes for `data`'s images and classes (preset, then the model.*
// overrides, then the attention keys); ConfigErrors name the key. Used by the task and by `moh fid`.
VitOptions vit_options_from_config(const Config& cfg, const ImageSource& data);

}  // namespace moh
