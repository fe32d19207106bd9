// The `vit` task family: image classification with a VisionTransformer (models/vit) whose blocks use
// MHA or MoH attention, on Fashion-MNIST (in memory, the default) or an ImageNet-style image folder.
// Loss: cross entropy with optional label smoothing and Mixup/CutMix; evaluation reports top-1, top-5
// and loss on the held-out split and can write per-sample logits to HDF5 (eval.predictions).
#pragma once

#include "trainers/task.h"

namespace moh {

TaskFamily vit_task_family();

}  // namespace moh
