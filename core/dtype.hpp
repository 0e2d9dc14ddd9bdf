// Numeric formats a chip computes in and a job trains in.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace hetplan {

enum class DType { fp32, tf32, fp16, bf16, fp8 };

inline constexpr std::array kAllDTypes{DType::fp32, DType::tf32, DType::fp16, DType::bf16,
                                       DType::fp8};

std::string_view to_string(DType dtype);
std::optional<DType> dtype_from_string(std::string_view text);

// Bytes one element occupies in memory (tf32 is stored as fp32).
double bytes_per_element(DType dtype);

// The dtype of everything but the FP8 GEMMs when training in `training`: fp8 training is
// Transformer Engine's recipe, FP8 GEMMs of the linear layers over BF16 (weights, activations,
// attention, the other operators and the communication stay BF16). Other dtypes: themselves.
inline DType storage_dtype(DType training) {
  return training == DType::fp8 ? DType::bf16 : training;
}

}  // namespace hetplan
