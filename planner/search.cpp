#include "planner/search.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <tuple>
#include <type_traits>

#include "models/transformer_ops.hpp"
#include "planner/layer_split.hpp"
#include "planner/score.hpp"

namespace hetplan::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The constraint passes, in the order they run (docs/planner.md#constraints).
enum Pass {
  kInferenceOnly,
  kSoftwareStack,
  kDType,
  kUnknownFigures,
  kOperatorCoverage,
  kGang,
  kStructure,
  kMemory,
  kZoneReachability,
  kPassCount
};
constexpr const char* kPassNames[kPassCount] = {
    "inference-only", "software-stack", "dtype",  "unknown-figures",  "operator-coverage",
    "gang",           "structure",      "memory", "zone-reachability"};
constexpr std::size_t kExamplesPerPass = 4;

// One step's settings the search varies, and what they make of the workload's.
struct Setting {
  DType dtype = DType::bf16;
  int micro_batch = 1;
  Recompute recompute = Recompute::none;
  int recompute_layers = 0;  // with full: per model chunk, 0 all (Megatron's block method)
  int zero_stage = 0;
  int virtual_stages = 1;
  int dp = 1;
  int micro_batches = 1;
  sim::StepSettings step;
};

// Where a search spends its time (docs/planner.md#benchmarks).
enum Phase { kPhaseKernels, kPhaseSingle, kPhaseTaskSeeds, kPhaseTaskBound, kPhaseRanking, kPhaseCount };
constexpr const char* kPhaseNames[kPhaseCount] = {"kernels", "single-island", "task-level seeds",
                                                  "task-level bound", "ranking"};

class PhaseClock {
 public:
  explicit PhaseClock(PhaseReport& report)
      : report_(report), start_(std::chrono::steady_clock::now()) {}
  ~PhaseClock() {
    report_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  PhaseReport& report_;
  std::chrono::steady_clock::time_point start_;
};

struct StageSpec {
  int island = 0;
  int tp = 1;
  int layers = 0;
  int ep = 1;  // expert parallelism (mixture-of-experts models)
};

struct Found {
  Mode mode = Mode::single_island;
  double score = kInf;  // lower is better: step time, or cost per million tokens
  double step_s = 0;
  Setting setting;
  std::vector<StageSpec> stages;
};

// Plans of one shape compete for one place in the ranking.
struct Shape {
  Mode mode = Mode::single_island;
  std::vector<int> islands;  // as a set, in index order
  std::vector<int> tps;
  int dp = 0;
  auto operator<=>(const Shape&) const = default;
};

// One island's way of holding stages under one setting.
struct Option {
  int island = 0;
  int tp = 1;
  int ep = 1;
  const sim::StageKernel* kernel = nullptr;
  double per_layer = 0;
  // The least time one of its stages takes: its least layers (v, or under partial recompute
  // the N v recomputed ones) with their recompute.
  double least_time = 0;
  int max_stages = 0;
  int layers_per_stage = 0;  // memory cap of a middle stage, generous
  int most_layers = 0;       // no stage of this option holds more, wherever it sits
};

// Islands taking part in a task-level pipeline: an option and its stage count each.
using Config = std::vector<std::pair<const Option*, int>>;

// An option's two layer limits, the costly part of making it (searches over its memory).
struct OptionFit {
  int layers_per_stage = 0;
  int most_layers = 0;
};

struct IslandInfo {
  const Island* island = nullptr;
  const ChipProfile* chip = nullptr;
  bool eligible = true;
  std::string why_not;
  bool can_embed = true;
  bool can_head = true;
  std::vector<int> tps;
  int zone_rank = 0;
};

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// std::stable_sort for the search's short lists, without its temporary buffer (an allocation
// per call): insertion, each element after the equal ones before it.
template <typename It, typename Less>
void stable_sort_short(It first, It last, Less less) {
  for (It i = first; i != last; ++i) std::rotate(std::upper_bound(first, i, *i, less), i, i + 1);
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Scores of the configurations a setting's task-level search has tried, by their key (a run
// of ints: island, tp, ep and stages per island). Open addressing over one arena of keys, so
// that looking up and adding allocate nothing once the buffers have grown; clear() keeps them.
class ConfigMemo {
 public:
  void clear() {
    arena_.clear();
    for (std::size_t i : used_) slots_[i] = Slot{};
    used_.clear();
  }
  // The score stored for `key`, or nullptr.
  const double* find(const std::vector<int>& key) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t h = hash(key);
    for (std::size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& slot = slots_[i];
      if (slot.length < 0) return nullptr;
      if (slot.hash == h && matches(slot, key)) return &slot.value;
    }
  }
  // Adds `key` (not present) with its score; once the keys fill kMaxInts, nothing more (the
  // memo only saves scoring again: a configuration left out is scored again, to the same value).
  void add(const std::vector<int>& key, double value) {
    if (arena_.size() + key.size() > kMaxInts) return;
    if (2 * (used_.size() + 1) > slots_.size()) grow();
    Slot slot{hash(key), arena_.size(), static_cast<long>(key.size()), value};
    arena_.insert(arena_.end(), key.begin(), key.end());
    used_.push_back(place(slot));
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t offset = 0;
    long length = -1;  // -1: empty
    double value = 0;
  };
  static std::uint64_t hash(const std::vector<int>& key) {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the ints
    for (int x : key) h = (h ^ static_cast<std::uint32_t>(x)) * 0x100000001b3ULL;
    return h ^ (h >> 29);
  }
  bool matches(const Slot& slot, const std::vector<int>& key) const {
    return slot.length == static_cast<long>(key.size()) &&
           std::equal(key.begin(), key.end(), arena_.begin() + static_cast<long>(slot.offset));
  }
  std::size_t place(const Slot& slot) {
    std::size_t i = slot.hash & (slots_.size() - 1);
    while (slots_[i].length >= 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = slot;
    return i;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(64, 2 * old.size()), Slot{});
    for (std::size_t& i : used_) i = place(old[i]);
  }
  // 2^24 ints of keys (64 MiB; a key is a few ints per island), with their slots about as much.
  static constexpr std::size_t kMaxInts = std::size_t{1} << 24;
  std::vector<int> arena_;
  std::vector<Slot> slots_;        // a power of two, at most half full
  std::vector<std::size_t> used_;  // the slots taken, in the order they were added
};

// Helper threads kept for a whole search: each batch hands them its settings to take one at a
// time, and the calling thread takes its share too. Starting threads for every batch cost as
// much as the second core gave on the default scenario (2,912 settings in 364 batches).
class BatchPool {
 public:
  explicit BatchPool(std::size_t helpers) {
    for (std::size_t t = 0; t < helpers; ++t) threads_.emplace_back([this] { serve(); });
  }
  ~BatchPool() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
  }
  BatchPool(const BatchPool&) = delete;
  BatchPool& operator=(const BatchPool&) = delete;

  // Calls task(k) for every k below count, each once, and returns when all have returned.
  void run(std::size_t count, const std::function<void(std::size_t)>& task) {
    {
      std::lock_guard lock(mutex_);
      task_ = &task;
      count_ = count;
      next_ = 0;
      busy_ = threads_.size();
      ++generation_;
    }
    wake_.notify_all();
    take();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    task_ = nullptr;
  }

 private:
  void take() {
    for (std::size_t k = next_.fetch_add(1); k < count_; k = next_.fetch_add(1)) (*task_)(k);
  }
  void serve() {
    std::size_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return closing_ || generation_ != seen; });
        if (closing_) return;
        seen = generation_;
      }
      take();
      {
        std::lock_guard lock(mutex_);
        --busy_;
      }
      done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* task_ = nullptr;  // set under mutex_, with count_
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  std::size_t busy_ = 0;  // helpers still in the current batch
  std::size_t generation_ = 0;
  bool closing_ = false;
  std::vector<std::jthread> threads_;  // last member: joined before the rest is destroyed
};

// What the lanes of one search share: whether to stop, and why.
struct StopState {
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::string why;  // the first reason given
  void request(std::string reason) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (why.empty()) why = std::move(reason);
    stop.store(true, std::memory_order_relaxed);
  }
};

// The stage kernels of one search, shared by its lanes: a kernel depends only on its key, so
// whichever lane makes it first, every lane reads the same one.
class KernelStore {
 public:
  // What of a setting make_stage_kernel reads (the rest of the training settings is the
  // workload's, the same in every setting): island, tp, ep, dp, dtype, micro-batch.
  using Key = std::tuple<std::size_t, int, int, int, DType, int>;
  template <typename Make>
  const sim::StageKernel& get(const Key& key, Make&& make) {
    {
      const std::lock_guard lock(mutex_);
      const auto found = kernels_.find(key);
      if (found != kernels_.end()) return found->second;
    }
    sim::StageKernel made = make();
    const std::lock_guard lock(mutex_);
    // The map's nodes do not move: the reference stays good as others are added.
    return kernels_.try_emplace(key, std::move(made)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<Key, sim::StageKernel> kernels_;
};

// A plan with replica groups from one-pipeline plans, one per group, and the shares the
// balancing gave them: each group keeps its plan's settings; the dtype is the first's (the
// step refuses groups of different dtypes).
Plan replica_group_plan(const std::vector<const Plan*>& members,
                        const sim::MixedDataParallelStep& step) {
  Plan plan;
  plan.name = "mixdp";
  plan.dtype = members.front()->dtype;
  for (std::size_t g = 0; g < members.size(); ++g) {
    const Plan& own = *members[g];
    plan.name += "-" + own.stages.front().island + "-dp" + std::to_string(own.stages.front().dp);
    ReplicaGroupPlan group;
    group.micro_batches = step.groups[g].micro_batches;
    group.gradient_weight = step.groups[g].gradient_weight;
    group.micro_batch = own.micro_batch;
    group.recompute = own.recompute;
    group.recompute_layers = own.recompute_layers;
    group.zero_stage = own.zero_stage;
    group.schedule = own.schedule;
    group.virtual_stages = own.virtual_stages;
    group.stages = own.stages;
    plan.replica_groups.push_back(std::move(group));
  }
  return plan;
}

// Layouts tried per island for a replica group: its best plans alone of as many shapes
// (tp per stage and dp), best first. Few, because every combination of the islands' layouts
// is balanced.
constexpr std::size_t kGroupLayoutsForPairs = 12;
constexpr std::size_t kGroupLayoutsForRings = 5;

// Data parallelism across chip types (docs/planner.md#mixed-data-parallel): for every pair of
// islands with a declared gradient path, and for all islands together when the paths close a
// ring, every combination of the islands' layouts (`layouts`, per island, best first, each
// followed by its variants in the other `dtypes`) as the replica groups of one job, the batch shared so that they finish together; the fastest
// combination of each set of islands is estimated in full and kept.
void add_mixed_data_parallel(const Scenario& scenario, const SearchOptions& options,
                             const std::vector<std::vector<Plan>>& layouts, std::size_t dtypes,
                             SearchResult& result) {
  const Cluster& cluster = scenario.cluster;
  if (cluster.gradient_paths.empty()) return;
  const std::size_t n = result.islands.size();
  std::vector<std::vector<std::size_t>> candidates;  // island indices
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (cluster.gradient_path(result.islands[a].island, result.islands[b].island))
        candidates.push_back({a, b});
  std::vector<std::string> all;
  for (const auto& baseline : result.islands) all.push_back(baseline.island);
  if (n >= 3 && sim::gradient_paths(cluster, all).missing.empty()) {
    candidates.emplace_back();
    for (std::size_t a = 0; a < n; ++a) candidates.back().push_back(a);
  }
  // Each layout's line, once, for the islands some candidate has.
  std::vector<std::vector<sim::ReplicaGroupLine>> lines(n);
  for (const auto& members : candidates) {
    for (std::size_t i : members) {
      if (!lines[i].empty()) continue;
      for (const Plan& plan : layouts[i])
        lines[i].push_back(
            sim::replica_group_line(cluster, scenario.workload, plan, options.estimate));
    }
  }
  const double gradient_bytes =
      sim::dp_sync_collectives(sim::step_settings(scenario.workload, Plan{}).training,
                               scenario.workload.model.total_parameters())
          .items[0]
          .bytes;

  for (const auto& members : candidates) {
    std::string name;
    for (std::size_t i : members) name += (name.empty() ? "" : " + ") + result.islands[i].island;
    const std::size_t limit =
        dtypes * (members.size() == 2 ? kGroupLayoutsForPairs : kGroupLayoutsForRings);
    std::vector<std::string> islands;
    for (std::size_t i : members) islands.push_back(result.islands[i].island);
    const sim::GradientPaths ring = sim::gradient_paths(cluster, islands);
    // Every combination of the members' feasible layouts: an odometer over their indices.
    std::vector<std::size_t> index(members.size(), 0);
    std::vector<std::size_t> count(members.size(), 0);
    std::string why_none;
    for (std::size_t m = 0; m < members.size(); ++m) {
      count[m] = std::min(limit, lines[members[m]].size());
      if (count[m] == 0 && why_none.empty()) {
        const IslandBaseline& baseline = result.islands[members[m]];
        why_none = baseline.island + " cannot train the job alone" +
                   (baseline.why_not.empty() ? std::string() : ": " + baseline.why_not);
      }
    }
    double best_step = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> best;
    std::vector<models::ReplicaGroup> groups(members.size());
    std::vector<int> nodes(members.size());
    while (why_none.empty()) {
      bool usable = true;
      for (std::size_t m = 0; m < members.size() && usable; ++m) {
        const sim::ReplicaGroupLine& line = lines[members[m]][index[m]];
        usable = line.feasible && line.dtype == lines[members[0]][index[0]].dtype;
        groups[m] = line.group;
        nodes[m] = line.nodes;
      }
      if (usable) {
        const models::BatchShares shares =
            models::balance_batch(groups, scenario.workload.training.global_batch);
        const double step =
            shares.step_s + models::cross_group_exchange_s(gradient_bytes, nodes, ring.bandwidth, ring.latency);
        if (shares.feasible && step < best_step) {
          best_step = step;
          best = index;
        }
      }
      std::size_t m = 0;
      while (m < members.size() && ++index[m] == count[m]) index[m++] = 0;
      if (m == members.size()) break;
    }
    if (best.empty()) {
      result.mixed_data_parallel_refused.push_back(
          name + ": " + (why_none.empty() ? "no layouts of the islands share a dtype and make "
                                            "the global batch together"
                                          : why_none));
      continue;
    }
    std::vector<const Plan*> chosen;
    std::vector<Plan> plans;
    for (std::size_t m = 0; m < members.size(); ++m) {
      chosen.push_back(&layouts[members[m]][best[m]]);
      plans.push_back(*chosen.back());
    }
    sim::MixedDataParallelStep step =
        sim::estimate_mixed_data_parallel(cluster, scenario.workload, plans, options.estimate);
    if (!step.feasible) {
      result.mixed_data_parallel_refused.push_back(name + ": " + step.reasons.front());
      continue;
    }
    MixedDataParallelPlan found;
    found.plan = replica_group_plan(chosen, step);
    found.flag = sim::cross_vendor_flag(step.path_kind);
    found.islands = islands;
    std::set<std::string> stacks;
    for (const std::string& island : islands)
      stacks.insert(lower(cluster.find_island(island)->runtime.name));
    found.software_stacks = static_cast<int>(stacks.size());
    found.step = std::move(step);
    result.mixed_data_parallel.push_back(std::move(found));
  }
  std::stable_sort(result.mixed_data_parallel.begin(), result.mixed_data_parallel.end(),
                   [](const MixedDataParallelPlan& a, const MixedDataParallelPlan& b) {
                     return a.step.tokens_per_s > b.step.tokens_per_s;
                   });
}

// The search. run() enumerates the settings and hands them out in batches of a fixed size; the
// settings of a batch are searched on lanes — Searchers of their own, one per thread — each
// against the incumbents as they stood before the batch, and what each setting found is merged
// in setting order. So the bound prunes the same candidates and the same plans win whatever
// the thread count (docs/planner.md#threads).
class Searcher {
 public:
  Searcher(const Scenario& scenario, const SearchOptions& options, StopState& stop,
           KernelStore& kernels)
      : scenario_(scenario),
        cluster_(scenario.cluster),
        model_(scenario.workload.model),
        options_(options),
        layers_(model_.layers),
        shared_stop_(stop),
        kernels_(kernels) {
    kernel_options_ = options.estimate;
    kernel_options_.notes = false;
    for (int i = 0; i < kPassCount; ++i) passes_[i].name = kPassNames[i];
    for (int i = 0; i < kPhaseCount; ++i) phases_[i].name = kPhaseNames[i];
    single_best_.resize(cluster_.islands.size());
    // Which zones a pipeline may cross between, by their index in the fabric's list (an
    // island's zone_rank): decided once, not by comparing names for every island order.
    const std::size_t zones = cluster_.fabric.zones.size();
    zone_linked_.assign(zones * zones, 0);
    for (std::size_t a = 0; a < zones; ++a)
      for (std::size_t b = 0; b < zones; ++b)
        zone_linked_[a * zones + b] =
            cluster_.zones_connected(cluster_.fabric.zones[a], cluster_.fabric.zones[b]);
  }

  SearchResult run();

 private:
  // A lane's search of one setting, from the incumbents of `global` (the run's Searcher); false
  // when the search was stopped before it.
  // `fits`: the setting's options' layer limits, written by the seeds pass and read by the
  // exact pass (they depend only on the setting).
  bool search_one(const Searcher& global, const Setting& setting,
                  const std::vector<IslandInfo>& islands, std::vector<OptionFit>& fits);
  // Adds what this lane found in its last setting to the run's results.
  void merge_into(Searcher& global) const;
  void reject(Pass pass, const std::string& why) {
    reject(pass, [&] { return why; });
  }
  // `why` builds the reason only while the pass still collects examples.
  template <typename Why>
    requires std::is_invocable_r_v<std::string, Why>
  void reject(Pass pass, Why&& why) {
    PassReport& report = passes_[pass];
    ++report.rejected;
    // The run's examples were full before this setting: merge_into would drop these.
    if (report.examples.size() >= kExamplesPerPass || examples_full_[pass]) return;
    std::string text = why();
    if (std::find(report.examples.begin(), report.examples.end(), text) == report.examples.end())
      report.examples.push_back(std::move(text));
  }
  std::vector<IslandInfo> check_islands(DType dtype);
  // The stage kernel of (island, tp, ep) under a setting, made once per lane: settings that
  // differ only in what the kernel does not read (recompute, ZeRO, chunks) share it.
  const sim::StageKernel& kernel(const Setting& setting, std::size_t index, const Island& island,
                                int tp, int ep);
  // Expert-parallel sizes to try with `dp` replicas: every divisor shared with the experts
  // (1 for a dense model).
  std::vector<int> expert_parallel_sizes(int dp) const;
  void fit_option(const Setting& setting, const sim::StageKernel& k, Option& option) const;
  void search_setting(const Setting& setting, const std::vector<IslandInfo>& islands,
                      std::vector<OptionFit>& fits);
  void search_task_level(const Setting& setting, const std::vector<IslandInfo>& islands,
                         const std::vector<Option>& options);
  // The task-level configurations the local search starts from (the seeds pass's).
  std::vector<Config> seed_configs(const std::vector<Option>& options,
                                   const std::vector<std::vector<const Option*>>& by_island,
                                   const std::vector<int>& present, int v) const;
  double try_config(const Setting& setting, const std::vector<IslandInfo>& islands,
                    const std::vector<std::pair<const Option*, int>>& config);
  // One island order of a configuration (indices into it).
  double try_order(const Setting& setting, const std::vector<IslandInfo>& islands,
                   const std::vector<std::pair<const Option*, int>>& config,
                   const std::vector<std::size_t>& order);
  // The currency per second of the parts' chips (kInf without prices).
  double parts_rate(const std::vector<std::pair<const Option*, int>>& parts, int dp);
  // A lower bound on the step of any layer split of the parts' stages; with `whole_layers`,
  // where the fluid balance stays under `cutoff`, its bottleneck is raised to the whole-layer
  // water level (dearer; most candidates are cut without it). The islands-alone search keeps
  // the fluid bound: the replica groups take their layouts from the plans it scores beside each
  // island's best, and a tighter bound there would score fewer of them.
  double pipeline_floor(const Setting& setting,
                        const std::vector<std::pair<const Option*, int>>& parts, bool whole_layers,
                        double cutoff);
  double evaluate(Mode mode, const Setting& setting, const std::vector<int>& order,
                const std::vector<std::pair<const Option*, int>>& parts);
  // Decides whether to stop (a request, or the time budget spent), for every lane.
  void poll();
  // Tells the observer how far the search is (the run's Searcher, between batches).
  void report_progress() const;
  double rate(const std::vector<StageSpec>& stages, int dp) const;  // currency per second
  double score(double step_s, double money_rate) const;
  double step_for(double score, double money_rate) const;  // the inverse of score
  RankedPlan rank(const Found& found, const std::vector<IslandInfo>& islands) const;
  Plan to_plan(const Found& found) const;

  const Scenario& scenario_;
  const Cluster& cluster_;
  const ModelShape& model_;
  const SearchOptions& options_;
  sim::EstimateOptions kernel_options_;  // the search's kernels: no assumptions written
  const int layers_;
  PassReport passes_[kPassCount];
  bool examples_full_[kPassCount] = {};  // the run's examples of each pass, as the setting began
  PhaseReport phases_[kPhaseCount];
  Phase phase_ = kPhaseKernels;  // whose evaluations count now
  std::map<Shape, Found> best_by_shape_;
  mutable std::vector<double> bar_scores_;  // ranking_bar()'s (the run's only)
  std::vector<Found> single_best_;  // per island
  Found task_best_;
  std::vector<LevelGroup> level_groups_;  // the bounds' whole-layer water levels, reused
  std::vector<std::string> island_why_not_;
  std::vector<char> zone_linked_;  // [zone a x zones + zone b]: stages may cross from a to b
  std::size_t evaluations_ = 0;
  std::size_t pruned_ = 0;
  std::size_t settings_ = 0;
  std::size_t settings_total_ = 0;
  // Which pass searches (docs/planner.md#threads): the first only scores a setting's
  // task-level seeds and their local search; the exact one the islands alone and the branch and
  // bound, not the seeds again.
  enum class Round { seeds, exact };
  Round round_ = Round::exact;
  // What a task-level plan must beat to be ranked (ranking_bar() of the run as the setting
  // started); the task-level search prunes against it, so no shape of the top is pruned.
  double rank_bar_ = kInf;
  double batch_bar_ = kInf;  // the run's ranking_bar() before the batch, for its lanes
  // The first pass only looks for good plans: it prunes against the best one.
  double task_bar() const {
    return round_ == Round::seeds ? task_best_.score : std::max(task_best_.score, rank_bar_);
  }
  // The score of the options.top-th best shape found so far (infinite with fewer).
  double ranking_bar() const;
  bool stop_ = false;  // set by poll(); every loop of the search returns when it is
  StopState& shared_stop_;
  KernelStore& kernels_;  // the run's, shared by its lanes
  std::size_t walked_ = 0;  // task-level candidates visited, scored or not
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  sim::Estimate scratch_;
  std::vector<sim::StageSlot> slots_;
  // The current setting's boundaries and caps, over its kernels (search_setting makes it).
  std::optional<ScoreCache> cache_;
  // The current setting's kernels and options (search_setting's, buffers kept between settings).
  std::vector<sim::StageKernel> setting_kernels_;
  std::vector<Option> setting_options_;
  // An island alone, as evaluate() takes it (buffers kept between calls).
  std::vector<int> single_order_;
  std::vector<std::pair<const Option*, int>> single_parts_;
  // evaluate()'s buffers, kept between calls.
  std::vector<const sim::StageKernel*> eval_kernels_;
  std::vector<StageSpec> eval_stages_;
  std::vector<std::pair<int, int>> eval_members_;
  Shape eval_shape_;
  // try_config()'s and submit()'s.
  std::vector<std::size_t> try_order_;
  std::vector<int> try_islands_;
  std::vector<std::pair<const Option*, int>> try_parts_;
  std::vector<std::pair<const Option*, int>> submit_config_;
  std::vector<int> submit_key_;
  ConfigMemo seen_;  // search_task_level's, per setting
  std::vector<StageSpec> rate_stages_;
};

std::vector<int> Searcher::expert_parallel_sizes(int dp) const {
  std::vector<int> sizes;
  const int common = model_.moe() ? std::gcd(dp, model_.experts) : 1;
  for (int ep = 1; ep <= common; ++ep)
    if (common % ep == 0) sizes.push_back(ep);
  return sizes;
}

std::vector<IslandInfo> Searcher::check_islands(DType dtype) {
  std::vector<IslandInfo> out(cluster_.islands.size());
  const TrainingSettings& training = scenario_.workload.training;
  models::LayerSlice slice{training.micro_batch,       training.seq_len,         1,
                           training.sequence_parallel, training.flash_attention, dtype};
  slice.unfused = training.unfused & unfusable_operators(model_);
  const auto layer = models::layer_ops(model_, slice);
  const auto embedding = models::embedding_ops(model_, slice);
  const auto head = models::head_ops(model_, slice);
  for (std::size_t i = 0; i < out.size(); ++i) {
    IslandInfo& info = out[i];
    const Island& island = cluster_.islands[i];
    const ChipProfile& chip = cluster_.chip_of(island);
    info.island = &island;
    info.chip = &chip;
    const auto zone = std::find(cluster_.fabric.zones.begin(), cluster_.fabric.zones.end(),
                                island.zone);
    info.zone_rank = static_cast<int>(zone - cluster_.fabric.zones.begin());
    auto exclude = [&](Pass pass, const std::string& why) {
      info.eligible = false;
      info.why_not = why;
      reject(pass, "island " + island.name + ": " + why);
    };
    if (chip.role == ChipRole::inference) {
      exclude(kInferenceOnly, chip.vendor + " " + chip.model + " is an inference-only chip");
      continue;
    }
    if (!island.runtime.name.empty() && !chip.runtime.name.empty() &&
        lower(island.runtime.name) != lower(chip.runtime.name)) {
      exclude(kSoftwareStack, "runs " + island.runtime.name + " but " + chip.id + " needs " +
                                  chip.runtime.name);
      continue;
    }
    if (!chip.supports(dtype)) {
      exclude(kDType, chip.id + " does not support " + std::string(to_string(dtype)));
      continue;
    }
    if (!chip.peak(dtype)) {
      exclude(kUnknownFigures,
              "the " + std::string(to_string(dtype)) + " peak of " + chip.id + " is unknown");
      continue;
    }
    if (!chip.memory_capacity) {
      exclude(kUnknownFigures, "the memory capacity of " + chip.id + " is unknown");
      continue;
    }
    std::string missing;
    for (const auto& op : layer) {
      if (chip.coverage(op.op_class).support == Support::missing) {
        missing = std::string(to_string(op.op_class));
        break;
      }
    }
    if (!missing.empty()) {
      exclude(kOperatorCoverage, chip.id + " lacks operator class " + missing);
      continue;
    }
    for (const auto& op : embedding)
      if (chip.coverage(op.op_class).support == Support::missing) info.can_embed = false;
    for (const auto& op : head)
      if (chip.coverage(op.op_class).support == Support::missing) info.can_head = false;
    if (island.free_chip_count() == 0) {
      exclude(kGang, "no free nodes");
      continue;
    }
    for (int tp = 1; tp <= island.chips_per_node; tp *= 2) {
      if (model_.heads % tp != 0 || (model_.kv_heads % tp != 0 && tp % model_.kv_heads != 0)) {
        reject(kStructure, "tp " + std::to_string(tp) + " does not divide the " +
                               std::to_string(model_.heads) + " attention heads");
        continue;
      }
      info.tps.push_back(tp);
    }
  }
  return out;
}

double Searcher::rate(const std::vector<StageSpec>& stages, int dp) const {
  if (!scenario_.prices) return kInf;
  const Prices& prices = *scenario_.prices;
  double total = 0;
  std::set<std::string> stacks;
  for (const auto& stage : stages) {
    const Island& island = cluster_.islands[static_cast<std::size_t>(stage.island)];
    const auto price = prices.islands.find(island.name);
    if (price == prices.islands.end() || !price->second.chip_hour) return kInf;
    double per_chip = *price->second.chip_hour;
    const ChipProfile& chip = cluster_.chip_of(island);
    if (prices.energy_per_kwh && chip.tdp) per_chip += *chip.tdp * *prices.energy_per_kwh / 3.6e6;
    total += per_chip * stage.tp * dp;
    stacks.insert(lower(island.runtime.name));
  }
  if (prices.stack_upkeep_hour && stacks.size() > 1)
    total += *prices.stack_upkeep_hour * static_cast<double>(stacks.size() - 1);
  return total;
}

double Searcher::score(double step_s, double money_rate) const {
  if (scenario_.objective == Objective::throughput) return step_s;
  const TrainingSettings& t = scenario_.workload.training;
  const double tokens = static_cast<double>(t.global_batch) * t.seq_len;
  return money_rate * step_s / tokens * 1e6;
}

double Searcher::step_for(double value, double money_rate) const {
  if (scenario_.objective == Objective::throughput || !std::isfinite(value)) return value;
  if (money_rate <= 0) return kInf;
  const TrainingSettings& t = scenario_.workload.training;
  return value * static_cast<double>(t.global_batch) * t.seq_len / 1e6 / money_rate;
}

double Searcher::parts_rate(const std::vector<std::pair<const Option*, int>>& parts, int dp) {
  if (!scenario_.prices) return kInf;
  std::vector<StageSpec>& stages = rate_stages_;
  stages.clear();
  // A part of `count` stages pays for count x tp chips per replica, like one stage that wide.
  for (const auto& [option, count] : parts)
    stages.push_back({option->island, option->tp * count, 0, option->ep});
  return rate(stages, dp);
}

double Searcher::pipeline_floor(const Setting& setting,
                                const std::vector<std::pair<const Option*, int>>& parts,
                                bool whole_layers, double cutoff) {
  // score_pipeline's first bound, from the parts: a part of c stages of one kernel has a first
  // and a last stage with the boundaries to its neighbours, and c - 2 middle ones with the
  // boundaries inside it on both sides.
  const int v = setting.virtual_stages;
  const sim::StageRecompute recompute = sim::settings_recompute(setting.step);
  const Recompute marginal = sim::marginal_recompute(setting.step);
  const int least = marginal != recompute.mode ? recompute.layers * v : 0;
  const int least_layers = std::max(v, least);
  const int dense = model_.moe() ? std::min(model_.dense_layers, layers_) : 0;
  auto boundary = [&](const sim::StageKernel& a, const sim::StageKernel& b) {
    return cache_->boundary(&a, &b, [&] {
      return sim::stage_boundary(cluster_, model_, setting.step, a, b);
    }).time_s;
  };
  PipelineFloor floor;
  std::vector<LevelGroup>& level = level_groups_;
  level.clear();
  double before = 0;  // the boundary into this part's first stage
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Option& option = *parts[i].first;
    const int count = parts[i].second;
    const sim::StageKernel& k = *option.kernel;
    const double per_layer = k.layer_time_bound(marginal);
    const double extra = least > 0 ? least * (k.layer_time(Recompute::full) - per_layer) : 0.0;
    const double inner = count > 1 ? boundary(k, k) : 0.0;
    const double after = i + 1 < parts.size() ? boundary(k, *parts[i + 1].first->kernel) : 0.0;
    double embedding = i == 0 ? k.embedding_time() : 0.0;
    if (i == 0 && dense > 0) {
      // The first stage's dense layers, as score_pipeline prices them (recomputed first).
      const int dense_full = least > 0 ? std::min(dense, recompute.layers) : 0;
      embedding += dense_full * (k.dense_layer_time(Recompute::full) -
                                 k.layer_time(Recompute::full)) +
                   (dense - dense_full) * (k.dense_layer_time(marginal) - per_layer);
    }
    const double head = i + 1 == parts.size() ? k.head_time_bound() : 0.0;
    auto add = [&](double fixed, int stages) {
      if (stages <= 0) return;
      floor.add(per_layer, fixed, least_layers, stages);
      if (whole_layers) level.push_back({per_layer, fixed, stages});
    };
    if (count == 1) {
      add(extra + embedding + head + before + after, 1);
    } else {
      add(extra + embedding + before + inner, 1);
      add(extra + 2.0 * inner, count - 2);
      add(extra + head + inner + after, 1);
    }
    before = after;
  }
  const double fluid = floor.value(layers_, setting.micro_batches, v);
  if (!whole_layers || fluid >= cutoff) return fluid;
  return floor.value(layers_, setting.micro_batches, v,
                     whole_layer_level(level, layers_, floor.fluid_tau(layers_)));
}

double Searcher::evaluate(Mode mode, const Setting& setting, const std::vector<int>& order,
                        const std::vector<std::pair<const Option*, int>>& parts) {
  // parts[k]: the option and stage count of island order[k].
  const int v = setting.virtual_stages;
  const int m = setting.micro_batches;
  int p = 0;
  for (const auto& part : parts) p += part.second;
  if (v > 1 && m % p != 0) {
    reject(kStructure, [&] {
      return "interleaving needs the micro-batch count (" + std::to_string(m) +
             ") to be a multiple of the stages (" + std::to_string(p) + ")";
    });
    return kInf;
  }
  // Each chunk holds a whole layer, and under partial recompute at least its recomputed ones.
  const int per_chunk = std::max(1, setting.recompute_layers);
  if (static_cast<long long>(p) * v * per_chunk > layers_) {
    reject(kStructure, [&] {
      return "a pipeline of " + std::to_string(p) + " stages with " + std::to_string(v) +
             " chunk(s) each needs at least " + std::to_string(p * v * per_chunk) +
             " layers" +
             (per_chunk > 1 ? " (" + std::to_string(per_chunk) + " recomputed per chunk)" : "") +
             "; the model has " + std::to_string(layers_);
    });
    return kInf;
  }

  const double money = parts_rate(parts, setting.dp);
  double cutoff = kInf;
  if (!options_.exhaustive) {
    // A plan that beats neither its mode's incumbent nor the ranking's bar is cut off.
    const double incumbent =
        mode == Mode::task_level
            ? task_bar()
            : std::max(single_best_[static_cast<std::size_t>(order.front())].score, rank_bar_);
    cutoff = step_for(incumbent, money);
    // Most candidates end here, before their stages are laid out one by one.
    if (std::isfinite(cutoff) &&
        pipeline_floor(setting, parts, mode == Mode::task_level, cutoff) >= cutoff) {
      ++pruned_;
      return kInf;
    }
  }
  // Reused buffers: most candidates are cut off or refused, and allocate nothing.
  std::vector<const sim::StageKernel*>& kernels = eval_kernels_;
  std::vector<StageSpec>& stages = eval_stages_;
  kernels.clear();
  stages.clear();
  for (const auto& [option, count] : parts) {
    for (int s = 0; s < count; ++s) {
      kernels.push_back(option->kernel);
      stages.push_back({option->island, option->tp, 0, option->ep});
    }
  }
  const PipelineScore scored =
      score_pipeline(cluster_, model_, setting.step, m, kernels, slots_, scratch_, cutoff, &*cache_);
  if (scored.status == ScoreStatus::cut_off) {
    ++pruned_;
    return kInf;
  }
  if (scored.status == ScoreStatus::stage_too_small) {
    const sim::StageKernel& k = *kernels[static_cast<std::size_t>(scored.stage)];
    reject(kMemory, [&] {
      return "stage " + std::to_string(scored.stage) + " on " + k.island->name + " (tp " +
             std::to_string(k.tp) + ", dp " + std::to_string(k.dp) + ") does not fit even " +
             std::to_string(v * std::max(1, setting.recompute_layers)) + " layer(s)";
    });
    return kInf;
  }
  if (scored.status == ScoreStatus::layers_do_not_fit) {
    reject(kMemory, [&] {
      return "a pipeline of " + std::to_string(p) + " stage(s) cannot hold the model's " +
             std::to_string(layers_) + " layers within memory";
    });
    return kInf;
  }
  for (int j = 0; j < p; ++j)
    stages[static_cast<std::size_t>(j)].layers = slots_[static_cast<std::size_t>(j)].num_layers;
  ++evaluations_;
  ++phases_[phase_].evaluations;
  if ((evaluations_ & 4095) == 0) poll();
  if (!scratch_.feasible) {
    reject(kMemory, scratch_.reasons.front());
    return kInf;
  }
  const double value = score(scratch_.step_time_s, money);
  Found& incumbent = mode == Mode::task_level
                         ? task_best_
                         : single_best_[static_cast<std::size_t>(order.front())];
  // Written in place: a better plan reuses the stage buffer of the one it replaces.
  auto record = [&](Found& into) {
    into.mode = mode;
    into.score = value;
    into.step_s = scratch_.step_time_s;
    into.setting = setting;
    into.stages.assign(stages.begin(), stages.end());
  };
  if (value < incumbent.score) record(incumbent);
  // Orders of the same islands compete for one place.
  std::vector<std::pair<int, int>>& members = eval_members_;
  members.clear();
  for (const auto& part : parts) members.emplace_back(part.first->island, part.first->tp);
  std::sort(members.begin(), members.end());
  Shape& shape = eval_shape_;
  shape.mode = mode;
  shape.islands.clear();
  shape.tps.clear();
  shape.dp = setting.dp;
  for (const auto& [island, tp] : members) {
    shape.islands.push_back(island);
    shape.tps.push_back(tp);
  }
  const auto known = best_by_shape_.find(shape);
  if (known == best_by_shape_.end())
    record(best_by_shape_[shape]);
  else if (value < known->second.score)
    record(known->second);
  return value;
}

double Searcher::try_config(const Setting& setting, const std::vector<IslandInfo>& islands,
                          const std::vector<std::pair<const Option*, int>>& config) {
  // config: (option, stages) per participating island, in island index order. Every island
  // order of up to four islands; beyond, two: zones kept together, the islands with the most
  // memory per chip first (early stages hold the most micro-batches in flight), and the
  // reverse.
  std::vector<std::size_t>& order = try_order_;
  order.resize(config.size());
  std::iota(order.begin(), order.end(), 0);
  const bool every_order = options_.exhaustive || config.size() <= 4;
  if (!every_order) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const IslandInfo& x = islands[static_cast<std::size_t>(config[a].first->island)];
      const IslandInfo& y = islands[static_cast<std::size_t>(config[b].first->island)];
      if (x.zone_rank != y.zone_rank) return x.zone_rank < y.zone_rank;
      return *x.chip->memory_capacity > *y.chip->memory_capacity;
    });
  }
  double best = kInf;
  for (int round = 0;; ++round) {
    if (!every_order && round == 1) std::reverse(order.begin(), order.end());
    best = std::min(best, try_order(setting, islands, config, order));
    if (every_order ? !std::next_permutation(order.begin(), order.end()) : round == 1) break;
  }
  return best;
}

double Searcher::try_order(const Setting& setting, const std::vector<IslandInfo>& islands,
                           const std::vector<std::pair<const Option*, int>>& config,
                           const std::vector<std::size_t>& candidate) {
  const IslandInfo& head = islands[static_cast<std::size_t>(config[candidate.front()].first->island)];
  const IslandInfo& tail = islands[static_cast<std::size_t>(config[candidate.back()].first->island)];
  if (!head.can_embed || !tail.can_head) {
    reject(kOperatorCoverage, [&] {
      return "island " + (head.can_embed ? tail : head).island->name + " cannot hold the " +
             (head.can_embed ? "output head" : "embedding");
    });
    return kInf;
  }
  const std::size_t zones = cluster_.fabric.zones.size();
  for (std::size_t k = 0; k + 1 < candidate.size(); ++k) {
    const IslandInfo& x = islands[static_cast<std::size_t>(config[candidate[k]].first->island)];
    const IslandInfo& y =
        islands[static_cast<std::size_t>(config[candidate[k + 1]].first->island)];
    const Island& a = *x.island;
    const Island& b = *y.island;
    const auto za = static_cast<std::size_t>(x.zone_rank), zb = static_cast<std::size_t>(y.zone_rank);
    if (za < zones && zb < zones ? !zone_linked_[za * zones + zb]
                                 : !cluster_.zones_connected(a.zone, b.zone)) {
      reject(kZoneReachability, [&] {
        return "zones " + a.zone + " and " + b.zone + " have no link between them (islands " +
               a.name + ", " + b.name + ")";
      });
      return kInf;
    }
  }
  std::vector<int>& island_order = try_islands_;
  std::vector<std::pair<const Option*, int>>& parts = try_parts_;
  island_order.clear();
  parts.clear();
  for (std::size_t k : candidate) {
    island_order.push_back(config[k].first->island);
    parts.push_back(config[k]);
  }
  return evaluate(Mode::task_level, setting, island_order, parts);
}

std::vector<Config> Searcher::seed_configs(const std::vector<Option>& options,
                                           const std::vector<std::vector<const Option*>>& by_island,
                                           const std::vector<int>& present, int v) const {
  // Decomposed: for each candidate bottleneck tau, every island on its own picks the tp that
  // holds the most layers within tau, and the layers go to the fastest islands first. That
  // names, for each tau, which islands join, with which tp and how many stages; the layer
  // split and the estimate then price each such configuration exactly, in every island order.
  std::vector<Config> seeds;
  std::vector<double> taus;
  for (const auto& option : options) {
    for (int n = v; n <= std::min(option.layers_per_stage, layers_); n += v)
      taus.push_back(n * option.per_layer);
  }
  std::sort(taus.begin(), taus.end());
  taus.erase(std::unique(taus.begin(), taus.end()), taus.end());
  struct Pick {
    const Option* option = nullptr;
    int per_stage = 0;  // layers
    int hosted = 0;
  };
  std::vector<Pick> picks;  // per tau, buffers kept
  Config fewest, widest;
  for (double tau : taus) {
    picks.clear();
    for (int i : present) {
      Pick best;
      for (const Option* option : by_island[static_cast<std::size_t>(i)]) {
        // Capped in doubles: a fast option's quotient can pass an int's range.
        int per_stage = static_cast<int>(std::min<double>(
            std::floor(tau / option->per_layer * (1 + 1e-12)), option->layers_per_stage));
        per_stage = per_stage / v * v;
        const int hosted = per_stage * option->max_stages;
        if (hosted > best.hosted ||
            (hosted == best.hosted && hosted > 0 && per_stage > best.per_stage))
          best = {option, per_stage, hosted};
      }
      if (best.hosted > 0) picks.push_back(best);
    }
    stable_sort_short(picks.begin(), picks.end(), [](const Pick& a, const Pick& b) {
      return a.option->per_layer < b.option->per_layer;
    });
    int left = layers_;
    fewest.clear();
    widest.clear();
    for (const Pick& pick : picks) {
      if (left == 0) break;
      const int take = std::min(left, pick.hosted);
      left -= take;
      fewest.emplace_back(pick.option, (take + pick.per_stage - 1) / pick.per_stage);
      widest.emplace_back(pick.option, pick.option->max_stages);
    }
    if (left > 0 || fewest.size() < 2) continue;
    seeds.push_back(fewest);
    seeds.push_back(widest);
  }
  // Every island joining, with its fastest option: one stage each, and all it can hold.
  Config thin, wide;
  for (int i : present) {
    const Option* fastest = by_island[static_cast<std::size_t>(i)].front();
    for (const Option* option : by_island[static_cast<std::size_t>(i)])
      if (option->per_layer < fastest->per_layer) fastest = option;
    thin.emplace_back(fastest, 1);
    wide.emplace_back(fastest, fastest->max_stages);
  }
  seeds.push_back(thin);
  seeds.push_back(wide);
  return seeds;
}

void Searcher::search_task_level(const Setting& setting, const std::vector<IslandInfo>& islands,
                                 const std::vector<Option>& options) {
  std::vector<std::vector<const Option*>> by_island(islands.size());
  for (const auto& option : options) by_island[static_cast<std::size_t>(option.island)].push_back(&option);
  std::vector<int> present;
  for (std::size_t i = 0; i < islands.size(); ++i)
    if (!by_island[i].empty()) present.push_back(static_cast<int>(i));
  if (present.size() < 2) return;

  // (island, tp, ep, stages) per island -> score
  ConfigMemo& seen = seen_;
  seen.clear();
  auto submit = [&](const Config& given) {
    Config& config = submit_config_;
    config.assign(given.begin(), given.end());
    std::sort(config.begin(), config.end(),
              [](const auto& a, const auto& b) { return a.first->island < b.first->island; });
    std::vector<int>& key = submit_key_;
    key.clear();
    for (const auto& [option, count] : config)
      key.insert(key.end(), {option->island, option->tp, option->ep, count});
    if (const double* known = seen.find(key)) return *known;
    const int cap = options_.max_pipeline_islands;
    const bool spans = config.size() >= 2 && (cap <= 0 || static_cast<int>(config.size()) <= cap);
    const double value = spans ? try_config(setting, islands, config) : kInf;
    seen.add(key, value);
    return value;
  };

  const int v = setting.virtual_stages;
  std::vector<Config> seeds;
  phase_ = kPhaseTaskSeeds;
  std::optional<PhaseClock> clock(phases_[kPhaseTaskSeeds]);
  // The exact pass makes none: the seeds pass scored them.
  if (round_ == Round::seeds) seeds = seed_configs(options, by_island, present, v);

  std::vector<std::pair<double, Config>> scored;
  for (const auto& seed : seeds) scored.emplace_back(submit(seed), seed);
  stable_sort_short(scored.begin(), scored.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });

  // Local search from the best seeds: one stage more or less on one island, another tp on one
  // island, an island joining with one stage or leaving; move while it improves.
  constexpr std::size_t kClimbs = 3;
  // A seed may be infeasible as it stands (interleaving needs the stage count to divide the
  // micro-batches); a climb from it takes the first feasible neighbour.
  std::vector<Config> neighbours;
  for (std::size_t c = 0; c < scored.size() && c < kClimbs; ++c) {
    Config current = scored[c].second;
    double value = scored[c].first;
    for (bool moved = true; moved;) {
      moved = false;
      // The neighbours' buffers are kept from one move to the next.
      std::size_t count_of = 0;
      auto neighbour_of = [&]() -> Config& {
        if (count_of == neighbours.size()) neighbours.emplace_back();
        Config& next = neighbours[count_of++];
        next.assign(current.begin(), current.end());
        return next;
      };
      for (std::size_t k = 0; k < current.size(); ++k) {
        const auto [option, count] = current[k];
        if (count < option->max_stages) {
          ++neighbour_of()[k].second;
        }
        if (count > 1) {
          --neighbour_of()[k].second;
        }
        if (current.size() > 2) {
          Config& without = neighbour_of();
          without.erase(without.begin() + static_cast<long>(k));
        }
        for (const Option* other : by_island[static_cast<std::size_t>(option->island)]) {
          if (other == option) continue;
          const int scaled = std::max(1, count * option->tp / other->tp);
          neighbour_of()[k] = {other, std::min(scaled, other->max_stages)};
        }
      }
      for (int i : present) {
        const bool in = std::any_of(current.begin(), current.end(),
                                    [&](const auto& part) { return part.first->island == i; });
        if (in) continue;
        for (const Option* option : by_island[static_cast<std::size_t>(i)]) {
          neighbour_of().emplace_back(option, 1);
        }
      }
      for (std::size_t n = 0; n < count_of; ++n) {
        const double candidate = submit(neighbours[n]);
        if (candidate < value) {
          value = candidate;
          current.assign(neighbours[n].begin(), neighbours[n].end());
          moved = true;
        }
      }
    }
  }
  // Branch and bound over the islands: each sits out or takes one (tp, stages). The bound
  // below holds for every completion of a partial configuration, so pruning by it never loses
  // the best plan; the heuristic passes first only give it a good incumbent to prune against.
  // With options.exhaustive nothing is pruned (for tests).
  const int m = setting.micro_batches;
  const double slope = m - 1.0 / setting.virtual_stages;
  std::vector<int> walk_order = present;
  // Per island, the most a stage can add to the layer throughput (1 / per-layer time) and the
  // most stages it can hold, over its options; together an upper bound on what it adds.
  std::vector<double> layer_rate(islands.size(), 0.0);
  std::vector<int> room(islands.size(), 0);
  // Per island, the most layers its stages can hold, over its options (each stage at most its
  // option's most_layers).
  std::vector<long> hold(islands.size(), 0);
  double fastest_layer = kInf;
  double least_embedding = kInf, least_head = kInf;  // some stage holds each
  // A mixture's dense layers (docs/planner.md#dense-layers) sit on the first stage and may cost
  // less than the MoE layers the bounds count them as: at most `dense_credit` less in all, and
  // as layer throughput at most as if `dense` of the layers were free.
  const int dense = model_.moe() ? std::min(model_.dense_layers, layers_) : 0;
  double dense_credit = 0;
  for (const auto& option : options) {
    const sim::StageKernel& k = *option.kernel;
    if (dense > 0) {
      dense_credit = std::max(
          dense_credit,
          dense * (option.per_layer - k.dense_layer_time(sim::marginal_recompute(setting.step))));
    }
    least_embedding = std::min(least_embedding, k.embedding_time());
    least_head = std::min(least_head, k.head_time_bound());
    const auto i = static_cast<std::size_t>(option.island);
    layer_rate[i] = std::max(layer_rate[i], 1.0 / option.per_layer);
    room[i] = std::max(room[i], option.max_stages);
    hold[i] = std::max(hold[i], static_cast<long>(option.max_stages) * option.most_layers);
    fastest_layer = std::min(fastest_layer, option.per_layer);
  }
  least_embedding -= dense_credit;  // the stage-sum parts: the first stage's dense layers
  const double fluid_layers = layers_ - dense;  // the bottleneck parts
  std::stable_sort(walk_order.begin(), walk_order.end(), [&](int x, int y) {
    return layer_rate[static_cast<std::size_t>(x)] * room[static_cast<std::size_t>(x)] >
           layer_rate[static_cast<std::size_t>(y)] * room[static_cast<std::size_t>(y)];
  });
  // The islands still to decide at each depth, fastest stages first.
  std::vector<std::vector<int>> rest(walk_order.size() + 1);
  for (std::size_t r = 0; r < walk_order.size(); ++r) {
    rest[r].assign(walk_order.begin() + static_cast<long>(r), walk_order.end());
    std::stable_sort(rest[r].begin(), rest[r].end(), [&](int x, int y) {
      return layer_rate[static_cast<std::size_t>(x)] > layer_rate[static_cast<std::size_t>(y)];
    });
  }
  // The most layers the islands still to decide can hold: a pipeline whose chosen stages and
  // undecided islands cannot hold the model together never will (made before the islands are
  // decided, it cuts where no incumbent bounds anything yet).
  std::vector<long> rest_hold(walk_order.size() + 1, 0);
  for (std::size_t r = walk_order.size(); r-- > 0;)
    rest_hold[r] = rest_hold[r + 1] + hold[static_cast<std::size_t>(walk_order[r])];
  // Every stage holds at least v layers, under partial recompute its N v recomputed ones.
  const int least_layers = v * std::max(1, setting.recompute_layers);
  const int stage_budget = layers_ / least_layers;
  // The most layer throughput the undecided islands can add with the stages left.
  auto rest_capacity = [&](std::size_t r, int stages) {
    double total = 0;
    int left = stage_budget - stages;
    for (int i : rest[r]) {
      if (left <= 0) break;
      const int take = std::min(left, room[static_cast<std::size_t>(i)]);
      total += take * layer_rate[static_cast<std::size_t>(i)];
      left -= take;
    }
    return total;
  };
  Config partial;
  auto money_of = [&](const Config& config) {
    if (scenario_.objective != Objective::cost) return 0.0;
    std::vector<StageSpec> priced;
    for (const auto& [option, count] : config)
      priced.push_back({option->island, option->tp, 0, option->ep});
    return rate(priced, setting.dp);
  };
  // The bound splits in two: a bottleneck part that falls as stages are added and a stage-sum
  // part that grows with them. capacity: sum over chosen stages of 1 / per-layer time;
  // chunk_sum and chunk_max: the sum and the largest least stage time over chosen stages.
  auto bottleneck_part = [&](std::size_t r, double capacity, double chunk_max, int stages) {
    return slope * std::max(fluid_layers / (capacity + rest_capacity(r, stages)), chunk_max);
  };
  auto sum_part = [&](double chunk_sum, int stages) {
    return (chunk_sum + std::max(0, layers_ - stages * least_layers) * fastest_layer + least_embedding +
            least_head) /
           v;
  };
  // A tighter bound for a whole configuration, with each stage's memory cap: the bottleneck is
  // at least the water level at which the stages, each filled up to its cap, hold every layer;
  // the stage times sum to at least the cheapest way to place the layers under the caps.
  struct Group {
    double per_layer;
    double least_time;
    int count;
    int cap;  // layers per stage
  };
  std::vector<Group> groups;  // capped_bound's, reused
  auto capped_bound = [&](const Config& config, double money, double bar) {
    // The walk has already cut a configuration whose caps cannot hold every layer.
    groups.clear();
    double chunk_max = 0;
    for (const auto& [option, count] : config) {
      groups.push_back({option->per_layer, option->least_time, count, option->most_layers});
      chunk_max = std::max(chunk_max, option->least_time);
    }
    // Water level: f(tau) = sum count x min(cap, tau / per_layer) reaches the layer count.
    std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      return a.cap * a.per_layer < b.cap * b.per_layer;
    });
    double flowing = 0;  // sum of count / per_layer over groups not yet at their cap
    for (const auto& g : groups) flowing += g.count / g.per_layer;
    double full = 0;  // layers in groups at their cap
    double tau = 0;
    for (const auto& g : groups) {
      const double level = g.cap * g.per_layer;
      if (full + level * flowing >= fluid_layers) break;
      full += static_cast<double>(g.count) * g.cap;
      flowing -= g.count / g.per_layer;
      tau = level;
    }
    if (flowing > 0) tau = std::max(tau, (fluid_layers - full) / flowing);
    // Least stage-time sum: the least layers on every stage, the rest on the fastest stages
    // first.
    std::sort(groups.begin(), groups.end(),
              [](const Group& a, const Group& b) { return a.per_layer < b.per_layer; });
    double sum = 0;
    long left = layers_;
    for (const auto& g : groups) {
      sum += static_cast<double>(g.count) * g.least_time;
      left -= static_cast<long>(g.count) * least_layers;
    }
    for (const auto& g : groups) {
      if (left <= 0) break;
      const long take =
          std::min<long>(left, static_cast<long>(g.count) * std::max(0, g.cap - least_layers));
      sum += static_cast<double>(take) * g.per_layer;
      left -= take;
    }
    const double sums = (sum + least_embedding + least_head) / v;
    const double fluid = slope * std::max(tau, chunk_max) + sums;
    if (score(fluid, money) >= bar) return fluid;
    // A stage holds whole layers: the bottleneck is at least their water level (dearer, so only
    // where the fluid level leaves the configuration a chance).
    level_groups_.clear();
    for (const auto& g : groups) level_groups_.push_back({g.per_layer, 0.0, g.count, g.cap});
    const double whole = whole_layer_level(level_groups_, layers_ - dense, tau);
    return slope * std::max({tau, whole, chunk_max}) + sums;
  };
  // Zone reachability, decided per set of islands before any (tp, stages) of them is
  // enumerated: a pipeline's consecutive stages must sit in linked zones, so the zones of the
  // islands it uses must be connected through zones of islands it could still use. Where every
  // pair of zones is linked there is nothing to decide.
  const int zone_count = static_cast<int>(cluster_.fabric.zones.size());
  const std::vector<char>& linked = zone_linked_;
  const bool all_linked =
      std::all_of(linked.begin(), linked.end(), [](char link) { return link != 0; });
  std::vector<int> used_in_zone(static_cast<std::size_t>(zone_count), 0);  // islands taken
  // Whether the taken islands' zones can still be joined through zones of islands at depth r
  // or later.
  std::vector<char> allowed, visited;  // reachable()'s, reused
  std::vector<int> stack;
  auto reachable = [&](std::size_t r) {
    if (all_linked) return true;
    allowed.assign(static_cast<std::size_t>(zone_count), 0);
    int start = -1, needed = 0;
    for (int z = 0; z < zone_count; ++z) {
      if (used_in_zone[static_cast<std::size_t>(z)] > 0) {
        allowed[static_cast<std::size_t>(z)] = 1;
        ++needed;
        if (start < 0) start = z;
      }
    }
    if (needed <= 1) return true;
    for (std::size_t k = r; k < walk_order.size(); ++k)
      allowed[static_cast<std::size_t>(islands[static_cast<std::size_t>(walk_order[k])].zone_rank)] = 1;
    visited.assign(static_cast<std::size_t>(zone_count), 0);
    stack.assign(1, start);
    visited[static_cast<std::size_t>(start)] = 1;
    int found = 0;
    while (!stack.empty()) {
      const int z = stack.back();
      stack.pop_back();
      if (used_in_zone[static_cast<std::size_t>(z)] > 0) ++found;
      for (int y = 0; y < zone_count; ++y) {
        if (!visited[static_cast<std::size_t>(y)] && allowed[static_cast<std::size_t>(y)] &&
            linked[static_cast<std::size_t>(z * zone_count + y)]) {
          visited[static_cast<std::size_t>(y)] = 1;
          stack.push_back(y);
        }
      }
    }
    return found == needed;
  };
  // Recursive through its first argument (a generic lambda, not a std::function: the walk
  // visits millions of candidates, and the call through a std::function kept it from inlining).
  auto walk = [&](auto& self, std::size_t r, double capacity, double chunk_sum, double chunk_max,
                  int stages, long held) -> void {
        if ((++walked_ & 4095) == 0) poll();  // most candidates are pruned, never scored
        if (stages > stage_budget || stop_) return;
        if (!options_.exhaustive && held + rest_hold[r] < layers_) {
          ++pruned_;
          return;
        }
        if (!options_.exhaustive && !reachable(r)) {
          static const std::string kWhy =
              "the islands taken sit in zones no link joins (through zones still open)";
          ++pruned_;
          reject(kZoneReachability, kWhy);
          return;
        }
        if (!options_.exhaustive && task_bar() < kInf) {
          const double bound =
              bottleneck_part(r, capacity, chunk_max, stages) + sum_part(chunk_sum, stages);
          if (score(bound, money_of(partial)) >= task_bar()) {
            ++pruned_;
            return;
          }
        }
        if (r == walk_order.size()) {
          if (partial.size() < 2) return;
          if (!options_.exhaustive && task_bar() < kInf) {
            const double money = money_of(partial);
            if (score(capped_bound(partial, money, task_bar()), money) >= task_bar()) {
              ++pruned_;
              return;
            }
          }
          submit(partial);
          return;
        }
        self(self, r + 1, capacity, chunk_sum, chunk_max, stages, held);
        // Island r joins only while the pipeline spans fewer islands than the cap.
        if (options_.max_pipeline_islands > 0 &&
            static_cast<int>(partial.size()) >= options_.max_pipeline_islands)
          return;
        int& taken_in_zone = used_in_zone[static_cast<std::size_t>(
            islands[static_cast<std::size_t>(walk_order[r])].zone_rank)];
        ++taken_in_zone;
        const bool joinable = options_.exhaustive || reachable(r + 1);
        --taken_in_zone;
        if (!joinable) {
          ++pruned_;
          return;
        }
        for (const Option* option : by_island[static_cast<std::size_t>(walk_order[r])]) {
          const double chunk = option->least_time;
          for (int count = std::min(option->max_stages, stage_budget - stages); count >= 1;
               --count) {
            if (!options_.exhaustive && task_bar() < kInf) {
              // Fewer stages of this option only raise the bottleneck part, and the stage-sum
              // part is at least its value with one stage: once that is too much, stop.
              partial.emplace_back(option, count);
              const double floor =
                  bottleneck_part(r + 1, capacity + count / option->per_layer,
                                  std::max(chunk_max, chunk), stages + count) +
                  sum_part(chunk_sum + chunk, stages + 1);
              const bool hopeless = score(floor, money_of(partial)) >= task_bar();
              partial.pop_back();
              if (hopeless) {
                ++pruned_;
                break;
              }
            }
            partial.emplace_back(option, count);
            ++taken_in_zone;
            self(self, r + 1, capacity + count / option->per_layer, chunk_sum + count * chunk,
                 std::max(chunk_max, chunk), stages + count,
                 held + static_cast<long>(count) * option->most_layers);
            --taken_in_zone;
            partial.pop_back();
          }
        }
      };
  clock.reset();
  if (round_ == Round::seeds) return;
  phase_ = kPhaseTaskBound;
  PhaseClock bound_clock(phases_[kPhaseTaskBound]);
  walk(walk, 0, 0.0, 0.0, 0.0, 0, 0);
}

const sim::StageKernel& Searcher::kernel(const Setting& setting, std::size_t index,
                                         const Island& island, int tp, int ep) {
  return kernels_.get({index, tp, ep, setting.dp, setting.dtype, setting.micro_batch}, [&] {
    return sim::make_stage_kernel(cluster_, model_, setting.step, island, tp, setting.dp,
                                  kernel_options_, ep);
  });
}

// An option's two layer limits (OptionFit): the most layers a middle stage of a three-stage
// pipeline holds, and the most any of its stages can hold, wherever it sits.
void Searcher::fit_option(const Setting& setting, const sim::StageKernel& k, Option& option) const {
  const int v = setting.virtual_stages;
  // A middle stage of a three-stage pipeline: few micro-batches in flight.
  const double capacity = *k.memory_usable;
  option.layers_per_stage = most_fitting_layers(v, layers_, capacity, [&](int n) {
    return sim::slot_memory(model_, setting.step, k, n, 1, 3, setting.micro_batches).total();
  });
  // The least memory a stage can need: no embedding or head, the fewest micro-batches in
  // flight any pipeline of two or more stages has (the last stage's).
  models::StageShape least;
  least.tp = option.tp;
  least.dp = setting.dp;
  least.ep = option.ep;
  least.pipeline_stages = 2;
  least.stage_index = 1;
  least.virtual_stages = v;
  least.micro_batches = setting.micro_batches;
  least.micro_batch = setting.micro_batch;
  least.recompute = setting.recompute;
  least.recompute_layers = setting.recompute_layers;
  least.zero_stage = setting.zero_stage;
  least.layer_activations = &k.activations;
  option.most_layers = most_fitting_layers(v, layers_, capacity, [&](int n) {
    least.num_layers = n;
    return models::stage_memory(model_, setting.step.training, least).total();
  });
  // A stage with a mixture's dense layers holds at most that many more (removing them frees
  // memory), rounded up to whole chunks.
  if (model_.moe() && model_.dense_layers > 0 && option.most_layers > 0)
    option.most_layers += (std::min(model_.dense_layers, layers_) + v - 1) / v * v;
}

void Searcher::search_setting(const Setting& setting, const std::vector<IslandInfo>& islands,
                              std::vector<OptionFit>& fits) {
  std::optional<PhaseClock> clock(phases_[kPhaseKernels]);
  // Kernels for every eligible (island, tp) under this setting.
  std::vector<sim::StageKernel>& kernels = setting_kernels_;
  std::vector<Option>& options = setting_options_;
  kernels.clear();
  options.clear();
  if (round_ == Round::seeds) fits.clear();
  const int v = setting.virtual_stages;
  // A stage holds at least a whole layer per chunk, under partial recompute its recomputed ones.
  const int least_layers = v * std::max(1, setting.recompute_layers);
  std::size_t made_options = 0;  // fits' index: options made, kept or not
  for (std::size_t i = 0; i < islands.size(); ++i) {
    const IslandInfo& info = islands[i];
    if (!info.eligible) continue;
    for (int tp : info.tps) {
      if (model_.moe() && tp > 1 && !setting.step.training.sequence_parallel) {
        reject(kStructure, [&] {
          return "island " + info.island->name + ": tp " + std::to_string(tp) +
                 " with mixture-of-experts layers needs sequence parallelism "
                 "(Megatron-Core requires it); the workload has none";
        });
        continue;
      }
      for (int ep : expert_parallel_sizes(setting.dp)) {
        const int per_replica = tp * setting.dp;
        const int max_stages =
            std::min(info.island->free_chip_count() / per_replica, layers_ / least_layers);
        if (max_stages == 0) {
          // Too few chips for one stage is no candidate at all, unless busy nodes are the cause.
          if (info.island->chip_count() >= per_replica)
            reject(kGang, [&] {
              return "island " + info.island->name + ": " + std::to_string(per_replica) +
                     " chips for one stage, " + std::to_string(info.island->free_chip_count()) +
                     " free";
            });
          continue;
        }
        kernels.push_back(kernel(setting, i, *info.island, tp, ep));
        const sim::StageKernel& k = kernels.back();
        if (!k.problems.empty() || !k.has_rates) {
          reject(kUnknownFigures, [&] {
            return "island " + info.island->name + ": " +
                   (k.problems.empty() ? "no rates" : k.problems.front());
          });
          kernels.pop_back();
          continue;
        }
        Option option;
        option.island = static_cast<int>(i);
        option.tp = tp;
        option.ep = ep;
        // Under partial recompute each further layer keeps its activations: the recomputed ones
        // are a fixed part of every stage, left out of this lower figure.
        // A mixture's dense layers may be cheaper than its MoE ones: a stage's least time takes
        // the cheaper kind; the task-level bounds credit the dense layers apart.
        option.per_layer = k.layer_time_bound(sim::marginal_recompute(setting.step));
        option.least_time =
            setting.recompute_layers > 0
                ? v * setting.recompute_layers * k.least_layer_time(Recompute::full)
                : v * k.least_layer_time_bound(sim::marginal_recompute(setting.step));
        option.max_stages = max_stages;
        // The seeds pass made the same options of this setting in the same order.
        const std::size_t made = made_options++;
        if (round_ == Round::exact && made < fits.size()) {
          option.layers_per_stage = fits[made].layers_per_stage;
          option.most_layers = fits[made].most_layers;
        } else {
          fit_option(setting, k, option);
          if (round_ == Round::seeds) fits.push_back({option.layers_per_stage, option.most_layers});
        }
        // An option whose chips cannot hold a stage's least layers even where a stage needs the
        // least memory is in no plan, and trying it in every pipeline would only count its
        // refusals. Kept with a mixture's dense layers, which may fit where its MoE layers do not.
        if (option.most_layers < least_layers && !(model_.moe() && model_.dense_layers > 0)) {
          reject(kMemory, [&] {
            return "island " + info.island->name + " (tp " + std::to_string(tp) + ", dp " +
                   std::to_string(setting.dp) + "): no stage fits " + std::to_string(least_layers) +
                   " layer(s) on its chips";
          });
          kernels.pop_back();
          continue;
        }
        options.push_back(option);
      }
    }
  }
  // kernels must not move from here on: options point into it.
  for (std::size_t o = 0; o < options.size(); ++o) options[o].kernel = &kernels[o];
  if (cache_)
    cache_->reset(kernels);
  else
    cache_.emplace(kernels);

  // The first pass counts only what its seeds reject: the exact pass builds the same options
  // and counts what they refused.
  if (round_ == Round::seeds) {
    for (auto& pass : passes_) {
      pass.rejected = 0;
      pass.examples.clear();
    }
  }
  clock.emplace(phases_[kPhaseSingle]);
  phase_ = kPhaseSingle;
  // Each island alone (the exact pass's).
  const std::span<const Option> alone =
      round_ == Round::exact ? std::span<const Option>(options) : std::span<const Option>();
  for (const Option& option : alone) {
    for (int s = 1; s <= option.max_stages && !stop_; ++s) {
      if (v > 1 && s == 1) continue;  // nothing to interleave
      single_order_.assign(1, option.island);
      single_parts_.assign(1, {&option, s});
      evaluate(Mode::single_island, setting, single_order_, single_parts_);
    }
  }
  clock.reset();
  if (!stop_) search_task_level(setting, islands, options);
}

Plan Searcher::to_plan(const Found& found) const {
  const Setting& s = found.setting;
  Plan plan;
  // Unique among ranked plans: the islands in order with their tp, the stages, the dp.
  std::string name = found.mode == Mode::task_level ? "mix" : "solo";
  int previous = -1;
  for (const auto& stage : found.stages) {
    if (stage.island == previous) continue;
    previous = stage.island;
    name += "-" + cluster_.islands[static_cast<std::size_t>(stage.island)].name + "-tp" +
            std::to_string(stage.tp);
    if (stage.ep > 1) name += "-ep" + std::to_string(stage.ep);
  }
  name += "-pp" + std::to_string(found.stages.size()) + "-dp" + std::to_string(s.dp);
  plan.name = name;
  plan.micro_batch = s.micro_batch;
  plan.recompute = s.recompute;
  if (s.recompute_layers > 0) plan.recompute_layers = s.recompute_layers;
  plan.zero_stage = s.zero_stage;
  if (s.dtype != scenario_.workload.training.dtype) plan.dtype = s.dtype;
  plan.schedule = s.virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  plan.virtual_stages = s.virtual_stages;
  int first = 0;
  for (const auto& stage : found.stages) {
    PlanStage ps;
    ps.island = cluster_.islands[static_cast<std::size_t>(stage.island)].name;
    ps.first_layer = first;
    ps.num_layers = stage.layers;
    ps.tp = stage.tp;
    ps.dp = s.dp;
    ps.ep = stage.ep;
    first += stage.layers;
    plan.stages.push_back(std::move(ps));
  }
  return plan;
}

RankedPlan Searcher::rank(const Found& found, const std::vector<IslandInfo>& islands) const {
  RankedPlan out;
  out.mode = found.mode;
  out.plan = to_plan(found);
  out.estimate = sim::estimate_step(cluster_, scenario_.workload, out.plan, options_.estimate);
  out.tokens_per_s = out.estimate.tokens_per_s;
  out.chips = out.estimate.chips;
  out.search_step_s = found.step_s;
  std::set<std::string> stacks;
  for (const auto& stage : out.plan.stages) {
    if (out.islands.empty() || out.islands.back() != stage.island) out.islands.push_back(stage.island);
    stacks.insert(lower(cluster_.find_island(stage.island)->runtime.name));
  }
  out.software_stacks = static_cast<int>(stacks.size());
  const double money = rate(found.stages, found.setting.dp);
  if (money < kInf) {
    const TrainingSettings& t = scenario_.workload.training;
    out.cost_per_million_tokens =
        money * out.estimate.step_time_s / (static_cast<double>(t.global_batch) * t.seq_len) * 1e6;
  }
  if (found.setting.dtype != scenario_.workload.training.dtype) {
    std::string lacking;
    for (const auto& info : islands)
      if (!info.chip->supports(scenario_.workload.training.dtype))
        lacking += (lacking.empty() ? "" : ", ") + info.island->name;
    out.notes.push_back("trains in " + std::string(to_string(found.setting.dtype)) +
                        " with loss scaling instead of " +
                        std::string(to_string(scenario_.workload.training.dtype)) +
                        (lacking.empty() ? "" : " (lacking it: " + lacking + ")"));
  }
  return out;
}

void Searcher::poll() {
  if (!stop_ && options_.stop && options_.stop->stop_requested())
    shared_stop_.request("stopped on request");
  if (!stop_ && options_.max_seconds > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() >
          options_.max_seconds)
    shared_stop_.request("the time budget of " + seconds_text(options_.max_seconds) + " ran out");
  stop_ = shared_stop_.stop.load(std::memory_order_relaxed);
}

bool Searcher::search_one(const Searcher& global, const Setting& setting,
                          const std::vector<IslandInfo>& islands, std::vector<OptionFit>& fits) {
  started_ = global.started_;
  for (int i = 0; i < kPassCount; ++i) {
    passes_[i].rejected = 0;
    passes_[i].examples.clear();
    examples_full_[i] = global.passes_[i].examples.size() >= kExamplesPerPass;
  }
  for (auto& phase : phases_) {
    phase.evaluations = 0;
    phase.seconds = 0;
  }
  evaluations_ = 0;
  pruned_ = 0;
  best_by_shape_.clear();
  // The incumbents' scores bound this setting's search; only a strictly better plan replaces
  // them, and only such a plan is merged back.
  for (std::size_t i = 0; i < single_best_.size(); ++i) {
    single_best_[i] = Found{};
    single_best_[i].score = global.single_best_[i].score;
  }
  task_best_ = Found{};
  task_best_.score = global.task_best_.score;
  rank_bar_ = global.batch_bar_;
  poll();
  if (stop_) return false;
  search_setting(setting, islands, fits);
  return true;
}

double Searcher::ranking_bar() const {
  if (best_by_shape_.size() < options_.top || options_.top == 0) return kInf;
  std::vector<double>& scores = bar_scores_;
  scores.clear();
  for (const auto& [shape, found] : best_by_shape_) scores.push_back(found.score);
  std::nth_element(scores.begin(), scores.begin() + static_cast<long>(options_.top - 1),
                   scores.end());
  return scores[options_.top - 1];
}

void Searcher::merge_into(Searcher& global) const {
  for (int i = 0; i < kPassCount; ++i) {
    PassReport& into = global.passes_[i];
    into.rejected += passes_[i].rejected;
    for (const auto& example : passes_[i].examples) {
      if (into.examples.size() >= kExamplesPerPass) break;
      if (std::find(into.examples.begin(), into.examples.end(), example) == into.examples.end())
        into.examples.push_back(example);
    }
  }
  for (int i = 0; i < kPhaseCount; ++i) {
    global.phases_[i].evaluations += phases_[i].evaluations;
    global.phases_[i].seconds += phases_[i].seconds;
  }
  global.evaluations_ += evaluations_;
  global.pruned_ += pruned_;
  for (std::size_t i = 0; i < single_best_.size(); ++i)
    if (single_best_[i].score < global.single_best_[i].score)
      global.single_best_[i] = single_best_[i];
  if (task_best_.score < global.task_best_.score) global.task_best_ = task_best_;
  for (const auto& [shape, found] : best_by_shape_) {
    const auto known = global.best_by_shape_.find(shape);
    if (known == global.best_by_shape_.end())
      global.best_by_shape_.emplace(shape, found);
    else if (found.score < known->second.score)
      known->second = found;
  }
}

void Searcher::report_progress() const {
  if (options_.observer)
    options_.observer->on_progress(
        {kPhaseNames[phase_], settings_, settings_total_, evaluations_, pruned_});
}

SearchResult Searcher::run() {
  SearchResult result;
  result.objective = scenario_.objective;
  const TrainingSettings& training = scenario_.workload.training;

  std::vector<DType> dtypes{training.dtype};
  const auto base_islands = check_islands(training.dtype);
  if (training.dtype == DType::bf16) {
    for (const auto& info : base_islands) {
      if (!info.eligible && info.chip->supports(DType::fp16) && info.chip->peak(DType::fp16) &&
          !info.chip->supports(DType::bf16)) {
        dtypes.push_back(DType::fp16);
        break;
      }
    }
  }
  auto with = [](std::vector<int> values, int extra) {
    values.push_back(extra);
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  };
  const auto micro_batches = with(options_.micro_batches, training.micro_batch);
  const auto zero_stages = with(options_.zero_stages, training.zero_stage);
  // Recompute settings: each mode, and with full the partial counts (block method).
  std::vector<sim::StageRecompute> recomputes;
  for (Recompute mode : options_.recomputes) recomputes.push_back({mode, 0});
  if (std::find(options_.recomputes.begin(), options_.recomputes.end(), Recompute::full) !=
      options_.recomputes.end()) {
    for (int n : options_.recompute_layers) recomputes.push_back({Recompute::full, n});
  }
  const sim::StageRecompute own{training.recompute,
                                training.recompute == Recompute::full ? training.recompute_layers : 0};
  if (std::find(recomputes.begin(), recomputes.end(), own) == recomputes.end())
    recomputes.push_back(own);
  // A partial count that leaves no layer of a chunk unrecomputed is full recompute itself.
  auto partial_fits = [&](const sim::StageRecompute& r, int v) {
    return r.layers == 0 || r.layers * v < layers_;
  };

  std::vector<int> chunk_counts = options_.virtual_stages;
  if (chunk_counts.empty()) {
    for (int v = 1; v == 1 || v <= layers_ / 2; ++v)
      if (layers_ % v == 0) chunk_counts.push_back(v);
  }

  // Each dtype's islands and their largest free chip count, once for the count of settings
  // (the progress's total) and the search itself.
  std::vector<std::vector<IslandInfo>> islands_of;
  std::vector<int> most_chips;
  for (DType dtype : dtypes) {
    islands_of.push_back(dtype == training.dtype ? base_islands : check_islands(dtype));
    int most = 0;
    for (const auto& info : islands_of.back())
      if (info.eligible) most = std::max(most, info.island->free_chip_count());
    most_chips.push_back(most);
  }
  // How many settings the loops below will try (the same conditions).
  std::size_t recompute_chunks = 0;  // (recompute, chunk count) pairs searched
  for (const auto& r : recomputes)
    for (int v : chunk_counts) recompute_chunks += layers_ % v == 0 && partial_fits(r, v);
  for (std::size_t d = 0; d < dtypes.size(); ++d) {
    for (int mb : micro_batches) {
      if (training.global_batch % mb != 0) continue;
      const int samples = training.global_batch / mb;
      std::size_t dps = 0;
      for (int dp = 1; dp <= std::min(samples, most_chips[d]); ++dp) dps += samples % dp == 0;
      settings_total_ += recompute_chunks * zero_stages.size() * dps;
    }
  }
  poll();
  report_progress();

  // Every setting, in the order the search tries them.
  struct Work {
    Setting setting;
    const std::vector<IslandInfo>* islands = nullptr;
    std::vector<OptionFit> fits;  // the seeds pass's, for the exact pass
  };
  std::vector<Work> work;
  for (std::size_t d = 0; d < dtypes.size(); ++d) {
    const DType dtype = dtypes[d];
    const int max_chips = most_chips[d];
    for (int mb : micro_batches) {
      if (training.global_batch % mb != 0) {
        reject(kStructure, "micro-batch " + std::to_string(mb) + " does not divide the global batch");
        continue;
      }
      const int samples = training.global_batch / mb;
      for (const sim::StageRecompute& recompute : recomputes) {
        for (int zero : zero_stages) {
          for (int v : chunk_counts) {
            if (layers_ % v != 0 || !partial_fits(recompute, v)) continue;
            for (int dp = 1; dp <= std::min(samples, max_chips); ++dp) {
              if (samples % dp != 0) continue;
              Work& w = work.emplace_back();
              w.islands = &islands_of[d];
              Setting& setting = w.setting;
              setting.dtype = dtype;
              setting.micro_batch = mb;
              setting.recompute = recompute.mode;
              setting.recompute_layers = recompute.layers;
              setting.zero_stage = zero;
              setting.virtual_stages = v;
              setting.dp = dp;
              setting.micro_batches = samples / dp;
              setting.step.training = training;
              setting.step.training.dtype = dtype;
              setting.step.training.recompute = recompute.mode;
              setting.step.training.recompute_layers = recompute.layers;
              setting.step.training.zero_stage = zero;
              setting.step.micro_batch = mb;
              setting.step.virtual_stages = v;
            }
          }
        }
      }
    }
  }

  // Batch sizes do not depend on the thread count, so neither does anything the search finds.
  constexpr std::size_t kBatch = 8;
  const std::size_t threads = std::max<std::size_t>(
      1, options_.threads > 0 ? options_.threads : std::thread::hardware_concurrency());
  // One lane per place in a batch, reused batch after batch (they keep their buffers).
  std::vector<std::unique_ptr<Searcher>> lanes(kBatch);
  std::vector<char> searched(kBatch);
  BatchPool helpers(std::min(threads, kBatch) - 1);
  // One pass over the settings: batches of `size`, doubling up to kBatch, each setting of a
  // batch against the incumbents and the ranking's bar as they stood before the batch, merged
  // in setting order.
  auto run_pass = [&](Round round, std::size_t size) {
    for (std::size_t first = 0; first < work.size() && !stop_;
         first += size, size = std::min(size * 2, kBatch)) {
      const std::size_t count = std::min(size, work.size() - first);
      for (std::size_t k = 0; k < count; ++k) {
        if (!lanes[k])
          lanes[k] = std::make_unique<Searcher>(scenario_, options_, shared_stop_, kernels_);
        lanes[k]->round_ = round;
      }
      batch_bar_ = ranking_bar();
      // The threads take the batch's settings one at a time; which thread searches which does
      // not matter, each lane's result depends only on its setting and the incumbents.
      helpers.run(count, [&](std::size_t k) {
        Work& w = work[first + k];
        searched[k] = lanes[k]->search_one(*this, w.setting, *w.islands, w.fits);
      });
      for (std::size_t k = 0; k < count; ++k) {
        if (!searched[k]) continue;
        lanes[k]->merge_into(*this);
        if (round == Round::seeds) continue;
        ++settings_;
        phase_ = lanes[k]->phase_;
        report_progress();
      }
      poll();
    }
  };
  // First every setting's seeds, so that the exact pass's first settings prune against good
  // plans rather than against none; then the exact pass, its first batches small so that its
  // own finds reach the bar soon.
  run_pass(Round::seeds, kBatch);
  run_pass(Round::exact, 1);
  lanes.clear();

  std::optional<PhaseClock> ranking_clock(phases_[kPhaseRanking]);
  phase_ = kPhaseRanking;
  // Baselines, the pool, the best task-level plan and the ranking, priced by the estimator
  // exactly as `hetplan eval` would.
  for (std::size_t i = 0; i < cluster_.islands.size(); ++i) {
    IslandBaseline baseline;
    baseline.island = cluster_.islands[i].name;
    if (single_best_[i].score < kInf) {
      baseline.best = rank(single_best_[i], base_islands);
    } else if (!base_islands[i].eligible) {
      baseline.why_not = base_islands[i].why_not;
    } else {
      baseline.why_not = "no plan on its " + std::to_string(cluster_.islands[i].free_chip_count()) +
                         " free chips fits the model in memory";
    }
    result.islands.push_back(std::move(baseline));
  }
  if (task_best_.score < kInf) result.task_level = rank(task_best_, base_islands);

  std::vector<RankedPlan> jobs;
  for (const auto& baseline : result.islands)
    if (baseline.best) jobs.push_back(*baseline.best);
  if (jobs.size() >= 2) {
    RankedPlan pool;
    pool.mode = Mode::resource_pool;
    double money = 0;
    bool priced = true;
    std::set<std::string> stacks;
    for (const auto& job : jobs) {
      pool.tokens_per_s += job.tokens_per_s;
      pool.chips += job.chips;
      pool.islands.push_back(job.islands.front());
      stacks.insert(lower(cluster_.find_island(job.islands.front())->runtime.name));
      if (job.cost_per_million_tokens)
        money += *job.cost_per_million_tokens * job.tokens_per_s / 1e6;
      else
        priced = false;
    }
    pool.software_stacks = static_cast<int>(stacks.size());
    if (priced && scenario_.prices) {
      // Each job already pays for its own stack; the pool keeps them all.
      pool.cost_per_million_tokens = money / pool.tokens_per_s * 1e6;
    }
    pool.notes.push_back(std::to_string(jobs.size()) +
                         " separate jobs, one per island; no traffic between islands");
    pool.jobs = std::move(jobs);
    result.resource_pool = std::move(pool);
  }

  if (!cluster_.gradient_paths.empty()) {
    // Each island's layouts for a replica group: its best plan alone of each shape, best first.
    std::vector<std::vector<const Found*>> found(cluster_.islands.size());
    for (const auto& [shape, plan] : best_by_shape_)
      if (shape.mode == Mode::single_island && shape.islands.size() == 1)
        found[static_cast<std::size_t>(shape.islands.front())].push_back(&plan);
    // Replicas that exchange gradients share one dtype: each layout also in every dtype another
    // island's layouts train in (the line says so where its chip cannot), right after it.
    std::set<DType> group_dtypes;
    for (const auto& list : found)
      for (const Found* f : list) group_dtypes.insert(f->setting.dtype);
    std::vector<std::vector<Plan>> layouts(cluster_.islands.size());
    for (std::size_t i = 0; i < found.size(); ++i) {
      std::stable_sort(found[i].begin(), found[i].end(),
                       [](const Found* a, const Found* b) { return a->score < b->score; });
      if (found[i].size() > kGroupLayoutsForPairs) found[i].resize(kGroupLayoutsForPairs);
      for (const Found* f : found[i]) {
        const Plan plan = to_plan(*f);
        layouts[i].push_back(plan);
        for (DType dtype : group_dtypes) {
          if (dtype == f->setting.dtype) continue;
          layouts[i].push_back(plan);
          layouts[i].back().dtype = dtype;
        }
      }
    }
    add_mixed_data_parallel(scenario_, options_, layouts, group_dtypes.size(), result);
  }

  // The ranking: the best plan of each shape, the best of each mode even when it falls outside
  // the top, and the pool, ordered by the objective.
  std::vector<const Found*> shapes;
  for (const auto& [shape, found] : best_by_shape_) shapes.push_back(&found);
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const Found* a, const Found* b) { return a->score < b->score; });
  if (shapes.size() > options_.top) shapes.resize(options_.top);
  const Found* single = nullptr;
  for (const auto& found : single_best_)
    if (found.score < kInf && (!single || found.score < single->score)) single = &found;
  const Found* task = task_best_.score < kInf ? &task_best_ : nullptr;
  for (const Found* forced : {single, task}) {
    if (!forced) continue;
    const bool listed = std::any_of(shapes.begin(), shapes.end(), [&](const Found* f) {
      return f->mode == forced->mode && f->score <= forced->score;
    });
    if (!listed) shapes.push_back(forced);
  }
  for (const Found* found : shapes) result.ranked.push_back(rank(*found, base_islands));
  if (result.resource_pool) result.ranked.push_back(*result.resource_pool);
  const bool by_cost = scenario_.objective == Objective::cost;
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [by_cost](const RankedPlan& a, const RankedPlan& b) {
                     if (by_cost) {
                       const double x = a.cost_per_million_tokens.value_or(kInf);
                       const double y = b.cost_per_million_tokens.value_or(kInf);
                       if (x != y) return x < y;
                     }
                     return a.tokens_per_s > b.tokens_per_s;
                   });

  ranking_clock.reset();
  for (const auto& pass : passes_) result.passes.push_back(pass);
  for (const auto& phase : phases_) result.phases.push_back(phase);
  result.evaluations = evaluations_;
  result.pruned = pruned_;
  result.settings = settings_;
  result.settings_total = settings_total_;
  result.max_pipeline_islands = std::max(0, options_.max_pipeline_islands);
  {
    const std::lock_guard<std::mutex> lock(shared_stop_.mutex);
    result.stopped = shared_stop_.why;
  }
  report_progress();
  return result;
}

}  // namespace

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::single_island:
      return "single-island";
    case Mode::resource_pool:
      return "resource-pool";
    case Mode::task_level:
      return "task-level";
  }
  return "?";
}

const RankedPlan* best_job(const SearchResult& result) {
  for (const auto& ranked : result.ranked)
    if (ranked.mode != Mode::resource_pool) return &ranked;
  return nullptr;
}

std::vector<std::size_t> runnable_jobs(const SearchResult& result, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < result.ranked.size() && out.size() < count; ++k) {
    const RankedPlan& ranked = result.ranked[k];
    if (ranked.mode != Mode::resource_pool && ranked.estimate.feasible) out.push_back(k);
  }
  return out;
}

SearchResult search_plans(const Scenario& scenario, const SearchOptions& options) {
  StopState stop;
  KernelStore kernels;
  return Searcher(scenario, options, stop, kernels).run();
}

}  // namespace hetplan::planner
