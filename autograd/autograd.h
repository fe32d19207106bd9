// The autograd umbrella header: Variable, the tape (backward, NoGradGuard, record), gradcheck
// and every family of differentiable functions (namespace moh::ag).
#pragma once

#include "autograd/attention_fns.h"
#include "autograd/conv_fns.h"
#include "autograd/dropout_fns.h"
#include "autograd/elementwise_fns.h"
#include "autograd/gate_rows_fns.h"
#include "autograd/gradcheck.h"
#include "autograd/grouped_linear_fns.h"
#include "autograd/indexing_fns.h"
#include "autograd/loss_fns.h"
#include "autograd/matmul_fns.h"
#include "autograd/moh_route_fns.h"
#include "autograd/norm_fns.h"
#include "autograd/reduce_fns.h"
#include "autograd/resample_fns.h"
#include "autograd/shape_fns.h"
#include "autograd/softmax_fns.h"
#include "autograd/tape.h"
#include "autograd/variable.h"
