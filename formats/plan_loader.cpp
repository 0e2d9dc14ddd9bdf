// Reads plans (docs/formats/plan.md) and scenarios (docs/formats/scenario.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"

namespace hetplan::formats {
namespace {

// A plan's or a stage's `recompute` and `recompute_layers` (which needs `recompute: full`).
void read_recompute(MapReader& map, std::optional<Recompute>& recompute,
                    std::optional<int>& layers) {
  if (auto mode = map.optional("recompute")) {
    recompute = static_cast<Recompute>(mode->as_choice({"none", "selective", "full"}));
  }
  if (auto count = map.optional("recompute_layers")) {
    layers = static_cast<int>(count->as_int(1, 100000));
    if (recompute != Recompute::full) count->fail("expected recompute: full beside it");
  }
}

std::vector<PlanStage> read_stages(const Field& stages) {
  std::vector<PlanStage> out;
  for (const Field& element : stages.elements()) {
    MapReader map(element);
    PlanStage stage;
    stage.location = element.location();
    const Field island = map.required("island");
    stage.island = island.as_identifier();
    stage.island_location = island.location();
    stage.first_layer = static_cast<int>(map.required("first_layer").as_int(0, 100000));
    stage.num_layers = static_cast<int>(map.required("num_layers").as_int(1, 100000));
    stage.tp = static_cast<int>(map.required("tp").as_int(1, 1024));
    stage.dp = static_cast<int>(map.required("dp").as_int(1, 1 << 20));
    const std::optional<Field> ep = map.optional("ep");
    if (ep) stage.ep = static_cast<int>(ep->as_int(1, 1 << 20));
    if (auto etp = map.optional("etp")) {
      stage.etp = static_cast<int>(etp->as_int(1, 1024));
      if ((static_cast<long long>(stage.tp) * stage.dp) % stage.etp != 0)
        etp->fail_expected("a divisor of the stage's tp x dp (" +
                           std::to_string(static_cast<long long>(stage.tp) * stage.dp) + ")");
    }
    // The expert groups tile the stage's ranks: ep groups of etp (ep divides dp when etp is tp).
    const long long expert_ranks = static_cast<long long>(stage.ep) * expert_tp(stage);
    if (ep && (static_cast<long long>(stage.tp) * stage.dp) % expert_ranks != 0) {
      if (stage.etp == 0)
        ep->fail_expected("a divisor of the stage's dp (" + std::to_string(stage.dp) + ")");
      ep->fail_expected("ep x etp (" + std::to_string(expert_ranks) +
                        ") dividing the stage's tp x dp (" +
                        std::to_string(static_cast<long long>(stage.tp) * stage.dp) + ")");
    }
    read_recompute(map, stage.recompute, stage.recompute_layers);
    if (auto chunks = map.optional("chunk_layers")) {
      stage.chunk_layers_location = chunks->location();
      long long sum = 0;
      for (const Field& count : chunks->elements()) {
        stage.chunk_layers.push_back(static_cast<int>(count.as_int(0, 100000)));
        sum += stage.chunk_layers.back();
      }
      if (sum != stage.num_layers) {
        throw InputError(chunks->location(), chunks->path(),
                         "expected model chunks whose layers add up to the stage's num_layers (" +
                             std::to_string(stage.num_layers) + "), got " + std::to_string(sum));
      }
    }
    map.done();
    out.push_back(std::move(stage));
  }
  if (out.empty()) stages.fail_expected("at least one stage");
  return out;
}

// A plan's or a replica group's `schedule` and `virtual_stages`, over what is already set.
void read_schedule(MapReader& map, Schedule& schedule, int& virtual_stages) {
  if (auto field = map.optional("schedule")) {
    schedule = static_cast<Schedule>(field->as_choice({"1f1b", "interleaved"}));
  }
  if (auto vpp = map.optional("virtual_stages")) {
    virtual_stages = static_cast<int>(vpp->as_int(1, 64));
  }
  if (schedule == Schedule::one_f_one_b && virtual_stages != 1) {
    map.required("virtual_stages").fail_expected("1 with the 1f1b schedule (use interleaved)");
  }
  if (schedule == Schedule::interleaved && virtual_stages < 2) {
    map.required("schedule")
        .fail("expected virtual_stages of at least 2 with the interleaved schedule");
  }
}

// `replica_groups` (docs/formats/plan.md#replica-groups): each group's share, its own settings
// over the plan's, and its stages.
void read_replica_groups(const Field& field, Plan& plan) {
  for (const Field& element : field.elements()) {
    MapReader map(element);
    ReplicaGroupPlan group;
    group.location = element.location();
    group.micro_batches = static_cast<int>(map.required("micro_batches").as_int(1, 1 << 20));
    const Field weight = map.required("gradient_weight");
    group.weight_location = weight.location();
    group.gradient_weight = weight.as_number(0.0, 1.0);
    if (auto mb = map.optional("micro_batch"))
      group.micro_batch = static_cast<int>(mb->as_int(1, 1 << 16));
    read_recompute(map, group.recompute, group.recompute_layers);
    if (auto zero = map.optional("zero_stage"))
      group.zero_stage = static_cast<int>(zero->as_int(0, 3));
    if (map.optional("schedule") || map.optional("virtual_stages")) {
      Schedule schedule = plan.schedule;
      int virtual_stages = plan.virtual_stages;
      read_schedule(map, schedule, virtual_stages);
      group.schedule = schedule;
      group.virtual_stages = virtual_stages;
    }
    group.stages = read_stages(map.required("stages"));
    map.done();
    plan.replica_groups.push_back(std::move(group));
  }
  if (plan.replica_groups.size() < 2) {
    field.fail_expected("at least two replica groups (one group is a plan's stages)");
  }
}

// Each replica's gradient weight must be its samples over the global batch:
// mb_g m_g / sum(dp_h mb_h m_h). Without `workload_micro_batch` a group whose micro-batch is
// the workload's is unknown, unless every group's is (then it cancels): the check waits.
void check_gradient_weights(const Plan& plan, std::optional<int> workload_micro_batch) {
  std::vector<double> batch;  // each group's micro-batch, 1 when all are the workload's
  const bool all_default =
      !plan.micro_batch && std::none_of(plan.replica_groups.begin(), plan.replica_groups.end(),
                                        [](const ReplicaGroupPlan& g) { return g.micro_batch; });
  for (const ReplicaGroupPlan& group : plan.replica_groups) {
    std::optional<int> mb = group.micro_batch ? group.micro_batch : plan.micro_batch;
    if (!mb) mb = all_default ? 1 : workload_micro_batch;
    if (!mb) return;
    batch.push_back(*mb);
  }
  double samples = 0;
  for (std::size_t g = 0; g < plan.replica_groups.size(); ++g) {
    const ReplicaGroupPlan& group = plan.replica_groups[g];
    samples += static_cast<double>(group.stages.front().dp) * batch[g] * group.micro_batches;
  }
  for (std::size_t g = 0; g < plan.replica_groups.size(); ++g) {
    const ReplicaGroupPlan& group = plan.replica_groups[g];
    const double mine = batch[g] * group.micro_batches;
    const double expected = mine / samples;
    if (std::abs(group.gradient_weight - expected) > 1e-6 * expected) {
      std::ostringstream text;
      text << "expected " << std::setprecision(9) << expected
           << " (a replica's samples over all replicas' together: " << mine << " / " << samples
           << "), got " << group.gradient_weight;
      throw InputError(group.weight_location,
                       "replica_groups[" + std::to_string(g) + "].gradient_weight", text.str());
    }
  }
}

// `gradient_exchange` and `parameter_server` of a plan with replica groups: the server is the
// island of one of its groups (checked here: the groups' islands are in the plan).
void read_gradient_exchange(MapReader& root, Plan& plan) {
  const std::optional<Field> exchange = root.optional("gradient_exchange");
  const std::optional<Field> server = root.optional("parameter_server");
  if (exchange) {
    static constexpr GradientExchange kExchanges[] = {GradientExchange::ring,
                                                      GradientExchange::parameter_server};
    plan.gradient_exchange = kExchanges[exchange->as_choice({"ring", "parameter-server"})];
  }
  if (plan.gradient_exchange == GradientExchange::ring) {
    if (server) server->fail("expected no parameter_server with a ring gradient exchange");
    return;
  }
  if (!server) {
    exchange->fail("expected parameter_server (the island of the group whose nodes serve) with "
                   "gradient_exchange: parameter-server");
  }
  plan.parameter_server = server->as_identifier();
  std::string islands;
  for (const ReplicaGroupPlan& group : plan.replica_groups) {
    if (group.stages.front().island == plan.parameter_server) return;
    islands += (islands.empty() ? "" : ", ") + group.stages.front().island;
  }
  server->fail_expected("the island of one of the replica groups (" + islands + ")");
}

Plan read_plan(const Field& root_field) {
  MapReader root(root_field);
  root.required("schema");
  Plan plan;
  plan.location = {root_field.file(), 0, 0};
  plan.name = root.required("name").as_identifier();
  read_schedule(root, plan.schedule, plan.virtual_stages);
  if (auto mb = root.optional("micro_batch"))
    plan.micro_batch = static_cast<int>(mb->as_int(1, 1 << 16));
  read_recompute(root, plan.recompute, plan.recompute_layers);
  if (auto zero = root.optional("zero_stage"))
    plan.zero_stage = static_cast<int>(zero->as_int(0, 3));
  if (auto dtype = root.optional("dtype")) {
    static constexpr DType kTrainingDTypes[] = {DType::fp32, DType::fp16, DType::bf16, DType::fp8};
    plan.dtype = kTrainingDTypes[dtype->as_choice({"fp32", "fp16", "bf16", "fp8"})];
  }

  if (auto scenario = root.optional("scenario")) {
    MapReader map(*scenario);
    PlanScenario made_for;
    made_for.path = map.required("path").as_string();
    if (made_for.path.empty()) map.required("path").fail_expected("a scenario file's path");
    const Field hash = map.required("sha256");
    made_for.sha256 = hash.as_string();
    if (made_for.sha256.size() != 64 ||
        made_for.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      hash.fail_expected("64 lower-case hex digits (a SHA-256)");
    map.done();
    plan.scenario = made_for;
  }

  const std::optional<Field> stages = root.optional("stages");
  const std::optional<Field> groups = root.optional("replica_groups");
  if (stages && groups) groups->fail("expected either stages or replica_groups, not both");
  if (groups) {
    read_replica_groups(*groups, plan);
    check_gradient_weights(plan, std::nullopt);
    read_gradient_exchange(root, plan);
    if (auto across = root.optional("zero_across_groups")) {
      plan.zero_across_groups = across->as_bool();
      if (plan.zero_across_groups && plan.gradient_exchange == GradientExchange::parameter_server)
        across->fail("expected no zero_across_groups with a parameter server (the server holds "
                     "the whole state; ZeRO across groups shards it over the replicas)");
    }
  } else {
    plan.stages = read_stages(root.required("stages"));
    for (const char* key : {"gradient_exchange", "parameter_server", "zero_across_groups"}) {
      if (auto field = root.optional(key))
        field->fail("expected no " + std::string(key) + " in a plan without replica_groups");
    }
  }
  // Provenance that `hetplan export` writes into plan JSON (docs/export.md#plan-json): not part
  // of the plan, so only its shape is checked.
  if (auto provenance = root.optional("export")) {
    if (!provenance->is_map()) {
      provenance->fail_expected("a mapping (provenance written by hetplan export)");
    }
  }
  root.done();
  return plan;
}

std::string island_names(const Cluster& cluster) {
  std::string names;
  for (const auto& island : cluster.islands) names += (names.empty() ? "" : ", ") + island.name;
  return names;
}

// A quantity of the dimension that must be above zero ("0 GB/s" parses, but is no bandwidth).
double positive_quantity(const Field& field, Dimension dimension) {
  const double value = field.as_quantity(dimension);
  if (!(value > 0)) {
    field.fail_expected("a positive " + std::string(name_of(dimension)) + " such as " +
                        std::string(example_of(dimension)));
  }
  return value;
}

// `simulation:` (docs/formats/scenario.md#simulation).
SimulationSettings read_simulation(const Field& field, const Cluster& cluster) {
  MapReader map(field);
  SimulationSettings simulation;
  simulation.location = field.location();
  if (auto seed = map.optional("seed")) {
    simulation.seed =
        static_cast<std::uint64_t>(seed->as_int(0, std::numeric_limits<std::int64_t>::max()));
  }
  if (auto jitter = map.optional("jitter")) simulation.jitter = jitter->as_number(0.0, 1.0);
  if (auto stragglers = map.optional("stragglers")) {
    for (const Field& element : stragglers->elements()) {
      MapReader entry(element);
      Straggler straggler;
      straggler.location = element.location();
      const Field island_field = entry.required("island");
      straggler.island = island_field.as_identifier();
      const Island* island = cluster.find_island(straggler.island);
      if (!island) {
        island_field.fail_expected("an island of cluster \"" + cluster.name + "\" (" +
                                   island_names(cluster) + ")");
      }
      const Field node = entry.required("node");
      straggler.node = static_cast<int>(node.as_int(0, 1 << 20));
      if (straggler.node >= island->nodes) {
        node.fail_expected("a node index of island \"" + island->name + "\" from 0 to " +
                           std::to_string(island->nodes - 1));
      }
      for (const Straggler& earlier : simulation.stragglers) {
        if (earlier.island == straggler.island && earlier.node == straggler.node) {
          node.fail("expected each node once, got node " + std::to_string(straggler.node) +
                    " of island \"" + straggler.island + "\" again (first at line " +
                    std::to_string(earlier.location.line) + ")");
        }
      }
      straggler.slowdown = entry.required("slowdown").as_number(1.0, 100.0);
      entry.done();
      simulation.stragglers.push_back(std::move(straggler));
    }
  }
  if (auto random = map.optional("random_stragglers")) {
    MapReader entry(*random);
    RandomStragglers drawn;
    drawn.location = random->location();
    drawn.fraction = entry.required("fraction").as_number(0.0, 1.0);
    drawn.slowdown = entry.required("slowdown").as_number(1.0, 100.0);
    entry.done();
    simulation.random_stragglers = drawn;
  }
  map.done();
  return simulation;
}

// `reliability:` (docs/formats/scenario.md#reliability).
Reliability read_reliability(const Field& field, const Cluster& cluster) {
  MapReader map(field);
  Reliability reliability;
  reliability.location = field.location();
  MapReader mtbf(map.required("node_mtbf"));
  for (const auto& entry : mtbf.entries()) {
    const std::string& chip = entry.first;  // a plain name: clang 14 lambdas cannot capture
    const Field& value = entry.second;      // structured bindings
    // Cluster::chips holds exactly the profiles its islands use.
    const bool used = std::any_of(cluster.chips.begin(), cluster.chips.end(),
                                  [&](const ChipProfile& profile) { return profile.id == chip; });
    if (!used) {
      std::string chips;
      for (const auto& profile : cluster.chips) chips += (chips.empty() ? "" : ", ") + profile.id;
      throw InputError(value.location(), value.path(),
                       "expected a chip profile id of an island of cluster \"" + cluster.name +
                           "\" (" + chips + "), got \"" + chip + "\"");
    }
    reliability.node_mtbf[chip] = positive_quantity(value, Dimension::duration);
  }
  reliability.checkpoint_write_bandwidth =
      positive_quantity(map.required("checkpoint_write_bandwidth"), Dimension::bandwidth);
  reliability.checkpoint_read_bandwidth = reliability.checkpoint_write_bandwidth;
  if (auto read = map.optional("checkpoint_read_bandwidth")) {
    reliability.checkpoint_read_bandwidth = positive_quantity(*read, Dimension::bandwidth);
  }
  reliability.restart_time = map.required("restart_time").as_quantity(Dimension::duration);
  if (auto interval = map.optional("checkpoint_interval")) {
    reliability.checkpoint_interval = positive_quantity(*interval, Dimension::duration);
  }
  map.done();
  return reliability;
}

}  // namespace

Plan parse_plan(const std::string& text, const std::string& file_name) {
  const YAML::Node root = parse_document(text, file_name);
  return read_plan(document_root(root, file_name, kPlanSchema));
}

Plan load_plan(const std::string& path) {
  return parse_plan(read_text_file(path), path);
}

namespace {

// The stages of one pipeline against the cluster and the model; `path` prefixes each field
// ("stages", or "replica_groups[1].stages").
void check_stages(const std::vector<PlanStage>& stages, const std::string& path,
                  int virtual_stages, const Cluster& cluster, const Workload& workload) {
  int next_layer = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const PlanStage& stage = stages[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!cluster.find_island(stage.island)) {
      throw InputError(stage.island_location, at + ".island",
                       "expected an island of cluster \"" + cluster.name + "\" (" +
                           island_names(cluster) + "), got \"" + stage.island + "\"");
    }
    if (stage.first_layer != next_layer) {
      throw InputError(stage.location, at + ".first_layer",
                       "expected " + std::to_string(next_layer) +
                           " (stages cover the layers in order, without gaps or overlaps), got " +
                           std::to_string(stage.first_layer));
    }
    if (stage.ep > 1 && (!workload.model.moe() || workload.model.experts % stage.ep != 0)) {
      throw InputError(stage.location, at + ".ep",
                       workload.model.moe()
                           ? "expected a divisor of the model's " +
                                 std::to_string(workload.model.experts) + " experts, got " +
                                 std::to_string(stage.ep)
                           : "expected 1: the model has no experts, got " +
                                 std::to_string(stage.ep));
    }
    if (stage.etp > 0 && stage.etp != stage.tp && !workload.model.moe()) {
      throw InputError(stage.location, at + ".etp",
                       "expected the stage's tp (" + std::to_string(stage.tp) +
                           "): the model has no experts, got " + std::to_string(stage.etp));
    }
    if (!stage.chunk_layers.empty()) {
      if (virtual_stages < 2 ||
          stage.chunk_layers.size() != static_cast<std::size_t>(virtual_stages)) {
        throw InputError(stage.chunk_layers_location, at + ".chunk_layers",
                         virtual_stages < 2
                             ? std::string("expected only with the interleaved schedule")
                             : "expected one entry per model chunk (virtual_stages " +
                                   std::to_string(virtual_stages) + "), got " +
                                   std::to_string(stage.chunk_layers.size()));
      }
    } else if (stage.num_layers % virtual_stages != 0) {
      throw InputError(stage.location, at + ".num_layers",
                       "expected a multiple of virtual_stages (" + std::to_string(virtual_stages) +
                           ") or the stage's chunk_layers, got " +
                           std::to_string(stage.num_layers));
    }
    next_layer += stage.num_layers;
  }
  if (next_layer != workload.model.layers) {
    const PlanStage& last = stages.back();
    throw InputError(
        last.location, path + "[" + std::to_string(stages.size() - 1) + "].num_layers",
        "expected the stages to end at layer " + std::to_string(workload.model.layers) +
            " (the model's layer count), got " + std::to_string(next_layer));
  }
}

}  // namespace

void check_plan_references(const Plan& plan, const Cluster& cluster, const Workload& workload) {
  if (!plan.has_replica_groups()) {
    check_stages(plan.stages, "stages", plan.virtual_stages, cluster, workload);
    return;
  }
  long long samples = 0;
  for (std::size_t g = 0; g < plan.replica_groups.size(); ++g) {
    const ReplicaGroupPlan& group = plan.replica_groups[g];
    check_stages(group.stages, "replica_groups[" + std::to_string(g) + "].stages",
                 group.virtual_stages.value_or(plan.virtual_stages), cluster, workload);
    const long long micro_batch =
        group.micro_batch.value_or(plan.micro_batch.value_or(workload.training.micro_batch));
    samples += group.stages.front().dp * micro_batch * group.micro_batches;
  }
  if (samples != workload.training.global_batch) {
    throw InputError(plan.replica_groups.front().location, "replica_groups",
                     "expected the groups' samples (dp x micro_batch x micro_batches, added up) "
                     "to make the workload's global batch of " +
                         std::to_string(workload.training.global_batch) + ", got " +
                         std::to_string(samples));
  }
  check_gradient_weights(plan, workload.training.micro_batch);
}

void require_one_pipeline(const Plan& plan, std::string_view command) {
  if (!plan.has_replica_groups()) return;
  throw InputError(plan.replica_groups.front().location, "replica_groups",
                   "expected a plan of one pipeline: " + std::string(command) +
                       " does not take replica groups on different islands yet (hetplan eval "
                       "and hetplan simulate take them)");
}

Scenario load_scenario(const std::string& path) {
  const std::string text = read_text_file(path);
  const YAML::Node root_node = parse_document(text, path);
  const Field root_field = document_root(root_node, path, kScenarioSchema);
  MapReader root(root_field);
  root.required("schema");
  Scenario scenario;
  scenario.location = root_field.location();  // where a missing top-level key is reported
  scenario.name = root.required("name").as_identifier();
  const Field cluster_field = root.required("cluster");
  scenario.cluster = load_referenced(cluster_field, [&] {
    return load_cluster(resolve_relative(cluster_field.as_string(), path));
  });
  const Field workload_field = root.required("workload");
  scenario.workload = load_referenced(workload_field, [&] {
    return load_workload(resolve_relative(workload_field.as_string(), path));
  });
  if (auto objective = root.optional("objective")) {
    scenario.objective = static_cast<Objective>(objective->as_choice({"throughput", "cost"}));
  }
  if (auto prices_field = root.optional("prices")) {
    MapReader map(*prices_field);
    Prices prices;
    const Field currency = map.required("currency");
    prices.currency = currency.as_string();
    if (prices.currency.size() != 3 ||
        prices.currency.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
      currency.fail_expected("a three-letter currency code such as USD or CNY");
    }
    auto money = [&](const Field& field) {
      const double value = field.as_quantity(Dimension::money_rate);
      if (field.as_string().find(prices.currency + "/h") == std::string::npos) {
        field.fail_expected("a price in " + prices.currency + " per hour such as \"2.5 " +
                            prices.currency + "/h\"");
      }
      return value;
    };
    if (auto islands = map.optional("islands")) {
      MapReader islands_map(*islands);
      for (auto& [name, field] : islands_map.entries()) {
        if (!scenario.cluster.find_island(name)) {
          throw InputError(field.location(), field.path(),
                           "expected an island of cluster \"" + scenario.cluster.name +
                               "\", got \"" + name + "\"");
        }
        MapReader island(field);
        prices.islands[name].chip_hour = money(island.required("chip_hour"));
        island.done();
      }
    }
    if (auto energy = map.optional("energy_per_kwh"))
      prices.energy_per_kwh = energy->as_number(0.0, 1e6);
    if (auto upkeep = map.optional("stack_upkeep")) prices.stack_upkeep_hour = money(*upkeep);
    map.done();
    scenario.prices = std::move(prices);
  }
  if (scenario.objective == Objective::cost && !scenario.prices) {
    root.required("objective").fail("expected prices when the objective is cost");
  }
  if (auto records = root.optional("validation_records")) {
    scenario.validation_records = resolve_relative(records->as_string(), path);
  }
  if (auto simulation = root.optional("simulation")) {
    scenario.simulation = read_simulation(*simulation, scenario.cluster);
  }
  if (auto reliability = root.optional("reliability")) {
    scenario.reliability = read_reliability(*reliability, scenario.cluster);
  }
  if (auto plan_field = root.optional("plan")) {
    Plan plan = load_referenced(*plan_field, [&] {
      Plan loaded = load_plan(resolve_relative(plan_field->as_string(), path));
      check_plan_references(loaded, scenario.cluster, scenario.workload);
      return loaded;
    });
    scenario.reference_plan = std::move(plan);
  }
  root.done();
  return scenario;
}

}  // namespace hetplan::formats
