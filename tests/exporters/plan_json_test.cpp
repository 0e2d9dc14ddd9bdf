// Plan JSON: the default scenario's top plans exported, checked against the published JSON Schema
// (docs/schemas/plan-v1.schema.json, with valijson), read back by the plan loader to the same
// plan and the same estimate; SHA-256 against FIPS 180-4; input hashes; the validation gate.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "validation/ladder.hpp"

#if __has_include(<valijson/validator.hpp>)
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#define HETPLAN_HAVE_VALIJSON 1
#endif

namespace hetplan::exporters {
namespace {

const std::string kScenarioPath = HETPLAN_SOURCE_DIR "/scenarios/default.yaml";

struct Planned {
  Plan plan;
  sim::Estimate estimate;
};

// The default scenario, its reference plan and its top searched plans (searched once).
struct Fixture {
  Scenario scenario;
  std::vector<Planned> plans;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture out;
    out.scenario = formats::load_scenario(kScenarioPath);
    out.plans.push_back({*out.scenario.reference_plan,
                         sim::estimate_step(out.scenario.cluster, out.scenario.workload,
                                            *out.scenario.reference_plan)});
    planner::SearchOptions options;
    options.top = 5;
    const planner::SearchResult result = planner::search_plans(out.scenario, options);
    for (const planner::RankedPlan& ranked : result.ranked) {
      if (ranked.plan.stages.empty()) continue;  // the resource pool: separate jobs, no plan
      out.plans.push_back({ranked.plan, ranked.estimate});
    }
    return out;
  }();
  return f;
}

ExportInput input_for(const Planned& planned, bool validated = true) {
  ExportInput input;
  input.scenario = &fixture().scenario;
  input.plan = &planned.plan;
  input.estimate = &planned.estimate;
  input.validation.validated = validated;
  if (!validated) {
    input.validation.missing = {"island dcu-k100 (DTK 24.04): no checkpoint step",
                                "boundary ascend-910b/dcu-k100: no cross-island step"};
  }
  input.inputs = input_hashes(fixture().scenario, kScenarioPath);
  return input;
}

double round6(double value) {
  if (value == 0 || !std::isfinite(value)) return 0;
  const double scale =
      std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(value)))));
  return std::round(value * scale) / scale;
}

TEST(Sha256, FipsVectors) {
  // FIPS 180-4 examples (one block, empty, the 448-bit two-block message, a million 'a').
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 55/56-byte padding boundary and whole blocks.
  EXPECT_EQ(sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(63, 'a')),
            "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(sha256_hex(std::string(119, 'a')),
            "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  EXPECT_EQ(sha256_hex(std::string(120, 'a')),
            "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");
}

TEST(InputHashes, EveryFileOfTheDefaultScenario) {
  const Scenario scenario = formats::load_scenario(kScenarioPath);
  const auto hashes = input_hashes(scenario, kScenarioPath);
  const std::string root = HETPLAN_SOURCE_DIR;
  const std::map<std::string, std::string> files = {
      {"default.yaml", root + "/scenarios/default.yaml"},
      {"../topologies/mixed-roce-64.yaml", root + "/topologies/mixed-roce-64.yaml"},
      {"../workloads/llama-70b-pretrain.yaml", root + "/workloads/llama-70b-pretrain.yaml"},
      // The config.json the workload reads its model from: a changed shape is a changed input.
      {"../workloads/hf/llama-2-70b/config.json", root + "/workloads/hf/llama-2-70b/config.json"},
      {"../profiles/ascend-910b.yaml", root + "/profiles/ascend-910b.yaml"},
      {"../profiles/hygon-k100-ai.yaml", root + "/profiles/hygon-k100-ai.yaml"},
      {"../profiles/cambricon-mlu370-x8.yaml", root + "/profiles/cambricon-mlu370-x8.yaml"},
      {"../plans/default-reference.yaml", root + "/plans/default-reference.yaml"},
  };
  ASSERT_EQ(hashes.size(), files.size());
  for (const auto& [key, path] : files) {
    ASSERT_TRUE(hashes.contains(key)) << key;
    EXPECT_EQ(hashes.at(key), sha256_hex(formats::read_text_file(path))) << key;
  }
}

TEST(InputHashes, KeysDoNotDependOnHowTheScenarioPathIsWritten) {
  const std::string roundabout = HETPLAN_SOURCE_DIR "/scenarios/../scenarios/./default.yaml";
  const Scenario a = formats::load_scenario(kScenarioPath);
  const Scenario b = formats::load_scenario(roundabout);
  EXPECT_EQ(input_hashes(a, kScenarioPath), input_hashes(b, roundabout));
}

#ifdef HETPLAN_HAVE_VALIJSON
class PlanSchema {
 public:
  PlanSchema() {
    const nlohmann::json document = nlohmann::json::parse(
        formats::read_text_file(HETPLAN_SOURCE_DIR "/docs/schemas/plan-v1.schema.json"));
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(document);
    parser.populateSchema(adapter, schema_);
  }

  // Empty when valid; otherwise the validator's complaints.
  std::string errors(const nlohmann::json& document) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(document);
    if (validator.validate(schema_, target, &results)) return "";
    std::string out;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
      std::string context;
      for (const auto& part : error.context) context += part;
      out += context + ": " + error.description + "\n";
    }
    return out.empty() ? "invalid" : out;
  }

 private:
  valijson::Schema schema_;
};

const PlanSchema& plan_schema() {
  static const PlanSchema schema;
  return schema;
}

TEST(PlanJson, TopPlansValidateAgainstTheSchema) {
  ASSERT_GE(fixture().plans.size(), 3u);
  for (const Planned& planned : fixture().plans) {
    const ExportedFile file = export_plan_json(input_for(planned));
    EXPECT_EQ(plan_schema().errors(nlohmann::json::parse(file.text)), "") << file.text;
  }
  const ExportedFile unvalidated = [] {
    ExportInput input = input_for(fixture().plans[0], false);
    input.allow_unvalidated = true;
    return export_plan_json(input);
  }();
  EXPECT_EQ(plan_schema().errors(nlohmann::json::parse(unvalidated.text)), "");
}

TEST(PlanJson, SchemaRejectsWhatTheLoaderRejects) {
  const nlohmann::json good =
      nlohmann::json::parse(export_plan_json(input_for(fixture().plans[0])).text);
  ASSERT_EQ(plan_schema().errors(good), "");

  auto rejected = [&](const std::string& what, auto&& edit) {
    nlohmann::json bad = good;
    edit(bad);
    EXPECT_NE(plan_schema().errors(bad), "") << what;
    // The loader agrees (the export object aside, whose contents it does not read).
    EXPECT_THROW(formats::parse_plan(bad.dump(), "bad.json"), InputError) << what;
  };
  rejected("an unknown key", [](nlohmann::json& j) { j["pipeline"] = 8; });
  rejected("an unknown stage key", [](nlohmann::json& j) { j["stages"][0]["pp"] = 1; });
  rejected("a stage without tp", [](nlohmann::json& j) { j["stages"][0].erase("tp"); });
  rejected("no stages", [](nlohmann::json& j) { j["stages"] = nlohmann::json::array(); });
  rejected("another schema", [](nlohmann::json& j) { j["schema"] = "hetplan/plan/v2"; });
  rejected("a capital in the name", [](nlohmann::json& j) { j["name"] = "Plan"; });
  rejected("tp 0", [](nlohmann::json& j) { j["stages"][0]["tp"] = 0; });
  rejected("an unknown dtype", [](nlohmann::json& j) { j["dtype"] = "int8"; });
  rejected("virtual stages with 1f1b", [](nlohmann::json& j) {
    j["schedule"] = "1f1b";
    j["virtual_stages"] = 2;
  });
  rejected("interleaved with one chunk", [](nlohmann::json& j) {
    j["schedule"] = "interleaved";
    j["virtual_stages"] = 1;
  });
  rejected("export that is not a mapping", [](nlohmann::json& j) { j["export"] = "hetplan"; });

  // What only the schema checks: the export object hetplan writes.
  nlohmann::json bad_hash = good;
  bad_hash["export"]["inputs"]["default.yaml"] = "not-a-sha256";
  EXPECT_NE(plan_schema().errors(bad_hash), "");
  nlohmann::json no_estimate = good;
  no_estimate["export"].erase("estimate");
  EXPECT_NE(plan_schema().errors(no_estimate), "");
}
#else
TEST(PlanJson, TopPlansValidateAgainstTheSchema) {
  GTEST_SKIP() << "valijson is not installed (Debian: libvalijson-dev)";
}
#endif

TEST(PlanJson, ReadsBackToTheSamePlanAndEstimate) {
  const Scenario& scenario = fixture().scenario;
  for (const Planned& planned : fixture().plans) {
    const ExportedFile file = export_plan_json(input_for(planned));
    EXPECT_EQ(file.name, "plan.json");
    const Plan back = formats::parse_plan(file.text, "plan.json");
    EXPECT_EQ(back.name, planned.plan.name);
    EXPECT_EQ(back.schedule, planned.plan.schedule);
    EXPECT_EQ(back.virtual_stages, planned.plan.virtual_stages);
    EXPECT_EQ(back.micro_batch, planned.plan.micro_batch);
    EXPECT_EQ(back.recompute, planned.plan.recompute);
    EXPECT_EQ(back.zero_stage, planned.plan.zero_stage);
    EXPECT_EQ(back.dtype, planned.plan.dtype);
    ASSERT_EQ(back.stages.size(), planned.plan.stages.size());
    for (std::size_t i = 0; i < back.stages.size(); ++i) {
      EXPECT_EQ(back.stages[i].island, planned.plan.stages[i].island);
      EXPECT_EQ(back.stages[i].first_layer, planned.plan.stages[i].first_layer);
      EXPECT_EQ(back.stages[i].num_layers, planned.plan.stages[i].num_layers);
      EXPECT_EQ(back.stages[i].tp, planned.plan.stages[i].tp);
      EXPECT_EQ(back.stages[i].dp, planned.plan.stages[i].dp);
    }
    formats::check_plan_references(back, scenario.cluster, scenario.workload);

    const sim::Estimate estimate = sim::estimate_step(scenario.cluster, scenario.workload, back);
    const nlohmann::json exported = nlohmann::json::parse(file.text)["export"]["estimate"];
    EXPECT_EQ(exported["step_time_s"].get<double>(), round6(estimate.step_time_s));
    EXPECT_EQ(exported["tokens_per_s"].get<double>(), round6(estimate.tokens_per_s));
    EXPECT_EQ(exported["chips"].get<int>(), estimate.chips);
    EXPECT_GT(estimate.step_time_s, 0);
  }
}

TEST(PlanJson, ProvenanceAndKeyOrder) {
  const Planned& reference = fixture().plans[0];
  const ExportInput input = input_for(reference);
  const ExportedFile file = export_plan_json(input);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(file.text);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  // The reference plan sets micro_batch only.
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "name", "schedule", "virtual_stages",
                                            "micro_batch", "stages", "export"}));
  EXPECT_EQ(j["schema"], "hetplan/plan/v1");
  EXPECT_EQ(j["export"]["generator"], "hetplan");
  EXPECT_EQ(j["export"]["scenario"], "default");
  EXPECT_EQ(j["export"]["validation"]["validated"], true);
  EXPECT_TRUE(j["export"]["validation"]["missing"].empty());
  EXPECT_EQ(j["export"]["inputs"].size(), input.inputs.size());
  EXPECT_EQ(j["export"]["inputs"]["default.yaml"], input.inputs.at("default.yaml"));
  EXPECT_EQ(j["stages"][5].dump(),
            R"({"island":"dcu-k100","first_layer":60,"num_layers":7,"tp":8,"dp":4})");
  // Same input, same bytes.
  EXPECT_EQ(export_plan_json(input).text, file.text);
}

TEST(PlanJson, WritesEveryOverride) {
  Planned planned = fixture().plans[0];
  planned.plan.recompute = Recompute::full;
  planned.plan.zero_stage = 1;
  planned.plan.dtype = DType::fp16;
  const ExportedFile file = export_plan_json(input_for(planned));
  const Plan back = formats::parse_plan(file.text, "plan.json");
  EXPECT_EQ(back.recompute, Recompute::full);
  EXPECT_EQ(back.zero_stage, 1);
  EXPECT_EQ(back.dtype, DType::fp16);
  EXPECT_EQ(back.micro_batch, 1);
}

TEST(PlanLoader, ExportMustBeAMapping) {
  const std::string plan =
      "{\"schema\": \"hetplan/plan/v1\", \"name\": \"p\", \"stages\": [{\"island\": \"a\", "
      "\"first_layer\": 0, \"num_layers\": 1, \"tp\": 1, \"dp\": 1}], \"export\": [1]}";
  try {
    formats::parse_plan(plan, "plan.json");
    FAIL() << "accepted a list as export";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "plan.json:1:136: export: expected a mapping (provenance written by hetplan "
                 "export), got a list");
  }
  // Any mapping passes: its contents are provenance, not plan.
  const std::string with_export =
      "schema: hetplan/plan/v1\nname: p\nstages:\n  - {island: a, first_layer: 0, num_layers: 1, "
      "tp: 1, dp: 1}\nexport: {generator: someone-else, note: [1, 2]}\n";
  EXPECT_EQ(formats::parse_plan(with_export, "plan.yaml").stages.size(), 1u);
}

TEST(PlanJson, RefusesAnUnvalidatedPlan) {
  const ExportInput input = input_for(fixture().plans[0], false);
  try {
    export_plan_json(input);
    FAIL() << "exported an unvalidated plan";
  } catch (const UnvalidatedPlan& error) {
    EXPECT_STREQ(error.what(),
                 "plan \"default-reference\" is not validated on the validation ladder; missing: "
                 "island dcu-k100 (DTK 24.04): no checkpoint step; boundary ascend-910b/dcu-k100: "
                 "no cross-island step (--allow-unvalidated exports it anyway, marked "
                 "unvalidated)");
  }
}

TEST(PlanJson, AllowUnvalidatedStampsIt) {
  ExportInput input = input_for(fixture().plans[0], false);
  input.allow_unvalidated = true;
  const nlohmann::json j = nlohmann::json::parse(export_plan_json(input).text);
  EXPECT_EQ(j["export"]["validation"]["validated"], false);
  EXPECT_EQ(j["export"]["validation"]["missing"],
            nlohmann::json({"island dcu-k100 (DTK 24.04): no checkpoint step",
                            "boundary ascend-910b/dcu-k100: no cross-island step"}));
}

TEST(PlanJson, TheLadderWithoutRecordsGatesTheExport) {
  const Scenario& scenario = fixture().scenario;
  const Planned& reference = fixture().plans[0];
  ExportInput input = input_for(reference);
  input.validation =
      validation::plan_validation(validation::ladder_state(scenario.cluster, {}), reference.plan);
  ASSERT_FALSE(input.validation.validated);
  ASSERT_FALSE(input.validation.missing.empty());
  EXPECT_THROW(export_plan_json(input), UnvalidatedPlan);
}

}  // namespace
}  // namespace hetplan::exporters
