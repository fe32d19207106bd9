// gate_rows as a tape node (see gate_rows_fns.h).
#include "autograd/gate_rows_fns.h"

#include "autograd/tape.h"

namespace moh::ag {

Variable gate_rows(const Variable& rows, const Variable& gates, const Tensor& index, bool scatter) {
  Tensor out = moh::gate_rows(rows.data(), gates.data(), index, scatter);
  Tensor rd = rows.data(), gd = gates.data();
  return record("gate_rows", out, {rows, gates}, [rd, gd, index, scatter](const Tensor& g, const Needs&) {
    GateRowsBackward grads = moh::gate_rows_backward(g, rd, gd, index, scatter);
    return std::vector<Tensor>{grads.grad_rows, grads.grad_gates};
  });
}

}  // namespace moh::ag
