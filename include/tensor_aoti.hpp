// C++17 RAII wrapper of tensor_aoti.h: an AOTInductor model run on tensor::Tensor.
//
//   tensor::aoti::Model model("model.pt2");
//   std::vector<tensor::Tensor> out = model.run({input});
//
// Failures are reported as tensor.hpp reports them (tensor::Error, or its handler when
// exceptions are off), with tensor_aoti_last_error()'s text.
#ifndef LIBTENSOR_TENSOR_AOTI_HPP
#define LIBTENSOR_TENSOR_AOTI_HPP

#include <string>
#include <vector>

#include "tensor.hpp"
#include "tensor_aoti.h"

namespace tensor {
namespace aoti {

class Model {
 public:
  /// Loads a .pt2 package or a model .so (tensor_aoti_load).
  explicit Model(const std::string& path) {
    tensor_status_t s = tensor_aoti_load(path.c_str(), &m_);
    if (s != TENSOR_OK) detail::fail(s, tensor_aoti_last_error());
  }
  ~Model() { tensor_aoti_release(m_); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model(Model&& o) noexcept : m_(o.m_) { o.m_ = nullptr; }
  Model& operator=(Model&& o) noexcept {
    if (this != &o) {
      tensor_aoti_release(m_);
      m_ = o.m_;
      o.m_ = nullptr;
    }
    return *this;
  }

  size_t num_inputs() const noexcept { return tensor_aoti_num_inputs(m_); }
  size_t num_outputs() const noexcept { return tensor_aoti_num_outputs(m_); }
  /// The package's AOTI_CPU_ISA ("" when unknown): tensor_aoti_cpu_isa.
  const char* cpu_isa() const noexcept { return tensor_aoti_cpu_isa(m_); }
  /// Whether runs can check (and so run) this model's inputs: tensor_aoti_checks_inputs.
  bool checks_inputs() const noexcept { return tensor_aoti_checks_inputs(m_); }

  /// Runs the model (tensor_aoti_run): inputs are borrowed, the outputs are new tensors.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    std::vector<tensor_t*> in;
    in.reserve(inputs.size());
    for (const Tensor& t : inputs) in.push_back(t.get());
    std::vector<tensor_t*> out(num_outputs(), nullptr);
    tensor_status_t s = tensor_aoti_run(m_, in.data(), in.size(), out.data(), out.size());
    if (s != TENSOR_OK) detail::fail(s, tensor_aoti_last_error());
    std::vector<Tensor> result;
    result.reserve(out.size());
    for (tensor_t* t : out) result.push_back(Tensor::adopt(t));
    return result;
  }

  /// The C handle (borrowed).
  tensor_aoti_model_t* get() const noexcept { return m_; }

 private:
  tensor_aoti_model_t* m_ = nullptr;
};

}  // namespace aoti
}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_AOTI_HPP
