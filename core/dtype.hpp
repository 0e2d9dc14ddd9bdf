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

}  // namespace hetplan
