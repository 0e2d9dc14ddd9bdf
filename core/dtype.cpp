#include "core/dtype.hpp"

namespace hetplan {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::tf32:
      return "tf32";
    case DType::fp16:
      return "fp16";
    case DType::bf16:
      return "bf16";
    case DType::fp8:
      return "fp8";
  }
  return "?";
}

std::optional<DType> dtype_from_string(std::string_view text) {
  for (DType dtype : kAllDTypes) {
    if (to_string(dtype) == text) return dtype;
  }
  return std::nullopt;
}

double bytes_per_element(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::tf32:
      return 4.0;
    case DType::fp16:
    case DType::bf16:
      return 2.0;
    case DType::fp8:
      return 1.0;
  }
  return 4.0;
}

}  // namespace hetplan
