// Every CUDA backend function, for the op front ends' MOH_BACKEND dispatch (core/dispatch.h).
// One header per op family, mirroring core/cpu/.
#pragma once

#include "core/cuda/attention.h"
#include "core/cuda/conv.h"
#include "core/cuda/copy.h"
#include "core/cuda/cross_entropy.h"
#include "core/cuda/dropout.h"
#include "core/cuda/elementwise.h"
#include "core/cuda/embedding.h"
#include "core/cuda/fill.h"
#include "core/cuda/group_norm.h"
#include "core/cuda/grouped_linear.h"
#include "core/cuda/indexing.h"
#include "core/cuda/join.h"
#include "core/cuda/matmul.h"
#include "core/cuda/norm.h"
#include "core/cuda/random.h"
#include "core/cuda/reduce.h"
#include "core/cuda/resample.h"
#include "core/cuda/softmax.h"
