#include "validation/published_runs.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/sha256.hpp"
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "sim/estimator.hpp"
#include "sim/twin_input.hpp"

namespace hetplan::validation {
namespace {

// One case with `common` (and the file's `hardware`) merged in, as plain values. Every field
// is read as the folder's README defines it; nothing is inferred from other fields or notes.
struct CaseConfig {
  std::string id;
  std::optional<bool> gpt;  // model.arch: gpt (true) or llama (false)
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, vocab = 0, seq_len = 0;
  int ffn = 0;                  // intermediate size
  bool ffn_four_hidden = false;  // written as "4h"
  // Mixtures of experts (hetplan's extension of the README's fields, docs/validation.md#moe).
  int experts = 0, experts_per_token = 0, expert_ffn = 0, shared_experts = 0,
      shared_expert_ffn = 0;
  int ep = 1;
  int etp = 0;        // expert tensor parallelism (0: as tp)
  int head_size = 0;  // a head's width apart from hidden / heads (Qwen3)
  bool qk_norm = false, qkv_bias = false;
  // Multi-head latent attention (DeepSeek-V2/V3), a mixture's dense first layers, grouped
  // routing and its bias, multi-token prediction: named as ModelShape names them.
  int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  int dense_layers = 0, expert_groups = 1, expert_groups_per_token = 1, mtp_layers = 0;
  bool expert_bias = false;
  std::optional<formats::Field> moe_only;  // the first expert-only key given, for its error
  std::optional<formats::Field> gshard_field;  // training.moe_dispatcher: gshard, for its error
  // parallel.chunk_layers: each stage's model chunks' layers (a layout of unequal chunks).
  std::vector<std::vector<int>> chunk_layers;
  std::optional<formats::Field> chunk_layers_field;
  int global_batch = 0, micro_batch = 1;
  std::optional<DType> dtype;
  Recompute recompute = Recompute::none;
  // training.recompute_modules (with selective): Megatron-Core's --recompute-modules.
  std::optional<unsigned> recompute_modules;
  std::optional<formats::Field> recompute_modules_field;
  // training.unfused: the operators the run's framework left unfused (read against the model
  // once the case's model is known).
  std::optional<formats::Field> unfused_field;
  std::optional<bool> flash_attention;
  int zero = 0;
  bool overlap_grad_reduce = false, overlap_param_gather = false, overlap_tp_comm = false,
       overlap_ep_comm = false;
  // Megatron-Core's --moe-router-force-load-balancing (benchmarks' balanced gate): every expert
  // gets the mean load; otherwise the workload's imbalance prior applies.
  bool moe_force_balance = false;
  // Where gradients accumulate and are reduced (training.grad_accumulation: fp32 or same as the
  // training dtype); Megatron-LM's default unless said.
  std::optional<bool> fp32_grad_accumulation;
  // The token dispatcher (training.moe_dispatcher): Megatron-Core's all-to-all one unless said.
  std::optional<MoeDispatcher> moe_dispatcher;
  // How the loss is computed (training.cross_entropy_fusion); Megatron-LM's default unless said.
  std::optional<CrossEntropyFusion> cross_entropy_fusion;
  // Experts padded to a capacity (training.moe_capacity_factor); dropless unless said.
  double moe_capacity_factor = 0;
  int tp = 1, pp = 1, dp = 1, vpp = 1;
  bool sp = false;
  int chips = 0;
  std::string chip, intra_node, network;
  std::optional<SourceLocation> chip_location;  // where `hardware.chip` was given
  int chips_per_node = 0;
  SourceLocation location;  // the case's
  std::optional<formats::Field> measured;
};

int integer(const formats::Field& field) {
  return static_cast<int>(field.as_int(1, 1 << 30));
}

void read_hardware(const formats::Field& field, CaseConfig& c) {
  formats::MapReader map(field);
  if (auto v = map.optional("chip")) {
    c.chip = v->as_string();
    c.chip_location = v->location();
  }
  if (auto v = map.optional("chips_per_node")) c.chips_per_node = integer(*v);
  if (auto v = map.optional("intra_node")) c.intra_node = v->as_string();
  if (auto v = map.optional("network")) c.network = v->as_string();
  map.done();
}

// Reads the configuration keys of `common` or of one case into `c` (later sections override
// earlier ones key by key). Unknown keys are errors.
void read_section(formats::MapReader& section, CaseConfig& c) {
  if (auto model = section.optional("model")) {
    formats::MapReader map(*model);
    if (auto v = map.optional("arch")) c.gpt = v->as_choice({"gpt", "llama"}) == 0;
    if (auto v = map.optional("layers")) c.layers = integer(*v);
    if (auto v = map.optional("hidden")) c.hidden = integer(*v);
    if (auto v = map.optional("heads")) c.heads = integer(*v);
    if (auto v = map.optional("kv_heads")) c.kv_heads = integer(*v);
    if (auto v = map.optional("vocab")) c.vocab = integer(*v);
    if (auto v = map.optional("seq_len")) c.seq_len = integer(*v);
    if (auto v = map.optional("ffn")) {
      c.ffn_four_hidden = v->is_scalar() && v->node().Scalar() == "4h";
      if (!c.ffn_four_hidden) {
        if (!v->is_scalar() || v->node().Scalar().find_first_not_of("0123456789") != std::string::npos)
          v->fail_expected("an integer or 4h");
        c.ffn = integer(*v);
      }
    }
    if (auto v = map.optional("experts")) c.experts = static_cast<int>(v->as_int(0, 1 << 20));
    if (auto v = map.optional("experts_per_token")) c.experts_per_token = integer(*v);
    if (auto v = map.optional("expert_ffn")) c.expert_ffn = integer(*v);
    if (auto v = map.optional("shared_experts"))
      c.shared_experts = static_cast<int>(v->as_int(0, 1 << 20));
    if (auto v = map.optional("shared_expert_ffn"))
      c.shared_expert_ffn = static_cast<int>(v->as_int(0, 1 << 30));
    if (auto v = map.optional("head_size")) c.head_size = integer(*v);
    if (auto v = map.optional("qk_norm")) c.qk_norm = v->as_bool();
    if (auto v = map.optional("qkv_bias")) c.qkv_bias = v->as_bool();
    if (auto v = map.optional("q_lora_rank"))
      c.q_lora_rank = static_cast<int>(v->as_int(0, 1 << 20));
    if (auto v = map.optional("kv_lora_rank")) c.kv_lora_rank = integer(*v);
    if (auto v = map.optional("qk_nope_head_dim")) c.qk_nope_head_dim = integer(*v);
    if (auto v = map.optional("qk_rope_head_dim")) c.qk_rope_head_dim = integer(*v);
    if (auto v = map.optional("v_head_dim")) c.v_head_dim = integer(*v);
    if (auto v = map.optional("mtp_layers")) c.mtp_layers = static_cast<int>(v->as_int(0, 64));
    auto moe_key = [&](const formats::Field& field) {
      if (!c.moe_only) c.moe_only = field;
    };
    if (auto v = map.optional("dense_layers")) {
      c.dense_layers = static_cast<int>(v->as_int(0, 100000));
      moe_key(*v);
    }
    if (auto v = map.optional("expert_groups")) {
      c.expert_groups = integer(*v);
      moe_key(*v);
    }
    if (auto v = map.optional("expert_groups_per_token")) {
      c.expert_groups_per_token = integer(*v);
      moe_key(*v);
    }
    if (auto v = map.optional("expert_bias")) {
      c.expert_bias = v->as_bool();
      moe_key(*v);
    }
    map.done();
  }
  if (auto training = section.optional("training")) {
    formats::MapReader map(*training);
    if (auto v = map.optional("global_batch")) c.global_batch = integer(*v);
    if (auto v = map.optional("micro_batch")) c.micro_batch = integer(*v);
    if (auto v = map.optional("dtype")) {
      static constexpr DType kDTypes[] = {DType::fp32, DType::fp16, DType::bf16, DType::fp8};
      c.dtype = kDTypes[v->as_choice({"fp32", "fp16", "bf16", "fp8"})];
    }
    if (auto v = map.optional("recompute"))
      c.recompute = static_cast<Recompute>(v->as_choice({"none", "selective", "full"}));
    if (auto v = map.optional("recompute_modules")) {
      c.recompute_modules = formats::read_recompute_modules(*v);
      c.recompute_modules_field = *v;
    }
    if (auto v = map.optional("unfused")) c.unfused_field = *v;
    if (auto v = map.optional("flash_attention")) c.flash_attention = v->as_bool();
    if (auto v = map.optional("zero")) c.zero = static_cast<int>(v->as_int(0, 3));
    if (auto v = map.optional("grad_accumulation"))
      c.fp32_grad_accumulation = v->as_choice({"fp32", "same"}) == 0;
    if (auto overlap = map.optional("overlap")) {
      formats::MapReader o(*overlap);
      if (auto v = o.optional("grad_reduce")) c.overlap_grad_reduce = v->as_bool();
      if (auto v = o.optional("param_gather")) c.overlap_param_gather = v->as_bool();
      if (auto v = o.optional("tp_comm")) c.overlap_tp_comm = v->as_bool();
      if (auto v = o.optional("ep_comm")) c.overlap_ep_comm = v->as_bool();
      o.done();
    }
    if (auto v = map.optional("moe_force_balance")) c.moe_force_balance = v->as_bool();
    if (auto v = map.optional("moe_dispatcher")) {
      static constexpr MoeDispatcher kDispatchers[] = {MoeDispatcher::all_to_all,
                                                       MoeDispatcher::flex, MoeDispatcher::gshard};
      c.moe_dispatcher = kDispatchers[v->as_choice({"alltoall", "flex", "gshard"})];
      if (c.moe_dispatcher == MoeDispatcher::gshard) c.gshard_field = *v;
    }
    if (auto v = map.optional("cross_entropy_fusion"))
      c.cross_entropy_fusion = formats::read_cross_entropy_fusion(*v);
    if (auto v = map.optional("moe_capacity_factor")) {
      c.moe_capacity_factor = v->as_number(0.01, 64.0);
      if (!c.moe_only) c.moe_only = *v;
    }
    map.done();
  }
  if (auto parallel = section.optional("parallel")) {
    formats::MapReader map(*parallel);
    if (auto v = map.optional("tp")) c.tp = integer(*v);
    if (auto v = map.optional("pp")) c.pp = integer(*v);
    if (auto v = map.optional("dp")) c.dp = integer(*v);
    if (auto v = map.optional("vpp")) c.vpp = integer(*v);
    if (auto v = map.optional("ep")) c.ep = integer(*v);
    if (auto v = map.optional("etp")) c.etp = integer(*v);
    if (auto v = map.optional("sp")) c.sp = v->as_bool();
    if (auto v = map.optional("chunk_layers")) {
      c.chunk_layers.clear();
      for (const formats::Field& stage : v->elements()) {
        std::vector<int>& chunks = c.chunk_layers.emplace_back();
        for (const formats::Field& count : stage.elements())
          chunks.push_back(static_cast<int>(count.as_int(0, 100000)));
      }
      c.chunk_layers_field = *v;
    }
    map.done();
  }
  if (auto hardware = section.optional("hardware")) read_hardware(*hardware, c);
  section.optional("notes");  // free text for the reader
}

// The case's configuration is complete: every field the estimator needs was given.
void check_complete(const formats::Field& node, const CaseConfig& c) {
  const auto missing = [&](const std::string& what) {
    throw InputError(node.location(), node.path() + "." + what,
                     "missing required key (in the case or in common)");
  };
  if (!c.gpt) missing("model.arch");
  if (c.layers == 0) missing("model.layers");
  if (c.hidden == 0) missing("model.hidden");
  if (c.heads == 0) missing("model.heads");
  if (c.vocab == 0) missing("model.vocab");
  if (c.seq_len == 0) missing("model.seq_len");
  if (c.ffn == 0 && !c.ffn_four_hidden) missing("model.ffn");
  if (c.global_batch == 0) missing("training.global_batch");
  if (!c.dtype) missing("training.dtype");
  if (!c.flash_attention) missing("training.flash_attention");
  if (c.chip.empty()) missing("hardware.chip");
  if (!c.measured) missing("measured");
  if (c.experts > 0) {
    if (c.experts_per_token == 0) missing("model.experts_per_token");
    if (c.expert_ffn == 0) missing("model.expert_ffn");
  } else if (c.moe_force_balance) {
    throw InputError(node.location(), node.path() + ".training.moe_force_balance",
                     "expected only with model.experts (it balances a mixture's experts)");
  } else if (c.moe_dispatcher) {
    throw InputError(node.location(), node.path() + ".training.moe_dispatcher",
                     "expected only with model.experts (it dispatches a mixture's tokens)");
  } else if (c.moe_only) {
    c.moe_only->fail_expected("only with model.experts (a mixture's key)");
  }
  if (c.gshard_field && c.moe_capacity_factor <= 0) {
    c.gshard_field->fail(
        "expected training.moe_capacity_factor beside gshard (its dispatch masks give every "
        "expert a capacity)");
  }
  if (c.recompute_modules_field && c.recompute != Recompute::selective)
    c.recompute_modules_field->fail("expected training.recompute: selective beside it");
  const bool latent = c.q_lora_rank > 0 || c.kv_lora_rank > 0 || c.qk_nope_head_dim > 0 ||
                      c.qk_rope_head_dim > 0 || c.v_head_dim > 0;
  if (latent) {
    if (c.kv_lora_rank == 0) missing("model.kv_lora_rank");
    if (c.qk_nope_head_dim == 0) missing("model.qk_nope_head_dim");
    if (c.qk_rope_head_dim == 0) missing("model.qk_rope_head_dim");
    if (c.v_head_dim == 0) missing("model.v_head_dim");
  }
  if (c.chunk_layers_field) {
    bool shaped = c.vpp > 1 && c.chunk_layers.size() == static_cast<std::size_t>(c.pp);
    for (const auto& stage : c.chunk_layers)
      shaped &= stage.size() == static_cast<std::size_t>(c.vpp);
    if (!shaped) {
      c.chunk_layers_field->fail_expected(
          "one list per pipeline stage (pp " + std::to_string(c.pp) + "), each of vpp (" +
          std::to_string(c.vpp) + ", at least 2) model chunks' layers");
    }
  }
}

// Figures in free text, read by hand rather than with std::regex, whose matcher recurses once
// per character and overflows the stack on long input.

// The number at text[i] (digits, optionally a fraction) if one starts there and is not the tail
// of a longer one: its value and the index after it. Longer than nine digits is no figure.
std::optional<std::pair<double, std::size_t>> number_at(const std::string& text, std::size_t i) {
  auto digit = [&](std::size_t k) {
    return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])) != 0;
  };
  if (!digit(i) || (i > 0 && (digit(i - 1) || text[i - 1] == '.'))) return std::nullopt;
  std::size_t end = i;
  while (digit(end)) ++end;
  if (end < text.size() && text[end] == '.' && digit(end + 1)) {
    ++end;
    while (digit(end)) ++end;
  }
  if (end - i > 9) return std::nullopt;
  return std::make_pair(std::stod(text.substr(i, end - i)), end);
}

std::size_t skip_spaces(const std::string& text, std::size_t i) {
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
  return i;
}

bool word_at(const std::string& text, std::size_t i, std::string_view word) {
  return text.compare(i, word.size(), word) == 0;
}

// The first figure followed by `unit` (after optional spaces), e.g. "400 GB/s".
std::optional<double> figure_before(const std::string& text, std::string_view unit) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto number = number_at(text, i);
    if (number && word_at(text, skip_spaces(text, number->second), unit)) return number->first;
  }
  return std::nullopt;
}

// The chip profile a published hardware description names, and what the description says of
// its part that differs from the profile (docs/validation.md#hardware). The A800 has its own
// profile (the A100 die with NVLink cut to 400 GB/s, bidirectional); parts of one die otherwise
// share one: the H800 is the H100 with the A800's NVLink, the 40 GB A100 and A800 have other
// HBM; the Atlas servers name their Ascend chips.
// Parts whose clocks or links the bundled profiles do not describe (PCIe cards, H100 NVL,
// H20, H200) are refused rather than predicted with another part's numbers. A 910C is read as
// its dies, which is what a case's ranks are.
struct HardwareMatch {
  std::string profile;  // empty: refused, `refused` says why
  std::string refused;
  std::optional<double> intra_node_bandwidth;  // one direction, B/s
  std::optional<double> memory_capacity, memory_usable, memory_bandwidth;
};

bool has(const std::string& upper, const char* word) {
  return upper.find(word) != std::string::npos;
}

HardwareMatch match_hardware(const CaseConfig& c) {
  std::string chip = c.chip;
  for (char& ch : chip) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  constexpr double kGiB = 1ull << 30;
  HardwareMatch match;
  const bool pcie = has(chip, "PCIE");
  // The H800's NVLink: 400 GB/s both ways together, as the A800's (whose profile has it;
  // docs/validation.md#hardware).
  const bool h800 = has(chip, "H800");
  if (has(chip, "A100") || has(chip, "A800")) {
    if (pcie) {
      match.refused =
          "an A100 or A800 SXM4 part, the bundled profile's (a PCIe card has other "
          "clocks, power and links)";
      return match;
    }
    match.profile = has(chip, "A800") ? "nvidia-a800-sxm4-80gb" : "nvidia-a100-sxm4-80gb";
    bool forty = false;  // "40GB", "40 GB", "40GiB", "40G"
    for (std::size_t i = 0; i < chip.size() && !forty; ++i) {
      const auto number = number_at(chip, i);
      forty =
          number && number->first == 40 && word_at(chip, skip_spaces(chip, number->second), "G");
    }
    if (forty) {
      // The 40 GB part: 40 GiB of HBM2 at 1,555 GB/s (A100 datasheet), of which FlagPerf
      // measured 39.18 GiB allocatable on a DGX A100 (the profile's flagperf-capacity source).
      match.memory_capacity = 40 * kGiB;
      match.memory_usable = 39.18 * kGiB;
      match.memory_bandwidth = 1555e9;
    }
  } else if (has(chip, "H100") || has(chip, "H800")) {
    if (pcie || has(chip, "NVL")) {
      match.refused =
          "an H100 or H800 SXM5 part, the bundled profile's (PCIe and NVL cards have "
          "other clocks, memory and links)";
      return match;
    }
    match.profile = "nvidia-h100-sxm5-80gb";
  } else if (has(chip, "910B4")) {
    match.refused =
        "a 910B part with a bundled profile (the 910B4's tier and its 32 GiB are not "
        "established; 910B3: ascend-910b-313t, other 910B: ascend-910b)";
    return match;
  } else if (has(chip, "910B3")) {
    match.profile = "ascend-910b-313t";  // 20 AI cores: the 313T class (docs/profiles-sources.md)
  } else if (has(chip, "910B") || has(chip, "ATLAS 800T A2") || has(chip, "ATLAS 900 A2")) {
    match.profile = "ascend-910b";
  } else if (has(chip, "910C") || has(chip, "ATLAS 900 A3") || has(chip, "ATLAS 800 A3") ||
             has(chip, "910_93")) {
    // One die: a case's chips are its ranks (tp x pp x dp), and each rank of an A3 node is a
    // die, two to a package (docs/profiles-sources.md#ascend-910c).
    match.profile = "ascend-910c";
  } else if (has(chip, "910")) {
    match.profile = "ascend-910";  // 910A, 910 ProA/ProB: the first generation
  } else {
    match.refused =
        "a chip hetplan has a profile for (A100, A800, H100, H800, Ascend 910, 910B or "
        "910C)";
    return match;
  }
  if (h800) match.intra_node_bandwidth = 400e9 / 2;
  // A stated chip-to-chip figure ("NVLink 400 GB/s", "600 GB/s per GPU") is the bidirectional
  // bandwidth per chip; the profile's intra-node bandwidth is one direction.
  std::optional<double> stated = figure_before(c.intra_node, "GB/s");
  if (!stated && has(chip, "NVLINK")) stated = figure_before(c.chip, "GB/s");
  if (stated && *stated > 0) match.intra_node_bandwidth = *stated * 1e9 / 2;
  return match;
}

// "8x 200 Gb/s HDR InfiniBand per node" -> 8 NICs of 200 Gb/s. The count may be written with
// x, X, * or the multiplication sign, the rate as Gb/s, Gbps, Gbit/s, GbE or a bare G ("8x400G
// RoCE"); bytes (GB/s) are not a network rate and are not read.
// A network rate at text[i]: a figure, then G with b/s, bps, bit/s, bE, b or nothing, not
// followed by a letter or a slash. Its Gb/s and the index after it.
std::optional<std::pair<double, std::size_t>> rate_at(const std::string& text, std::size_t i) {
  const auto number = number_at(text, i);
  if (!number) return std::nullopt;
  std::size_t end = skip_spaces(text, number->second);
  if (!word_at(text, end, "G")) return std::nullopt;
  ++end;
  for (std::string_view unit : {"b/s", "bps", "bit/s", "bE", "b"}) {
    if (word_at(text, end, unit)) {
      end += unit.size();
      break;
    }
  }
  if (end < text.size() &&
      (std::isalpha(static_cast<unsigned char>(text[end])) != 0 || text[end] == '/'))
    return std::nullopt;
  return std::make_pair(number->first, end);
}

void parse_network(const std::string& text, Island& island) {
  std::optional<double> speed_only;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto count = number_at(text, i);
    if (!count) continue;
    std::size_t at = skip_spaces(text, count->second);
    bool times = false;
    for (std::string_view sign : {"x", "X", "*", "\u00d7"}) {
      if (word_at(text, at, sign)) {
        at += sign.size();
        times = true;
        break;
      }
    }
    const bool whole =
        count->first >= 1 && count->first <= 1024 && count->first == static_cast<int>(count->first);
    if (times && whole) {
      if (const auto rate = rate_at(text, skip_spaces(text, at)); rate && rate->first > 0) {
        island.nic_count = static_cast<int>(count->first);
        island.nic_speed = rate->first * 1e9 / 8;
        return;
      }
    }
    if (!speed_only) {
      if (const auto rate = rate_at(text, i); rate && rate->first > 0) speed_only = rate->first;
    }
  }
  if (speed_only) {
    island.nic_count = 1;
    island.nic_speed = *speed_only * 1e9 / 8;
  }
}

constexpr double kFlopsPerTflop = 1e12;

// `count_recompute`: the forward pass counted once more under full recompute, as Megatron's
// reported TFLOP/s do; off for model FLOPs (utilisation).
double megatron_flops(const CaseConfig& c, bool count_recompute = true) {
  // Megatron-LM's reported FLOPs per iteration: Narayanan et al. 2021, eq. 3, for a GPT layer
  // (the forward pass counted once more under full recompute, the logits three times), in the
  // general form of Megatron-LM's num_floating_point_operations (megatron/training/training.py),
  // which counts grouped-query attention's narrower key/value projections, a head width apart
  // from hidden / heads, a gated MLP's third matrix (x 3/2) and the routed and shared experts
  // a token passes through. For a GPT layer (ffn 4h, no grouping) both are
  // `passes 24 b s l h^2 (1 + s / 6h) + 6 b s h V`.
  const double b = c.global_batch, s = c.seq_len, l = c.layers, h = c.hidden, v = c.vocab;
  const double heads = c.heads;
  const double kv = c.kv_heads > 0 ? c.kv_heads : heads;
  const double head_width = c.head_size > 0 ? c.head_size : h / heads;
  const double query_ratio = heads * head_width / h;
  const double gated = *c.gpt ? 1.0 : 1.5;
  const double ffn = c.ffn_four_hidden ? 4.0 * h : c.ffn;
  const double mlp = c.experts > 0 ? static_cast<double>(c.experts_per_token) * c.expert_ffn +
                                         static_cast<double>(c.shared_experts) * c.shared_expert_ffn
                                   : ffn;
  const double per_pass = 4.0 * b * s * l * h * h;
  const double layers = (1.0 + kv / heads + s / h) * query_ratio + mlp / h * gated;
  const double passes = count_recompute && c.recompute == Recompute::full ? 4.0 : 3.0;
  return passes * per_pass * layers + 3.0 * per_pass * v / (2.0 * l * h);
}

// The metrics a case's `measured` may give (the README: "the published figure, in the unit
// named by its key"), the one predicted first: a step time, then a throughput, then FLOP/s,
// then the model FLOPs utilisation. Each is predicted from the step time.
constexpr const char* kMetrics[] = {"step_time_s",  "step_time_ms",  "tokens_per_s_per_chip",
                                    "tokens_per_s", "samples_per_s", "tflops_per_chip",
                                    "mfu"};

// What `measured` must give: the metrics above, or out_of_memory.
std::string metrics_expected() {
  std::string text;
  for (const char* metric : kMetrics) text += std::string(metric) + ", ";
  text.replace(text.size() - 2, 2, " or out_of_memory: true");
  return text;
}

// A case's metric from a predicted step time, as the source reports it: the step time (in
// seconds or milliseconds), tokens/s per chip or for the whole job, sequences/s for the whole
// job, TFLOP/s per chip by Megatron's formula, or the model FLOPs utilisation (the same
// formula, recompute not counted, over the chips' dense peak in the training dtype, BF16 under
// the fp8 recipe: `peak_flops`). The estimator's and the twin's step times both go through here.
double metric_from_step(const CaseConfig& c, const std::string& metric, double step_time_s,
                        double peak_flops) {
  if (metric == "step_time_s") return step_time_s;
  if (metric == "step_time_ms") return step_time_s * 1e3;
  if (step_time_s <= 0) return 0;
  const double tokens = static_cast<double>(c.global_batch) * c.seq_len;
  if (metric == "tokens_per_s_per_chip") return tokens / step_time_s / c.chips;
  if (metric == "tokens_per_s") return tokens / step_time_s;
  if (metric == "samples_per_s") return c.global_batch / step_time_s;
  if (metric == "mfu") {
    return peak_flops > 0 ? megatron_flops(c, false) / (step_time_s * c.chips * peak_flops) : 0;
  }
  return megatron_flops(c) / (step_time_s * c.chips) / kFlopsPerTflop;  // tflops_per_chip
}

// A case as predicted by the estimator, with what the twin needs to predict it too.
struct PreparedCase {
  CaseResult result;
  CaseConfig config;
  double peak_flops = 0;  // a chip's dense peak in the training dtype (BF16 under fp8), for mfu
  std::optional<sim::TwinInput> twin;  // the plan lowered onto its cluster, to simulate
};

// A case as the estimator sees it: its cluster (one island of the case's chips, on the profile
// its hardware names), workload and plan, and the chips' dense peak in the training dtype.
struct BuiltCase {
  Cluster cluster;
  Workload workload;
  Plan plan;
  double peak_flops = 0;
};

BuiltCase build_case(const std::string& stem, const CaseConfig& c,
                     const std::string& profiles_folder) {
  BuiltCase built;
  const HardwareMatch match = match_hardware(c);
  if (match.profile.empty()) {
    throw InputError(c.chip_location.value_or(c.location), "hardware.chip",
                     "expected " + match.refused + ", got " + hetplan::quoted(c.chip));
  }

  Cluster& cluster = built.cluster;
  cluster.name = stem;
  cluster.fabric.kind = FabricKind::infiniband;
  cluster.fabric.topology = FabricTopology::leaf_spine;
  cluster.fabric.leaf_uplink_speed = 400e9 / 8;
  cluster.fabric.switch_latency = 0.6e-6;
  cluster.fabric.zones = {"main"};
  ChipProfile chip = formats::load_chip(profiles_folder + "/" + match.profile + ".yaml");
  if (match.intra_node_bandwidth) chip.intra_node.bandwidth = match.intra_node_bandwidth;
  if (match.memory_capacity) chip.memory_capacity = match.memory_capacity;
  if (match.memory_usable) chip.memory_usable = match.memory_usable;
  if (match.memory_bandwidth) chip.memory_bandwidth = match.memory_bandwidth;
  built.peak_flops = chip.peak(storage_dtype(*c.dtype)).value_or(0);
  cluster.chips.push_back(chip);
  Island island;
  island.name = "main";
  island.chips_per_node = c.chips_per_node > 0 ? c.chips_per_node : chip.chips_per_node.value_or(8);
  island.nodes = std::max(1, (c.chips + island.chips_per_node - 1) / island.chips_per_node);
  island.nic_count = chip.nic_count.value_or(1);
  island.nic_speed = chip.nic_speed.value_or(25e9);
  parse_network(c.network, island);
  island.runtime = chip.runtime;
  island.zone = "main";
  island.nodes_per_leaf = island.nodes;
  cluster.islands.push_back(island);

  Workload& workload = built.workload;
  workload.name = c.id;
  ModelShape& m = workload.model;
  const bool gpt = *c.gpt;
  m.model_type = gpt ? "gpt2" : "llama";
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads > 0 ? c.kv_heads : c.heads;
  m.ffn = c.ffn_four_hidden ? 4 * c.hidden : c.ffn;
  m.vocab = c.vocab;
  m.max_positions = c.seq_len;
  // The two architectures as the folder's README defines them.
  m.activation = gpt ? Activation::gelu : Activation::swiglu;
  m.norm = gpt ? Norm::layernorm : Norm::rmsnorm;
  m.linear_bias = gpt;
  m.dropout = gpt;
  m.learned_positions = gpt;
  m.tied_embeddings = gpt;
  m.head_size = c.head_size;
  m.qk_norm = c.qk_norm;
  m.qkv_bias = c.qkv_bias && !m.linear_bias;
  if (c.experts > 0) {
    m.model_type = "moe";
    m.experts = c.experts;
    m.experts_per_token = c.experts_per_token;
    m.expert_ffn = c.expert_ffn;
    m.shared_experts = c.shared_experts;
    m.shared_expert_ffn = c.shared_expert_ffn;
    m.dense_layers = c.dense_layers;
    m.expert_groups = c.expert_groups;
    m.expert_groups_per_token = c.expert_groups_per_token;
    m.expert_bias = c.expert_bias;
  }
  m.q_lora_rank = c.q_lora_rank;
  m.kv_lora_rank = c.kv_lora_rank;
  m.qk_nope_head_dim = c.qk_nope_head_dim;
  m.qk_rope_head_dim = c.qk_rope_head_dim;
  m.v_head_dim = c.v_head_dim;
  m.mtp_layers = c.mtp_layers;
  TrainingSettings& t = workload.training;
  t.seq_len = c.seq_len;
  t.global_batch = c.global_batch;
  t.micro_batch = c.micro_batch;
  t.dtype = *c.dtype;
  t.fp32_grad_accumulation =
      c.fp32_grad_accumulation.value_or(default_fp32_grad_accumulation(t.dtype));  // as Megatron
  t.recompute = c.recompute;
  t.recompute_modules = c.recompute_modules.value_or(kRecomputeCoreAttention);
  t.sequence_parallel = c.sp;
  t.flash_attention = *c.flash_attention;
  t.zero_stage = c.zero;
  t.overlap_grad_reduce = c.overlap_grad_reduce;
  t.overlap_param_gather = c.overlap_param_gather;
  t.overlap_tp_comm = c.overlap_tp_comm;
  t.overlap_ep_comm = c.overlap_ep_comm;
  if (c.moe_force_balance) t.expert_imbalance = 1.0;
  if (c.moe_dispatcher) t.moe_dispatcher = *c.moe_dispatcher;
  if (c.cross_entropy_fusion) t.cross_entropy_fusion = *c.cross_entropy_fusion;
  t.moe_capacity_factor = c.moe_capacity_factor;
  if (c.unfused_field) t.unfused = formats::read_unfused(*c.unfused_field, m);

  Plan& plan = built.plan;
  plan.name = c.id;
  plan.virtual_stages = c.vpp;
  plan.schedule = c.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  int first = 0;
  for (int i = 0; i < c.pp; ++i) {
    PlanStage stage;
    stage.island = "main";
    stage.first_layer = first;
    stage.num_layers = c.layers / c.pp + (i < c.layers % c.pp ? 1 : 0);
    if (!c.chunk_layers.empty()) {
      stage.chunk_layers = c.chunk_layers[static_cast<std::size_t>(i)];
      stage.num_layers = 0;
      for (const int layers : stage.chunk_layers) stage.num_layers += layers;
    }
    stage.tp = c.tp;
    stage.dp = c.dp;
    stage.ep = c.ep;
    stage.etp = c.etp;
    first += stage.num_layers;
    plan.stages.push_back(stage);
  }
  formats::check_plan_references(plan, cluster, workload);

  return built;
}

PreparedCase run_case(const std::string& stem, const CaseConfig& c,
                      const std::string& profiles_folder, bool lower_for_twin) {
  PreparedCase prepared;
  prepared.config = c;
  CaseResult& result = prepared.result;
  result.file = stem;
  result.id = c.id;
  BuiltCase built = build_case(stem, c, profiles_folder);
  prepared.peak_flops = built.peak_flops;
  const Cluster& cluster = built.cluster;
  const Workload& workload = built.workload;
  const Plan& plan = built.plan;
  const sim::Estimate estimate = sim::estimate_step(cluster, workload, plan);
  result.feasible = estimate.feasible;
  result.reasons = estimate.reasons;
  constexpr double kGiB = 1ull << 30;
  CaseResult::Breakdown& b = result.breakdown;
  b.step_s = estimate.step_time_s;
  b.compute_s = estimate.compute_s;
  b.bubble_s = estimate.bubble_s;
  b.optimizer_s = estimate.optimizer_s;
  b.tensor_parallel_s = estimate.exposed.tensor_parallel;
  b.pipeline_s = estimate.exposed.pipeline + estimate.exposed.cross_island;
  b.data_parallel_s = estimate.exposed.data_parallel;
  b.expert_parallel_s = estimate.exposed.expert_parallel;
  for (const auto& stage : estimate.stages) {
    if (stage.memory.total() / kGiB <= result.predicted_memory_gib) continue;
    result.predicted_memory_gib = stage.memory.total() / kGiB;
    b.weights_gib = stage.memory.weights / kGiB;
    b.gradients_gib = stage.memory.gradients / kGiB;
    b.optimizer_gib = (stage.memory.optimizer + stage.memory.optimizer_step_extra()) / kGiB;
    b.activations_gib = stage.memory.activations / kGiB;
    b.head_gib = stage.memory.head / kGiB;
    b.transient_gib = stage.memory.transient / kGiB;
  }
  formats::MapReader measured(*c.measured);
  if (auto v = measured.optional("memory_gib")) result.measured_memory_gib = v->as_number(1e-3, 1e6);
  // The first metric given is predicted; the others are read (and checked) but not predicted.
  std::optional<formats::Field> metric_value;
  for (const char* metric : kMetrics) {
    if (auto v = measured.optional(metric)) {
      const double value = v->as_number(1e-9, 1e12);
      if (result.metric.empty()) {
        result.metric = metric;
        result.measured = value;
        metric_value = v;
      }
    }
  }
  auto oom = measured.optional("out_of_memory");
  measured.done();
  if (oom) {
    if (!oom->as_bool()) oom->fail_expected("true (a case that ran gives its measured figure)");
    if (metric_value) metric_value->fail("expected no measured figure beside out_of_memory");
    bool memory_reason = false;
    for (const auto& reason : estimate.reasons)
      memory_reason |= reason.find("per chip") != std::string::npos;
    result.metric = "out_of_memory";
    result.correct = !estimate.feasible && memory_reason;
    return prepared;
  }
  if (!metric_value) {
    c.measured->fail_expected(metrics_expected());
  }
  if (result.metric == "mfu" && result.measured > 1)
    metric_value->fail_expected("a share of the peak from 0 to 1 (mfu 0.45, not 45)");
  result.predicted = metric_from_step(c, result.metric, estimate.step_time_s, prepared.peak_flops);
  result.error = (result.predicted - result.measured) / result.measured;
  result.correct = estimate.feasible;
  if (lower_for_twin) {
    if (estimate.feasible) {
      prepared.twin = sim::make_twin_input(cluster, workload, plan, estimate, sim::TwinOptions{});
    } else {
      result.twin_not_simulated = "the estimator says the plan cannot run";
    }
  }
  return prepared;
}

// Simulates the prepared cases' plans, all in one pool of workers, and records each one's
// prediction, or why it has none.
void simulate_cases(std::vector<PreparedCase>& prepared, const TwinValidation& twin) {
  std::vector<sim::TwinInput> inputs;
  std::vector<PreparedCase*> simulated;
  for (auto& p : prepared) {
    if (!p.twin) continue;
    const auto problems = sim::check_twin_input(*p.twin);
    if (!problems.empty()) {
      p.result.twin_not_simulated = problems.front();
      continue;
    }
    inputs.push_back(std::move(*p.twin));
    simulated.push_back(&p);
  }
  if (inputs.empty()) return;
  const auto outcomes = sim::twin::run_workers(inputs, twin.worker, twin.parallel);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    CaseResult& r = simulated[i]->result;
    if (!outcomes[i].result) {
      r.twin_not_simulated = outcomes[i].error;
      continue;
    }
    r.twin_predicted = metric_from_step(simulated[i]->config, r.metric,
                                        outcomes[i].result->step_time_s, simulated[i]->peak_flops);
    r.twin_error = (*r.twin_predicted - r.measured) / r.measured;
  }
}

// A case of a published-run file with the file it came from.
struct FolderCase {
  std::filesystem::path path;
  CaseConfig config;
};

// Every case of the published-run files in `folder`, in file order (the files by name). Throws
// InputError on a malformed file.
std::vector<FolderCase> read_cases(const std::string& folder) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  if (std::filesystem::is_regular_file(folder, error)) {
    files.push_back(folder);  // one file
  } else {
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
  }
  if (error) throw InputError({folder, 0, 0}, "", "cannot list the folder: " + error.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw InputError({folder, 0, 0}, "", "expected published-run files (*.yaml), found none");

  std::vector<FolderCase> out;
  for (const auto& path : files) {
    const std::string file = path.string();
    const YAML::Node root_node = formats::parse_document(formats::read_text_file(file), file);
    const formats::Field root_field(root_node, "", std::make_shared<const std::string>(file));
    if (!root_field.is_map()) root_field.fail_expected("a published-run file (a mapping)");
    formats::MapReader root(root_field);
    root.required("source");
    root.optional("inferred");
    root.optional("notes");
    CaseConfig base;
    if (auto hardware = root.optional("hardware")) read_hardware(*hardware, base);
    if (auto common = root.optional("common")) {
      formats::MapReader section(*common);
      read_section(section, base);
      section.done();
    }
    const formats::Field cases = root.required("cases");
    root.done();
    if (!cases.is_sequence()) cases.fail_expected("a list of cases");
    for (const formats::Field& node : cases.elements()) {
      if (!node.is_map()) node.fail_expected("a case (a mapping)");
      CaseConfig c = base;
      formats::MapReader section(node);
      c.id = section.required("id").as_identifier();
      c.location = node.location();
      read_section(section, c);
      section.optional("inferred");
      section.optional("source");  // a case from another source than the file's: for the reader
      if (auto measured = section.optional("measured")) c.measured = *measured;
      const auto chips = section.optional("chips");
      section.done();
      check_complete(node, c);
      c.chips = chips ? integer(*chips) : c.tp * c.pp * c.dp;
      if (c.chips != c.tp * c.pp * c.dp)
        chips->fail("expected tp x pp x dp = " + std::to_string(c.tp * c.pp * c.dp) +
                    " chips, got " + std::to_string(c.chips));
      const int etp = expert_tp(c.etp, c.tp);
      if (c.etp > 0 && (c.tp * c.dp) % c.etp != 0) {
        throw InputError(node.location(), node.path() + ".parallel.etp",
                         "expected a divisor of tp x dp (" + std::to_string(c.tp * c.dp) +
                             "), got " + std::to_string(c.etp));
      }
      if (c.ep > 1 && ((c.tp * c.dp) % (c.ep * etp) != 0 || c.experts % c.ep != 0)) {
        throw InputError(node.location(), node.path() + ".parallel.ep",
                         (etp == c.tp ? "expected a divisor of dp (" + std::to_string(c.dp) + ")"
                                      : "expected ep x etp dividing tp x dp (" +
                                            std::to_string(c.tp * c.dp) + ")") +
                             " and of the experts (" + std::to_string(c.experts) + "), got " +
                             std::to_string(c.ep));
      }
      out.push_back({path, std::move(c)});
    }
  }
  return out;
}

}  // namespace

ValidationReport validate_published_runs(const std::string& folder,
                                         const std::string& profiles_folder,
                                         const ValidationOptions& options) {
  std::vector<PreparedCase> prepared;
  for (const FolderCase& c : read_cases(folder))
    prepared.push_back(
        run_case(c.path.stem().string(), c.config, profiles_folder, options.twin.has_value()));
  if (options.twin) simulate_cases(prepared, *options.twin);

  ValidationReport report;
  report.twin = options.twin.has_value();
  for (auto& p : prepared) report.cases.push_back(std::move(p.result));
  double sum = 0, twin_sum = 0, analytic_sum = 0;
  int count = 0;
  for (const auto& r : report.cases) {
    if (r.metric == "out_of_memory") {
      ++report.oom_cases;
      report.oom_correct += r.correct ? 1 : 0;
      continue;
    }
    sum += std::fabs(r.error);
    ++count;
    if (std::fabs(r.error) > std::fabs(report.worst_error)) {
      report.worst_error = r.error;
      report.worst_case = r.id;
    }
    if (!r.twin_predicted) continue;
    ++report.twin_cases;
    twin_sum += std::fabs(r.twin_error);
    analytic_sum += std::fabs(r.error);
    if (std::fabs(r.twin_error) > std::fabs(report.twin_worst_error)) {
      report.twin_worst_error = r.twin_error;
      report.twin_worst_case = r.id;
    }
    if (std::fabs(r.twin_error - r.error) > std::fabs(report.twin_largest_gap)) {
      report.twin_largest_gap = r.twin_error - r.error;
      report.twin_largest_gap_case = r.id;
    }
  }
  report.mean_absolute_error = count > 0 ? sum / count : 0;
  if (report.twin_cases > 0) {
    report.twin_mean_absolute_error = twin_sum / report.twin_cases;
    report.twin_analytic_mean_absolute_error = analytic_sum / report.twin_cases;
  }
  return report;
}

std::vector<TrainingRun> published_training_runs(const std::string& folder,
                                                 const std::string& profiles_folder) {
  std::vector<TrainingRun> runs;
  std::map<std::string, std::string> hashes;  // file -> sha256
  for (const FolderCase& c : read_cases(folder)) {
    // The folder the file is in, by name, whatever the path to it.
    const std::string folder_name =
        std::filesystem::absolute(c.path).lexically_normal().parent_path().filename().string();
    const std::string file = c.path.string();
    formats::MapReader measured(*c.config.measured);
    std::string metric;
    double value = 0;
    for (const char* name : kMetrics) {
      if (auto v = measured.optional(name)) {
        if (metric.empty()) {
          metric = name;
          value = v->as_number(1e-9, 1e12);
        }
      }
    }
    if (metric.empty()) continue;  // an out-of-memory case measured no step
    BuiltCase built = build_case(c.path.stem().string(), c.config, profiles_folder);
    TrainingRun run;
    run.id = c.config.id;
    run.source = folder_name + "/" + c.path.filename().string();
    auto hash = hashes.find(file);
    if (hash == hashes.end())
      hash = hashes.emplace(file, sha256_hex(formats::read_text_file(file))).first;
    run.sha256 = hash->second;
    run.location = c.config.location;
    run.metric = metric;
    run.measured = value;
    run.metric_is_time = metric.rfind("step_time", 0) == 0;
    run.metric_scale = metric_from_step(c.config, metric, 1.0, built.peak_flops);
    if (auto memory = measured.optional("memory_gib")) run.measured_memory_gib = memory->as_number(1e-3, 1e6);
    run.cluster = std::move(built.cluster);
    run.workload = std::move(built.workload);
    run.plan = std::move(built.plan);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string report_text(const ValidationReport& report) {
  char line[512];
  // The twin's columns, after the estimator's error; empty without the twin.
  const auto twin_columns = [&](const char* predicted, const char* error) {
    if (!report.twin) return std::string();
    std::snprintf(line, sizeof line, " %11s %10s", predicted, error);
    return std::string(line);
  };
  std::string out =
      "file                          case               metric                 measured   "
      "predicted    error" +
      twin_columns("twin", "twin error") + "  memory pred/meas GiB\n";
  for (const auto& r : report.cases) {
    std::string twin = twin_columns("-", "-");
    if (r.twin_predicted) {
      std::snprintf(line, sizeof line, " %11.4g %+9.1f%%", *r.twin_predicted, 100 * r.twin_error);
      twin = line;
    }
    if (r.metric == "out_of_memory") {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10s %11s %8s", r.file.c_str(),
                    r.id.c_str(), r.metric.c_str(), "OOM", r.feasible ? "fits" : "OOM",
                    r.correct ? "ok" : "WRONG");
      out += line + twin;
      std::snprintf(line, sizeof line, "  %5.1f / -\n", r.predicted_memory_gib);
    } else {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10.4g %11.4g %+7.1f%%", r.file.c_str(),
                    r.id.c_str(), r.metric.c_str(), r.measured, r.predicted, 100 * r.error);
      out += line + twin;
      std::snprintf(line, sizeof line, "  %5.1f / %s\n", r.predicted_memory_gib,
                    r.measured_memory_gib > 0
                        ? std::to_string(static_cast<int>(r.measured_memory_gib)).c_str()
                        : "-");
    }
    out += line;
    if (!r.feasible && r.metric != "out_of_memory") {
      for (const auto& reason : r.reasons) out += "    infeasible: " + reason + "\n";
    }
    if (!r.twin_not_simulated.empty())
      out += "    twin: not simulated: " + r.twin_not_simulated + "\n";
  }
  std::snprintf(line, sizeof line,
                "mean absolute error %.1f%% over %zu cases; worst %s at %+.1f%%; out-of-memory "
                "cases predicted %d/%d\n",
                100 * report.mean_absolute_error,
                report.cases.size() - static_cast<std::size_t>(report.oom_cases),
                report.worst_case.c_str(), 100 * report.worst_error, report.oom_correct,
                report.oom_cases);
  out += line;
  if (report.twin) {
    const auto not_simulated =
        std::count_if(report.cases.begin(), report.cases.end(),
                      [](const auto& r) { return !r.twin_not_simulated.empty(); });
    std::snprintf(line, sizeof line,
                  "twin: mean absolute error %.1f%% over %d cases (estimator %.1f%% on the same); "
                  "worst %s at %+.1f%%; largest gap to the estimator %s at %+.1f points; "
                  "not simulated %td\n",
                  100 * report.twin_mean_absolute_error, report.twin_cases,
                  100 * report.twin_analytic_mean_absolute_error,
                  report.twin_cases > 0 ? report.twin_worst_case.c_str() : "-",
                  100 * report.twin_worst_error,
                  report.twin_cases > 0 ? report.twin_largest_gap_case.c_str() : "-",
                  100 * report.twin_largest_gap, not_simulated);
    out += line;
  }
  return out;
}

nlohmann::ordered_json report_json(const ValidationReport& report) {
  nlohmann::ordered_json j;
  auto& cases = j["cases"] = nlohmann::ordered_json::array();
  for (const auto& r : report.cases) {
    nlohmann::ordered_json c = {{"file", r.file},           {"id", r.id},
                                {"metric", r.metric},       {"measured", r.measured},
                                {"predicted", r.predicted}, {"error", r.error}};
    if (report.twin) {
      c["twin_predicted"] = r.twin_predicted ? nlohmann::ordered_json(*r.twin_predicted) : nullptr;
      c["twin_error"] = r.twin_predicted ? nlohmann::ordered_json(r.twin_error) : nullptr;
      c["twin_not_simulated"] = r.twin_not_simulated.empty()
                                    ? nlohmann::ordered_json(nullptr)
                                    : nlohmann::ordered_json(r.twin_not_simulated);
    }
    c["feasible"] = r.feasible;
    c["correct"] = r.correct;
    c["predicted_memory_gib"] = r.predicted_memory_gib;
    c["reasons"] = r.reasons;
    const CaseResult::Breakdown& b = r.breakdown;
    c["step"] = {{"step_s", b.step_s},
                 {"compute_s", b.compute_s},
                 {"bubble_s", b.bubble_s},
                 {"tensor_parallel_s", b.tensor_parallel_s},
                 {"pipeline_s", b.pipeline_s},
                 {"data_parallel_s", b.data_parallel_s},
                 {"expert_parallel_s", b.expert_parallel_s},
                 {"optimizer_s", b.optimizer_s}};
    c["memory_gib"] = {{"weights", b.weights_gib},         {"gradients", b.gradients_gib},
                       {"optimizer", b.optimizer_gib},     {"activations", b.activations_gib},
                       {"head", b.head_gib},               {"transient", b.transient_gib}};
    cases.push_back(std::move(c));
  }
  j["mean_absolute_error"] = report.mean_absolute_error;
  j["worst_case"] = report.worst_case;
  j["worst_error"] = report.worst_error;
  j["oom_cases"] = report.oom_cases;
  j["oom_correct"] = report.oom_correct;
  if (report.twin) {
    j["twin_cases"] = report.twin_cases;
    j["twin_mean_absolute_error"] = report.twin_mean_absolute_error;
    j["twin_analytic_mean_absolute_error"] = report.twin_analytic_mean_absolute_error;
    j["twin_worst_case"] = report.twin_worst_case;
    j["twin_worst_error"] = report.twin_worst_error;
    j["twin_largest_gap_case"] = report.twin_largest_gap_case;
    j["twin_largest_gap"] = report.twin_largest_gap;
  }
  return j;
}

}  // namespace hetplan::validation
