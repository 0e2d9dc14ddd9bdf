#include "core/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <span>

namespace hetplan {
namespace {

struct UnitEntry {
  std::string_view symbol;
  double factor;  // multiply the written number by this to get SI
};

constexpr double kKi = 1024.0;

constexpr std::array kBytes{
    UnitEntry{"B", 1.0},
    UnitEntry{"KB", 1e3},
    UnitEntry{"MB", 1e6},
    UnitEntry{"GB", 1e9},
    UnitEntry{"TB", 1e12},
    UnitEntry{"KiB", kKi},
    UnitEntry{"MiB", kKi* kKi},
    UnitEntry{"GiB", kKi* kKi* kKi},
    UnitEntry{"TiB", kKi* kKi* kKi* kKi},
};

constexpr std::array kBandwidth{
    UnitEntry{"B/s", 1.0},
    UnitEntry{"KB/s", 1e3},
    UnitEntry{"MB/s", 1e6},
    UnitEntry{"GB/s", 1e9},
    UnitEntry{"TB/s", 1e12},
    UnitEntry{"MiB/s", kKi* kKi},
    UnitEntry{"GiB/s", kKi* kKi* kKi},
    UnitEntry{"bps", 1.0 / 8},
    UnitEntry{"Kbps", 1e3 / 8},
    UnitEntry{"Mbps", 1e6 / 8},
    UnitEntry{"Gbps", 1e9 / 8},
    UnitEntry{"Tbps", 1e12 / 8},
    UnitEntry{"Mb/s", 1e6 / 8},
    UnitEntry{"Gb/s", 1e9 / 8},
    UnitEntry{"Tb/s", 1e12 / 8},
};

constexpr std::array kDuration{
    UnitEntry{"ns", 1e-9}, UnitEntry{"us", 1e-6},  UnitEntry{"ms", 1e-3},
    UnitEntry{"s", 1.0},   UnitEntry{"min", 60.0}, UnitEntry{"h", 3600.0},
};

constexpr std::array kFlopRate{
    UnitEntry{"FLOPS", 1.0},
    UnitEntry{"GFLOPS", 1e9},
    UnitEntry{"TFLOPS", 1e12},
    UnitEntry{"PFLOPS", 1e15},
};

constexpr std::array kPower{UnitEntry{"W", 1.0}, UnitEntry{"kW", 1e3}};

std::span<const UnitEntry> units_of(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes:
      return kBytes;
    case Dimension::bandwidth:
      return kBandwidth;
    case Dimension::duration:
      return kDuration;
    case Dimension::flop_rate:
      return kFlopRate;
    case Dimension::power:
      return kPower;
    case Dimension::money_rate:
      return {};
  }
  return {};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "313 TFLOPS" / "313TFLOPS" into the number and the unit text.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  text = trim(text);
  std::size_t end = 0;
  while (end < text.size()) {
    const char c = text[end];
    const bool numeric = (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' ||
                         ((c == 'e' || c == 'E') && end > 0 && end + 1 < text.size() &&
                          ((text[end + 1] >= '0' && text[end + 1] <= '9') || text[end + 1] == '-' ||
                           text[end + 1] == '+'));
    if (!numeric) break;
    ++end;
  }
  if (end == 0) return std::nullopt;
  double value = 0.0;
  const auto number = text.substr(0, end);
  const auto result = std::from_chars(number.data(), number.data() + number.size(), value);
  if (result.ec != std::errc{} || result.ptr != number.data() + number.size()) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return std::pair{value, trim(text.substr(end))};
}

}  // namespace

std::string_view example_of(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes:
      return "\"64 GB\"";
    case Dimension::bandwidth:
      return "\"200 Gbps\"";
    case Dimension::duration:
      return "\"1.5 us\"";
    case Dimension::flop_rate:
      return "\"313 TFLOPS\"";
    case Dimension::power:
      return "\"400 W\"";
    case Dimension::money_rate:
      return "\"2.5 USD/h\"";
  }
  return "";
}

QuantityRange range_of(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes:
      return {1048576.0, 1e18, "between 1 MiB and 1 EB"};
    case Dimension::bandwidth:
      return {1e6, 1e15, "between 1 MB/s and 1 PB/s"};
    case Dimension::duration:
      return {0.0, 1e9, "between 0 s and 1e9 s"};
    case Dimension::flop_rate:
      return {1e6, 1e19, "between 1 MFLOPS and 10 EFLOPS"};
    case Dimension::power:
      return {1.0, 1e5, "between 1 W and 100 kW"};
    case Dimension::money_rate:
      return {0.0, 1e9, "between 0 and 1e9 per hour"};
  }
  return {0.0, 0.0, ""};
}

std::string_view name_of(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes:
      return "size";
    case Dimension::bandwidth:
      return "bandwidth";
    case Dimension::duration:
      return "duration";
    case Dimension::flop_rate:
      return "compute rate";
    case Dimension::power:
      return "power";
    case Dimension::money_rate:
      return "price per hour";
  }
  return "";
}

std::optional<double> parse_quantity(std::string_view text, Dimension dimension) {
  const auto split = split_number(text);
  if (!split) return std::nullopt;
  const auto [number, unit] = *split;
  if (number < 0.0) return std::nullopt;
  if (dimension == Dimension::money_rate) {
    // "<number> <CUR>/h": any currency code of 3 upper-case letters, per hour.
    if (unit.size() != 5 || unit.substr(3) != "/h") return std::nullopt;
    for (char c : unit.substr(0, 3)) {
      if (c < 'A' || c > 'Z') return std::nullopt;
    }
    return number / 3600.0;
  }
  for (const auto& entry : units_of(dimension)) {
    if (entry.symbol == unit) {
      const double si = number * entry.factor;
      if (!std::isfinite(si)) return std::nullopt;
      return si;
    }
  }
  return std::nullopt;
}

std::string format_quantity(double value_si, Dimension dimension) {
  struct Scale {
    double factor;
    const char* symbol;
  };
  static constexpr std::array<Scale, 5> kByteScales{
      {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1, "B"}}};
  static constexpr std::array<Scale, 5> kBwScales{
      {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1, "B/s"}}};
  static constexpr std::array<Scale, 4> kTimeScales{
      {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}}};
  static constexpr std::array<Scale, 4> kFlopScales{
      {{1e15, "PFLOPS"}, {1e12, "TFLOPS"}, {1e9, "GFLOPS"}, {1, "FLOPS"}}};
  static constexpr std::array<Scale, 2> kPowerScales{{{1e3, "kW"}, {1, "W"}}};
  std::span<const Scale> scales;
  switch (dimension) {
    case Dimension::bytes:
      scales = kByteScales;
      break;
    case Dimension::bandwidth:
      scales = kBwScales;
      break;
    case Dimension::duration:
      scales = kTimeScales;
      break;
    case Dimension::flop_rate:
      scales = kFlopScales;
      break;
    case Dimension::power:
      scales = kPowerScales;
      break;
    case Dimension::money_rate: {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.3f /h", value_si * 3600.0);
      return buffer;
    }
  }
  const Scale* chosen = &scales.back();
  for (const auto& scale : scales) {
    if (std::fabs(value_si) >= scale.factor) {
      chosen = &scale;
      break;
    }
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g %s", value_si / chosen->factor, chosen->symbol);
  return buffer;
}

double round6(double value) {
  if (value == 0 || !std::isfinite(value)) return 0;
  const int digits = 5 - static_cast<int>(std::floor(std::log10(std::fabs(value))));
  if (digits >= 0) {
    const double scale = std::pow(10.0, digits);
    return std::round(value * scale) / scale;
  }
  const double unit = std::pow(10.0, -digits);
  return std::round(value / unit) * unit;
}

}  // namespace hetplan
