// parse_quantity: every dimension's units convert to SI; malformed quantities are rejected.
#include "core/units.hpp"
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
