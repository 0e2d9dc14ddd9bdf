// Physical quantities written with their unit ("200 Gbps", "64 GB", "1.5 us", "313 TFLOPS") and
// their SI value. Everything inside hetplan is SI: bytes, bytes per second, seconds, FLOP per
// second, watts. Conversion happens here and nowhere else.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hetplan {

enum class Dimension {
  bytes,       // B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024)
  bandwidth,   // bytes per second: B/s, KB/s ... TB/s, GiB/s, and bits per second: bps ... Tbps,
               // Gb/s
  duration,    // seconds: ns, us, ms, s, min, h
  flop_rate,   // FLOP per second: FLOPS, GFLOPS, TFLOPS, PFLOPS
  power,       // watts: W, kW
  money_rate,  // currency units per hour: "2.5 USD/h"; the currency is not converted
};

// One example of a well-formed value, used in error messages ("a bandwidth such as \"200 Gbps\"").
std::string_view example_of(Dimension dimension);

// Human name of the dimension ("bandwidth").
std::string_view name_of(Dimension dimension);

// The range a value of the dimension may take in any input file: wide enough for every real
// chip, fabric and site, narrow enough that nothing absurd (0 FLOPS, 1e-320 TFLOPS, 1e308 ns)
// reaches a model (docs/formats/units.md#ranges).
struct QuantityRange {
  double min = 0;
  double max = 0;
  std::string_view text;  // "between 1 GFLOPS and 10 EFLOPS"
};
QuantityRange range_of(Dimension dimension);

// Parses "<number> <unit>" (the space is optional). Returns nullopt when the text is not a
// finite, non-negative number followed by a unit of the given dimension.
std::optional<double> parse_quantity(std::string_view text, Dimension dimension);

// Formats an SI value with a readable unit and fixed precision, e.g. 2.5e11 bytes/s -> "250 GB/s".
std::string format_quantity(double value_si, Dimension dimension);

// `value` rounded to six significant digits, the one rounding of every figure the project writes
// as JSON (docs/architecture.md): 0.1234567 -> 0.123457, 1.178189e10 -> 11781900000 exactly
// (large values are rounded to a whole power of ten, so no 11781899999.999998). Zero, infinities
// and NaN give 0.
double round6(double value);

}  // namespace hetplan
