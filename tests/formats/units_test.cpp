// parse_quantity: every dimension's units convert to SI; malformed quantities are rejected.
#include "core/units.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
// After the project headers: <signal.h> (pulled in by gtest) defines si_value, a parameter
// name in core/units.hpp.
#include <gtest/gtest.h>

namespace hetplan {
namespace {

TEST(Units, Bandwidth) {
  EXPECT_EQ(parse_quantity("200 Gbps", Dimension::bandwidth), 25e9);
  EXPECT_EQ(parse_quantity("400Gb/s", Dimension::bandwidth), 50e9);
  EXPECT_EQ(parse_quantity("1.6 TB/s", Dimension::bandwidth), 1.6e12);
  EXPECT_EQ(parse_quantity("1 GiB/s", Dimension::bandwidth), 1073741824.0);
}

TEST(Units, Bytes) {
  EXPECT_EQ(parse_quantity("64 GiB", Dimension::bytes), 68719476736.0);
  EXPECT_EQ(parse_quantity("64 GB", Dimension::bytes), 64e9);
  EXPECT_EQ(parse_quantity("512 KiB", Dimension::bytes), 524288.0);
  EXPECT_EQ(parse_quantity("0 B", Dimension::bytes), 0.0);
}

TEST(Units, Duration) {
  EXPECT_DOUBLE_EQ(*parse_quantity("1.5 us", Dimension::duration), 1.5e-6);
  EXPECT_DOUBLE_EQ(*parse_quantity("600 ns", Dimension::duration), 6e-7);
  EXPECT_EQ(parse_quantity("2 min", Dimension::duration), 120.0);
  EXPECT_EQ(parse_quantity("1 h", Dimension::duration), 3600.0);
}

TEST(Units, FlopRateAndPower) {
  EXPECT_EQ(parse_quantity("313 TFLOPS", Dimension::flop_rate), 313e12);
  EXPECT_EQ(parse_quantity("1.979 PFLOPS", Dimension::flop_rate), 1.979e15);
  EXPECT_EQ(parse_quantity("400 W", Dimension::power), 400.0);
  EXPECT_EQ(parse_quantity("1.2 kW", Dimension::power), 1200.0);
}

TEST(Units, MoneyRate) {
  EXPECT_DOUBLE_EQ(*parse_quantity("2.5 USD/h", Dimension::money_rate), 2.5 / 3600);
  EXPECT_DOUBLE_EQ(*parse_quantity("18 CNY/h", Dimension::money_rate), 18.0 / 3600);
}

TEST(Units, ScientificNotation) {
  EXPECT_EQ(parse_quantity("1e3 GB", Dimension::bytes), 1e12);
  EXPECT_EQ(parse_quantity("2.5E-1 s", Dimension::duration), 0.25);
}

TEST(Units, Rejections) {
  EXPECT_FALSE(parse_quantity("64 GX", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("200 Gbit", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("64 gb", Dimension::bytes));         // units are case-sensitive
  EXPECT_FALSE(parse_quantity("64", Dimension::bytes));            // no unit
  EXPECT_FALSE(parse_quantity("GB", Dimension::bytes));            // no number
  EXPECT_FALSE(parse_quantity("", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("-1 GB", Dimension::bytes));         // negative
  EXPECT_FALSE(parse_quantity("1 GB/s", Dimension::bytes));        // other dimension
  EXPECT_FALSE(parse_quantity("1 GB", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("1e999 GB", Dimension::bytes));      // not finite
  EXPECT_FALSE(parse_quantity("1e308 TB", Dimension::bytes));      // overflows in SI
  EXPECT_FALSE(parse_quantity("nan GB", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("inf W", Dimension::power));
  EXPECT_FALSE(parse_quantity("1..5 W", Dimension::power));
  EXPECT_FALSE(parse_quantity("2.5 usd/h", Dimension::money_rate));
  EXPECT_FALSE(parse_quantity("2.5 USD", Dimension::money_rate));
  EXPECT_FALSE(parse_quantity("2.5 USD/d", Dimension::money_rate));
  EXPECT_FALSE(parse_quantity("2.5 US/h", Dimension::money_rate));
  EXPECT_FALSE(parse_quantity("313 TFLOP", Dimension::flop_rate));
}

}  // namespace
}  // namespace hetplan

// The one rounding of the JSON the project writes: six significant digits, written back as the
// shortest text (nlohmann's dump) without binary residue, for small and large magnitudes alike.
TEST(Units, Round6IsSixSignificantDigitsWrittenExactly) {
  const auto dumped = [](double value) { return nlohmann::json(hetplan::round6(value)).dump(); };
  EXPECT_EQ(dumped(0.1234567), "0.123457");
  EXPECT_EQ(dumped(-0.1234567), "-0.123457");
  EXPECT_EQ(dumped(53661.12184320502), "53661.1");
  EXPECT_EQ(dumped(1.178189e10), "11781900000.0");
  EXPECT_EQ(dumped(9.999996e12), "10000000000000.0");
  EXPECT_EQ(dumped(3.0e-9), "3e-09");
  EXPECT_EQ(hetplan::round6(0.0), 0.0);
  EXPECT_EQ(hetplan::round6(std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(hetplan::round6(std::nan("")), 0.0);
  // About 1 in 9 values between 1e6 and 1e11 came out with a binary residue when the large ones
  // were divided by a negative power of ten; none may.
  int residue = 0;
  for (double value = 1.0e6; value < 1.0e11; value *= 1.0137) {
    const std::string text = dumped(value);
    const std::string digits = text.substr(0, text.find('.'));
    if (text.find('.') != std::string::npos && text.substr(text.find('.')) != ".0") ++residue;
    if (digits.size() > 6 && digits.find_first_not_of('0', 6) != std::string::npos) ++residue;
  }
  EXPECT_EQ(residue, 0);
}
