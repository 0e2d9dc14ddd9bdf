// parse_plan and check_plan_references: one test per kind of bad input, exact messages.
#include <gtest/gtest.h>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "tests/formats/test_support.hpp"

namespace hetplan {
namespace {

using formats::parse_plan;
using testing::input_error_of;
using testing::kDataDir;
using testing::replaced;

const std::string kPlan =
    "schema: hetplan/plan/v1\n"                                                 // 1
    "name: two-stage\n"                                                         // 2
    "stages:\n"                                                                 // 3
    "  - {island: a100, first_layer: 0, num_layers: 16, tp: 4, dp: 2}\n"        // 4
    "  - {island: h100, first_layer: 16, num_layers: 16, tp: 8, dp: 1}\n";      // 5

std::string plan_error(const std::string& text) {
  return input_error_of([&] { (void)parse_plan(text, "plan.yaml"); });
}

TEST(PlanErrors, BaseFixtureIsValid) {
  const Plan plan = parse_plan(kPlan, "plan.yaml");
  ASSERT_EQ(plan.stages.size(), 2u);
  EXPECT_EQ(plan.stages[1].island, "h100");
  EXPECT_EQ(plan.stages[1].first_layer, 16);
  EXPECT_EQ(plan.stages[1].tp, 8);
  EXPECT_EQ(plan.schedule, Schedule::one_f_one_b);
}

TEST(PlanErrors, RecomputeOfThePlanAndOfAStage) {
  const Plan plan = parse_plan(
      replaced(replaced(kPlan, "name: two-stage\n", "name: two-stage\nrecompute: full\nrecompute_layers: 2\n"),
               "tp: 8, dp: 1}", "tp: 8, dp: 1, recompute: none}"),
      "plan.yaml");
  EXPECT_EQ(plan.recompute, Recompute::full);
  EXPECT_EQ(plan.recompute_layers, 2);
  EXPECT_FALSE(plan.stages[0].recompute);
  EXPECT_EQ(plan.stages[1].recompute, Recompute::none);
  EXPECT_FALSE(plan.stages[1].recompute_layers);
}

TEST(PlanErrors, RecomputeLayersWithoutFullRecompute) {
  EXPECT_EQ(plan_error(replaced(kPlan, "name: two-stage\n", "name: two-stage\nrecompute_layers: 2\n")),
            "plan.yaml:3:19: recompute_layers: expected recompute: full beside it");
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 8, dp: 1}", "tp: 8, dp: 1, recompute: selective, recompute_layers: 1}")),
            "plan.yaml:5:107: stages[1].recompute_layers: expected recompute: full beside it");
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, recompute: full, recompute_layers: 0}")),
            "plan.yaml:4:101: stages[0].recompute_layers: expected an integer from 1 to 100000, got \"0\"");
}

TEST(PlanErrors, MalformedYamlUnclosedBracket) {
  EXPECT_EQ(plan_error("schema: hetplan/plan/v1\nname: x\nstages: [{island: a100\n"),
            "plan.yaml:4:1: malformed YAML: end of map flow not found");
}

TEST(PlanErrors, TruncatedDocument) {
  const std::string text = kPlan.substr(0, kPlan.find("tp: 8"));
  EXPECT_EQ(plan_error(text), "plan.yaml:5:1: malformed YAML: end of map flow not found");
}

TEST(PlanErrors, TruncatedBeforeStages) {
  EXPECT_EQ(plan_error(kPlan.substr(0, kPlan.find("stages:"))), "plan.yaml:1:1: stages: missing required key");
}

TEST(PlanErrors, StringWhereIntegerExpected) {
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 4", "tp: four")),
            "plan.yaml:4:56: stages[0].tp: expected an integer from 1 to 1024, got \"four\"");
}

TEST(PlanErrors, FractionWhereIntegerExpected) {
  EXPECT_EQ(plan_error(replaced(kPlan, "dp: 1}", "dp: 1.5}")),
            "plan.yaml:5:64: stages[1].dp: expected an integer from 1 to 1048576, got \"1.5\"");
}

TEST(PlanErrors, MappingWhereListExpected) {
  EXPECT_EQ(plan_error("schema: hetplan/plan/v1\nname: x\nstages: {island: a100}\n"),
            "plan.yaml:3:9: stages: expected a list, got a mapping");
}

TEST(PlanErrors, TpZero) {
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 4", "tp: 0")),
            "plan.yaml:4:56: stages[0].tp: expected an integer from 1 to 1024, got \"0\"");
}

TEST(PlanErrors, NegativeFirstLayer) {
  EXPECT_EQ(plan_error(replaced(kPlan, "first_layer: 0", "first_layer: -1")),
            "plan.yaml:4:33: stages[0].first_layer: expected an integer from 0 to 100000, got \"-1\"");
}

TEST(PlanErrors, IntegerOverflow) {
  EXPECT_EQ(plan_error(replaced(kPlan, "dp: 2", "dp: 99999999999999999999")),
            "plan.yaml:4:63: stages[0].dp: expected an integer from 1 to 1048576, got "
            "\"99999999999999999999\"");
}

TEST(PlanErrors, UnknownTopLevelKey) {
  EXPECT_EQ(plan_error(replaced(kPlan, "name: two-stage\n", "name: two-stage\npipeline: 2\n")),
            "plan.yaml:3:1: pipeline: unknown key");
}

TEST(PlanErrors, UnknownStageKey) {
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 8, dp: 1}", "tp: 8, dp: 1, pp: 2}")),
            "plan.yaml:5:67: stages[1].pp: unknown key");
}

TEST(PlanErrors, DuplicateKey) {
  EXPECT_EQ(plan_error(replaced(kPlan, "tp: 4, dp: 2", "tp: 4, dp: 2, tp: 2")),
            "plan.yaml:4:66: stages[0].tp: duplicate key");
}

TEST(PlanErrors, MissingStageKey) {
  EXPECT_EQ(plan_error(replaced(kPlan, ", dp: 2}", "}")), "plan.yaml:4:5: stages[0].dp: missing required key");
}

TEST(PlanErrors, NoStages) {
  EXPECT_EQ(plan_error("schema: hetplan/plan/v1\nname: x\nstages: []\n"),
            "plan.yaml:3:9: stages: expected at least one stage, got a list");
}

TEST(PlanErrors, VirtualStagesWith1f1b) {
  EXPECT_EQ(plan_error(replaced(kPlan, "name: two-stage\n", "name: two-stage\nvirtual_stages: 2\n")),
            "plan.yaml:3:17: virtual_stages: expected 1 with the 1f1b schedule (use interleaved), got \"2\"");
}

TEST(PlanErrors, InterleavedWithoutVirtualStages) {
  EXPECT_EQ(plan_error(replaced(kPlan, "name: two-stage\n", "name: two-stage\nschedule: interleaved\n")),
            "plan.yaml:3:11: schedule: expected virtual_stages of at least 2 with the interleaved schedule");
}

TEST(PlanErrors, BadChoice) {
  EXPECT_EQ(plan_error(replaced(kPlan, "name: two-stage\n", "name: two-stage\nrecompute: some\n")),
            "plan.yaml:3:12: recompute: expected one of none, selective or full, got \"some\"");
}

TEST(PlanErrors, WrongSchema) {
  EXPECT_EQ(plan_error(replaced(kPlan, "hetplan/plan/v1", "hetplan/chip/v1")),
            "plan.yaml:1:9: schema: expected \"hetplan/plan/v1\", got \"hetplan/chip/v1\"");
}

TEST(PlanErrors, SchemaNotAScalar) {
  EXPECT_EQ(plan_error(replaced(kPlan, "schema: hetplan/plan/v1", "schema: [hetplan/plan/v1]")),
            "plan.yaml:1:9: schema: expected \"hetplan/plan/v1\", got a list");
}

TEST(PlanErrors, EmptyDocument) {
  EXPECT_EQ(plan_error("\n\n"), "plan.yaml:1:1: expected a mapping, got an empty document");
}

TEST(PlanErrors, ListDocument) {
  EXPECT_EQ(plan_error("- a\n- b\n"), "plan.yaml:1:1: expected a mapping, got a list");
}

TEST(PlanErrors, NulByte) {
  EXPECT_EQ(plan_error(std::string("schema: hetplan/plan/v1\0\n", 25)),
            "plan.yaml:1:24: expected a text document, got a NUL byte");
}

// check_plan_references against tests/formats/data/cluster.yaml (islands a100, h100) and
// workload.yaml (Llama-2-7B, 32 layers).
class PlanReferences : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new Cluster(formats::load_cluster(kDataDir + "/cluster.yaml"));
    workload_ = new Workload(formats::load_workload(kDataDir + "/workload.yaml"));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete workload_;
  }
  static std::string check(const std::string& text) {
    return input_error_of([&] {
      formats::check_plan_references(parse_plan(text, "plan.yaml"), *cluster_, *workload_);
    });
  }
  static Cluster* cluster_;
  static Workload* workload_;
};
Cluster* PlanReferences::cluster_ = nullptr;
Workload* PlanReferences::workload_ = nullptr;

TEST_F(PlanReferences, ValidPlanPasses) { EXPECT_EQ(check(kPlan), "<no error>"); }

TEST_F(PlanReferences, IslandNotInCluster) {
  EXPECT_EQ(check(replaced(kPlan, "island: h100", "island: tpu-v5")),
            "plan.yaml:5:14: stages[1].island: expected an island of cluster \"two-zone\" (a100, h100), "
            "got \"tpu-v5\"");
}

TEST_F(PlanReferences, GapBetweenStages) {
  EXPECT_EQ(check(replaced(kPlan, "first_layer: 16", "first_layer: 17")),
            "plan.yaml:5:5: stages[1].first_layer: expected 16 (stages cover the layers in order, "
            "without gaps or overlaps), got 17");
}

TEST_F(PlanReferences, LayersDoNotCoverModel) {
  EXPECT_EQ(check(replaced(kPlan, "first_layer: 16, num_layers: 16", "first_layer: 16, num_layers: 8")),
            "plan.yaml:5:5: stages[1].num_layers: expected the stages to end at layer 32 (the "
            "model's layer count), got 24");
}

// Expert parallelism divides the stage's dp (the loader) and needs a model with experts that
// it divides (against the workload; Llama-2-7B has none).
TEST_F(PlanReferences, ExpertParallelism) {
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, ep: 3}")),
            "plan.yaml:4:70: stages[0].ep: expected a divisor of the stage's dp (2), got \"3\"");
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, ep: 2}")),
            "plan.yaml:4:5: stages[0].ep: expected 1: the model has no experts, got 2");
  EXPECT_EQ(parse_plan(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, ep: 2}"), "plan.yaml")
                .stages[0]
                .ep,
            2);
}

// Expert tensor parallelism (docs/models/moe.md#parallelism): etp divides the stage's tp x dp,
// and ep x etp does too (so ep may exceed dp when etp is below tp); a model without experts
// takes only its tp.
TEST_F(PlanReferences, ExpertTensorParallelism) {
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, etp: 3}")),
            "plan.yaml:4:71: stages[0].etp: expected a divisor of the stage's tp x dp (8), got "
            "\"3\"");
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, ep: 4, etp: 4}")),
            "plan.yaml:4:70: stages[0].ep: expected ep x etp (16) dividing the stage's tp x dp "
            "(8), got \"4\"");
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, etp: 1}")),
            "plan.yaml:4:5: stages[0].etp: expected the stage's tp (4): the model has no experts, "
            "got 1");
  // ep 8 over a stage of tp 4 x dp 2 with each expert whole on one chip: loads, and the plan
  // writer keeps the etp it differs from tp.
  const Plan folded =
      parse_plan(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, ep: 8, etp: 1}"), "plan.yaml");
  EXPECT_EQ(folded.stages[0].ep, 8);
  EXPECT_EQ(folded.stages[0].etp, 1);
  EXPECT_EQ(expert_tp(folded.stages[0]), 1);
  EXPECT_EQ(expert_tp(folded.stages[1]), 8);
  const Plan again = parse_plan(formats::plan_yaml(folded), "again.yaml");
  EXPECT_EQ(again.stages[0].etp, 1);
  EXPECT_EQ(again.stages[1].etp, 0);
}

TEST_F(PlanReferences, LayersNotMultipleOfVirtualStages) {
  const std::string text =
      replaced(kPlan, "name: two-stage\n", "name: two-stage\nschedule: interleaved\nvirtual_stages: 3\n");
  EXPECT_EQ(check(text),
            "plan.yaml:6:5: stages[0].num_layers: expected a multiple of virtual_stages (3) or the "
            "stage's chunk_layers, got 16");
}

// Model chunks of unequal size (docs/formats/plan.md#chunk-layers): 16 layers in chunks of 5, 5
// and 6 on the first stage, 4, 6 and 6 on the second.
const std::string kChunks =
    replaced(replaced(replaced(kPlan, "name: two-stage\n",
                               "name: two-stage\nschedule: interleaved\nvirtual_stages: 3\n"),
                      "tp: 4, dp: 2}", "tp: 4, dp: 2, chunk_layers: [5, 5, 6]}"),
             "tp: 8, dp: 1}", "tp: 8, dp: 1, chunk_layers: [4, 6, 6]}");

TEST_F(PlanReferences, ChunkLayersLoadAndWriteBack) {
  EXPECT_EQ(check(kChunks), "<no error>");
  const Plan plan = parse_plan(kChunks, "plan.yaml");
  EXPECT_EQ(plan.stages[0].chunk_layers, (std::vector<int>{5, 5, 6}));
  EXPECT_EQ(chunk_layer_count(plan.stages[1], 0, 3), 4);
  const Plan again = parse_plan(formats::plan_yaml(plan), "again.yaml");
  EXPECT_EQ(again.stages[1].chunk_layers, (std::vector<int>{4, 6, 6}));
}

TEST(PlanErrors, ChunkLayersThatDoNotAddUpToTheStage) {
  EXPECT_EQ(plan_error(replaced(kChunks, "[5, 5, 6]", "[5, 5, 5]")),
            "plan.yaml:6:80: stages[0].chunk_layers: expected model chunks whose layers add up "
            "to the stage's num_layers (16), got 15");
  EXPECT_EQ(plan_error(replaced(kChunks, "[5, 5, 6]", "[5, -1, 12]")),
            "plan.yaml:6:84: stages[0].chunk_layers[1]: expected an integer from 0 to 100000, "
            "got \"-1\"");
}

TEST_F(PlanReferences, ChunkLayersOnePerChunkUnderTheInterleavedSchedule) {
  EXPECT_EQ(check(replaced(kChunks, "[4, 6, 6]", "[10, 6]")),
            "plan.yaml:7:81: stages[1].chunk_layers: expected one entry per model chunk "
            "(virtual_stages 3), got 2");
  EXPECT_EQ(check(replaced(kPlan, "tp: 4, dp: 2}", "tp: 4, dp: 2, chunk_layers: [16]}")),
            "plan.yaml:4:80: stages[0].chunk_layers: expected only with the interleaved schedule");
}

// Replica groups on different islands (docs/formats/plan.md#replica-groups): 256 sequences of
// the workload's micro-batch of 1, as 4 x 48 on a100 and 8 x 8 on h100; each replica's weight
// its samples over the 256.
const std::string kGroups =
    "schema: hetplan/plan/v1\n"                                                 // 1
    "name: two-groups\n"                                                        // 2
    "replica_groups:\n"                                                         // 3
    "  - micro_batches: 48\n"                                                   // 4
    "    gradient_weight: 0.1875\n"                                             // 5
    "    stages:\n"                                                             // 6
    "      - {island: a100, first_layer: 0, num_layers: 32, tp: 2, dp: 4}\n"    // 7
    "  - micro_batches: 8\n"                                                    // 8
    "    gradient_weight: 0.03125\n"                                            // 9
    "    zero_stage: 1\n"                                                       // 10
    "    stages:\n"                                                             // 11
    "      - {island: h100, first_layer: 0, num_layers: 16, tp: 1, dp: 8}\n"    // 12
    "      - {island: h100, first_layer: 16, num_layers: 16, tp: 1, dp: 8}\n";  // 13

TEST(PlanErrors, ReplicaGroupsLoad) {
  const Plan plan = parse_plan(kGroups, "plan.yaml");
  EXPECT_TRUE(plan.stages.empty());
  ASSERT_EQ(plan.replica_groups.size(), 2u);
  EXPECT_EQ(plan.replica_groups[0].micro_batches, 48);
  EXPECT_DOUBLE_EQ(plan.replica_groups[1].gradient_weight, 0.03125);
  EXPECT_EQ(plan.replica_groups[1].zero_stage, 1);
  EXPECT_FALSE(plan.replica_groups[0].zero_stage);
  ASSERT_EQ(plan.replica_groups[1].stages.size(), 2u);
  EXPECT_EQ(plan.replica_groups[1].stages[1].first_layer, 16);
}

// What plan_yaml writes reads back as the same plan.
TEST(PlanErrors, ReplicaGroupsWriteAndReadBack) {
  Plan plan = parse_plan(kGroups, "plan.yaml");
  plan.replica_groups[0].schedule = Schedule::interleaved;
  plan.replica_groups[0].virtual_stages = 2;
  plan.replica_groups[0].micro_batch = 1;
  const Plan again = parse_plan(formats::plan_yaml(plan), "again.yaml");
  ASSERT_EQ(again.replica_groups.size(), 2u);
  EXPECT_EQ(again.replica_groups[0].schedule, Schedule::interleaved);
  EXPECT_EQ(again.replica_groups[0].virtual_stages, 2);
  EXPECT_EQ(again.replica_groups[0].micro_batch, 1);
  EXPECT_EQ(again.replica_groups[1].zero_stage, 1);
  EXPECT_DOUBLE_EQ(again.replica_groups[0].gradient_weight, 0.1875);
  EXPECT_EQ(again.replica_groups[1].stages.size(), 2u);
  EXPECT_EQ(formats::plan_yaml(again), formats::plan_yaml(plan));
}

TEST(PlanErrors, ReplicaGroupsMistakes) {
  EXPECT_EQ(plan_error(replaced(kGroups, "name: two-groups\n",
                                "name: two-groups\nstages:\n  - {island: a100, first_layer: 0, "
                                "num_layers: 32, tp: 1, dp: 1}\n")),
            "plan.yaml:6:3: replica_groups: expected either stages or replica_groups, not both");
  EXPECT_EQ(plan_error(kGroups.substr(0, kGroups.find("  - micro_batches: 8"))),
            "plan.yaml:4:3: replica_groups: expected at least two replica groups (one group is a "
            "plan's stages), got a list");
  EXPECT_EQ(plan_error(replaced(kGroups, "gradient_weight: 0.03125", "gradient_weight: 0.0625")),
            "plan.yaml:9:22: replica_groups[1].gradient_weight: expected 0.03125 (a replica's "
            "samples over all replicas' together: 8 / 256), got 0.0625");
  EXPECT_EQ(plan_error(replaced(kGroups, "    zero_stage: 1\n", "    schedule: interleaved\n")),
            "plan.yaml:10:15: replica_groups[1].schedule: expected virtual_stages of at least 2 "
            "with the interleaved schedule");
  EXPECT_EQ(plan_error(replaced(kGroups, "    zero_stage: 1\n", "    dtype: fp16\n")),
            "plan.yaml:10:5: replica_groups[1].dtype: unknown key");
}

// A parameter server only when the plan says so, on one of its groups' islands.
TEST(PlanErrors, GradientExchangeThroughAParameterServer) {
  const std::string served =
      replaced(kGroups, "name: two-groups\n",
               "name: two-groups\ngradient_exchange: parameter-server\nparameter_server: h100\n");
  const Plan plan = parse_plan(served, "plan.yaml");
  EXPECT_EQ(plan.gradient_exchange, GradientExchange::parameter_server);
  EXPECT_EQ(plan.parameter_server, "h100");
  EXPECT_EQ(formats::plan_yaml(parse_plan(formats::plan_yaml(plan), "again.yaml")),
            formats::plan_yaml(plan));
  EXPECT_EQ(parse_plan(replaced(kGroups, "name: two-groups\n",
                                "name: two-groups\ngradient_exchange: ring\n"),
                       "plan.yaml")
                .gradient_exchange,
            GradientExchange::ring);
  EXPECT_EQ(plan_error(replaced(served, "parameter_server: h100\n", "")),
            "plan.yaml:3:20: gradient_exchange: expected parameter_server (the island of the "
            "group whose nodes serve) with gradient_exchange: parameter-server");
  EXPECT_EQ(plan_error(replaced(served, "parameter_server: h100", "parameter_server: tpu")),
            "plan.yaml:4:19: parameter_server: expected the island of one of the replica groups "
            "(a100, h100), got \"tpu\"");
  EXPECT_EQ(plan_error(replaced(served, "parameter-server", "ring")),
            "plan.yaml:4:19: parameter_server: expected no parameter_server with a ring gradient "
            "exchange");
  EXPECT_EQ(plan_error(replaced(served, "parameter-server", "all-to-all")),
            "plan.yaml:3:20: gradient_exchange: expected one of ring or parameter-server, got "
            "\"all-to-all\"");
  const Plan across = parse_plan(
      replaced(kGroups, "name: two-groups\n", "name: two-groups\nzero_across_groups: true\n"),
      "plan.yaml");
  EXPECT_TRUE(across.zero_across_groups);
  EXPECT_TRUE(parse_plan(formats::plan_yaml(across), "again.yaml").zero_across_groups);
  EXPECT_EQ(plan_error(replaced(served, "name: two-groups\n",
                                "name: two-groups\nzero_across_groups: true\n")),
            "plan.yaml:3:21: zero_across_groups: expected no zero_across_groups with a parameter "
            "server (the server holds the whole state; ZeRO across groups shards it over the "
            "replicas)");
  EXPECT_EQ(plan_error(kPlan + "zero_across_groups: true\n"),
            "plan.yaml:6:21: zero_across_groups: expected no zero_across_groups in a plan without "
            "replica_groups");
  EXPECT_EQ(plan_error(kPlan + "gradient_exchange: ring\n"),
            "plan.yaml:6:20: gradient_exchange: expected no gradient_exchange in a plan without "
            "replica_groups");
}

// The group's own micro-batch counts in its samples: 4 x 48 x 1 and 8 x 8 x 2 make 320, so
// the weights 48 / 320 and 16 / 320 are what a plan with it says.
TEST(PlanErrors, ReplicaGroupWeightsCountTheGroupsMicroBatch) {
  const std::string text = replaced(
      replaced(replaced(kGroups, "    zero_stage: 1\n", "    micro_batch: 2\n"),
               "gradient_weight: 0.1875", "gradient_weight: 0.15"),
      "gradient_weight: 0.03125", "gradient_weight: 0.05");
  EXPECT_EQ(plan_error(text), "<no error>");
  // Without a micro-batch of its own the other group's is the workload's: the loader cannot
  // check the weights yet, check_plan_references does.
  EXPECT_EQ(plan_error(replaced(text, "gradient_weight: 0.05", "gradient_weight: 0.5")), "<no error>");
}

TEST_F(PlanReferences, ReplicaGroups) {
  EXPECT_EQ(check(kGroups), "<no error>");
  EXPECT_EQ(check(replaced(kGroups, "first_layer: 16, num_layers: 16", "first_layer: 16, num_layers: 8")),
            "plan.yaml:13:9: replica_groups[1].stages[1].num_layers: expected the stages to end at "
            "layer 32 (the model's layer count), got 24");
  EXPECT_EQ(check(replaced(kGroups, "island: h100, first_layer: 0", "island: tpu, first_layer: 0")),
            "plan.yaml:12:18: replica_groups[1].stages[0].island: expected an island of cluster "
            "\"two-zone\" (a100, h100), got \"tpu\"");
  // 4 x 40 + 8 x 8 = 224 sequences, not the workload's 256 (weights 40 / 224 and 8 / 224).
  EXPECT_EQ(check(replaced(replaced(replaced(kGroups, "micro_batches: 48", "micro_batches: 40"),
                                    "gradient_weight: 0.1875", "gradient_weight: 0.178571429"),
                           "gradient_weight: 0.03125", "gradient_weight: 0.0357142857")),
            "plan.yaml:4:5: replica_groups: expected the groups' samples (dp x micro_batch x "
            "micro_batches, added up) to make the workload's global batch of 256, got 224");
  // The weights against the workload's micro-batch, once it is known: 4 x 32 x 1 + 8 x 8 x 2.
  const std::string own = replaced(
      replaced(replaced(replaced(kGroups, "    zero_stage: 1\n", "    micro_batch: 2\n"),
                        "gradient_weight: 0.1875", "gradient_weight: 0.125"),
               "gradient_weight: 0.03125", "gradient_weight: 0.5"),
      "micro_batches: 48", "micro_batches: 32");
  EXPECT_EQ(check(own),
            "plan.yaml:9:22: replica_groups[1].gradient_weight: expected 0.0625 (a replica's "
            "samples over all replicas' together: 16 / 256), got 0.5");
}

TEST(PlanErrors, CommandsOfOnePipelineRefuseReplicaGroups) {
  const Plan plan = parse_plan(kGroups, "plan.yaml");
  EXPECT_EQ(input_error_of([&] { formats::require_one_pipeline(plan, "hetplan export"); }),
            "plan.yaml:4:5: replica_groups: expected a plan of one pipeline: hetplan export does "
            "not take replica groups on different islands yet (hetplan eval and hetplan simulate "
            "take them)");
  EXPECT_EQ(input_error_of([&] { formats::require_one_pipeline(parse_plan(kPlan, "p.yaml"), "x"); }),
            "<no error>");
}

}  // namespace
}  // namespace hetplan
