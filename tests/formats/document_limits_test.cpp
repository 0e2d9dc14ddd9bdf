// Hostile documents: deep nesting, NUL bytes, oversized input. Each must end in an InputError,
// never a crash (yaml-cpp's parser recurses, so nesting is checked before it runs).
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "tests/formats/test_support.hpp"
// After the project headers: <signal.h> (pulled in by gtest) defines si_value, a parameter
// name in core/units.hpp.
#include <gtest/gtest.h>

namespace hetplan {
namespace {

using testing::input_error_of;

std::string chip_error(const std::string& text) {
  return input_error_of([&] { (void)formats::parse_chip(text, "deep.yaml"); });
}
std::string plan_error(const std::string& text) {
  return input_error_of([&] { (void)formats::parse_plan(text, "deep.yaml"); });
}

TEST(DocumentLimits, FlowSequences1000Deep) {
  const std::string text = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_EQ(chip_error(text), "deep.yaml:1:65: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, FlowMappings1000DeepAsAValue) {
  std::string text = "schema: hetplan/plan/v1\nstages: ";
  for (int i = 0; i < 1000; ++i) text += "{a: ";
  text += "1" + std::string(1000, '}') + "\n";
  EXPECT_EQ(plan_error(text), "deep.yaml:2:265: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, UnclosedFlowSequences1000Deep) {
  EXPECT_EQ(plan_error("stages: " + std::string(1000, '[')),
            "deep.yaml:1:73: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, BlockSequences1000DeepOnOneLine) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "- ";
  text += "x\n";
  EXPECT_EQ(plan_error(text), "deep.yaml:1:2001: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, BlockMappings1000DeepByIndentation) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  // Rejected once the indentation reaches 4 * 64 levels of two spaces.
  EXPECT_EQ(plan_error(text), "deep.yaml:515:515: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, BracketsInsideQuotesAreNotNesting) {
  const std::string text = "schema: hetplan/plan/v1\nname: \"" + std::string(500, '[') + "\"\n";
  EXPECT_EQ(plan_error(text),
            "deep.yaml:2:7: name: expected a name of lower-case letters, digits, '-', '_' and '.', got "
            "\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...\"");
}

// A '"' inside a plain scalar (name: x") must not make the pre-parse nesting check believe a
// quoted string runs on, so the brackets after it are still counted.
TEST(DocumentLimits, QuoteInPlainScalarThenDeepNestingIsStillAnInputError) {
  const std::string text = "schema: hetplan/plan/v1\nname: x\"\nstages: " + std::string(100000, '[') + "\n";
  const std::string error = plan_error(text);
  EXPECT_TRUE(error.starts_with("deep.yaml:")) << error;
}

// The nesting check itself reports it (quotes are tracked within one line).
TEST(DocumentLimits, QuoteInPlainScalarDoesNotHideNesting) {
  const std::string text = "schema: hetplan/plan/v1\nname: x\"\nstages: " + std::string(1000, '[') + "\n";
  EXPECT_EQ(plan_error(text), "deep.yaml:3:73: expected at most 64 levels of nesting, got deeper");
}

TEST(DocumentLimits, NulByteAnywhere) {
  EXPECT_EQ(plan_error(std::string(1, '\0')), "deep.yaml:1:1: expected a text document, got a NUL byte");
  EXPECT_EQ(plan_error(std::string("schema: hetplan/plan/v1\nname: a\0b\n", 33)),
            "deep.yaml:2:8: expected a text document, got a NUL byte");
}

// Every file holds one document: a second one (after "---") is refused where it starts, not
// ignored; a "---" before the first or after the last with nothing behind it is no document.
TEST(DocumentLimits, ASecondDocumentIsRefused) {
  EXPECT_EQ(plan_error("schema: hetplan/plan/v1\nname: a\n---\nschema: hetplan/plan/v1\nname: b\n"),
            "deep.yaml:4:1: expected one YAML document, got a second one (after \"---\")");
  EXPECT_EQ(plan_error("---\nschema: hetplan/plan/v1\nname: a\n--- {name: b}\n"),
            "deep.yaml:4:5: expected one YAML document, got a second one (after \"---\")");
  // Only the first document: the plan's own errors, not the document's.
  EXPECT_EQ(plan_error("---\nschema: hetplan/plan/v1\nname: a\n---\n").find("second"),
            std::string::npos);
}

// yaml-cpp's LoadAll never returns on this text (found by fuzz_yaml_edit): the document is
// read once, as one document, and ends in an error or a value.
TEST(DocumentLimits, ATextLoadAllLoopsOnEndsInTime) {
  const std::string error = plan_error(" ,r");
  EXPECT_TRUE(error.starts_with("deep.yaml:")) << error;
}

TEST(DocumentLimits, OversizedDocument) {
  const std::string text(16u * 1024 * 1024 + 1, ' ');
  EXPECT_EQ(plan_error(text), "deep.yaml:1:16777217: expected a document of at most 16 MiB, got 16777217 bytes");
}

TEST(DocumentLimits, ControlCharactersAreShownAsSpaces) {
  EXPECT_EQ(plan_error("schema: \"hetplan/plan/v1\\t\"\n"),
            "deep.yaml:1:9: schema: expected \"hetplan/plan/v1\", got \"hetplan/plan/v1 \"");
}

}  // namespace
}  // namespace hetplan
