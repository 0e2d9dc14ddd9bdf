// Launch arguments for Megatron-LM / MindSpeed-LLM, one sourceable file per island of a plan, and
// the `kubectl label` commands for the nodes the plan needs. docs/export.md#launch-arguments,
// docs/export.md#node-labels.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/framework.hpp"
#include "core/placement.hpp"
#include "exporters/export.hpp"
#include "formats/loaders.hpp"

namespace hetplan::exporters {
namespace {

constexpr std::size_t kCommentWidth = 100;

// The islands of a plan in pipeline order (of their first stage), with what the plan uses there.
struct IslandPart {
  const Island* island = nullptr;
  const ChipProfile* chip = nullptr;
  std::vector<std::size_t> stages;  // indices into Plan::stages
  int chips = 0;
  int nodes = 0;  // nodes the plan needs: its chips over chips_per_node, rounded up
};

std::vector<IslandPart> island_parts(const Cluster& cluster, const Plan& plan) {
  std::vector<IslandPart> parts;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const IslandPart& p) { return p.island->name == stage.island; });
    if (it == parts.end()) {
      IslandPart part;
      part.island = cluster.find_island(stage.island);
      part.chip = &cluster.chip_of(*part.island);
      parts.push_back(part);
      it = parts.end() - 1;
    }
    it->stages.push_back(i);
    it->chips += stage.tp * stage.dp;
  }
  for (IslandPart& part : parts) {
    const int per_node = std::max(1, part.island->chips_per_node);
    part.nodes = (part.chips + per_node - 1) / per_node;
  }
  return parts;
}

// What every launch export checks first: its inputs, the validation gate, and the plan's
// references to its scenario (an InputError at the plan's field otherwise).
void check_input(const ExportInput& input, const char* what) {
  if (!input.scenario || !input.plan) {
    throw std::invalid_argument(std::string(what) + ": scenario and plan are required");
  }
  check_validation_gate(input);
  formats::check_plan_references(*input.plan, input.scenario->cluster, input.scenario->workload);
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string range_text(int first, int count) {
  return count == 1 ? std::to_string(first)
                    : std::to_string(first) + "-" + std::to_string(first + count - 1);
}

// A paragraph as shell comment lines of at most kCommentWidth characters (a longer word gets a
// line of its own). `indent` follows the "#" on every line.
std::string comment(const std::string& paragraph, const std::string& indent = " ") {
  std::istringstream words(paragraph);
  std::string out;
  std::string line = "#" + indent;
  bool empty = true;
  for (std::string word; words >> word;) {
    if (!empty && line.size() + 1 + word.size() > kCommentWidth) {
      out += line + "\n";
      line = "#" + indent;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  return out + line + "\n";
}

// A word for sh: bare when it holds only characters sh leaves alone, single-quoted otherwise.
std::string shell_word(const std::string& word) {
  const bool bare = !word.empty() && word.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789._/=:@%+,-") == std::string::npos;
  if (bare) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The banner of a file exported from a plan that is not validated (allow_unvalidated).
std::string unvalidated_banner(const ExportInput& input) {
  if (input.validation.validated) return "";
  std::string out =
      "# WARNING: NOT VALIDATED. Exported with --allow-unvalidated: the validation ladder has not\n"
      "# validated this plan. Missing:\n";
  for (const auto& item : input.validation.missing) out += "#   - " + item + "\n";
  if (input.validation.missing.empty()) out += "#   (no step named)\n";
  return out + "#\n";
}

struct Framework {
  TrainingFramework kind = TrainingFramework::megatron_lm;
  std::string id;    // HETPLAN_FRAMEWORK
  std::string name;  // for people
  bool mindspeed = false;
  std::string note;
};

Framework framework_for(const ChipProfile& chip) {
  Framework out;
  out.kind = framework_of(chip);
  out.id = std::string(framework_id(out.kind));
  out.name = std::string(framework_name(out.kind));
  out.mindspeed = out.kind == TrainingFramework::mindspeed_llm;
  if (chip.family == "ascend") {
    out.note =
        "Ascend NPUs (chip family \"ascend\") train with MindSpeed-LLM: Megatron-LM core_v0.12.1's "
        "arguments on torch_npu, plus MindSpeed's own (--num-layer-list).";
  } else if (chip.family == "nvidia") {
    out.note = "NVIDIA GPUs train with upstream Megatron-LM (Megatron-Core 0.13 or later).";
  } else if (chip.family == "dcu") {
    out.note =
        "Hygon DCUs train with Megatron-LM on ROCm (DTK's PyTorch); the ROCm build takes "
        "Megatron-LM's arguments.";
  } else if (chip.family == "mlu") {
    out.note =
        "Cambricon MLUs train with Cambricon's Megatron-LM adaptation (torch_mlu), which "
        "takes Megatron-LM-style arguments.";
  } else {
    out.note = "hetplan knows no training framework for chip family \"" + chip.family +
               "\": these are Megatron-LM-style arguments; check them against the vendor's "
               "Megatron-LM adaptation.";
  }
  return out;
}

// A bash array of a list of arguments, one flag and its values a line, each word quoted for the
// shell where it needs it (a value such as [0]*1+[1]*26 reaches the framework as written).
std::string args_assignment(const std::string& variable, const std::vector<std::string>& args) {
  std::string out = variable + "=(\n";
  for (const std::string& arg : args) {
    std::istringstream words(arg);
    std::string line;
    for (std::string word; words >> word;) {
      // A comma is literal to bash, but in an array reads as a mistaken separator (shellcheck
      // SC2054): a list such as 12,12,7 is quoted.
      std::string quoted = shell_word(word);
      if (quoted == word && word.find(',') != std::string::npos) quoted = "'" + word + "'";
      line += (line.empty() ? "" : " ") + quoted;
    }
    out += "  " + line + "\n";
  }
  return out + ")\n";
}

// The pipeline's layer split as arguments of the framework, in the form core/framework.hpp
// says it takes, or a note saying why it cannot be expressed.
void split_arguments(const Plan& plan, const ModelShape& model, const Framework& framework,
                     std::vector<std::string>& args, std::vector<std::string>& notes) {
  const int pipeline = static_cast<int>(plan.stages.size());
  const int v = plan.schedule == Schedule::interleaved ? std::max(1, plan.virtual_stages) : 1;
  std::vector<int> split;
  std::vector<std::string> words;
  for (const PlanStage& stage : plan.stages) {
    split.push_back(stage.num_layers);
    words.push_back(std::to_string(stage.num_layers));
  }
  const std::string split_text = join(words, ",");
  const bool unequal_chunks =
      std::any_of(plan.stages.begin(), plan.stages.end(),
                  [](const PlanStage& s) { return !s.chunk_layers.empty(); });

  switch (split_form(framework.kind, split, v, unequal_chunks)) {
    case SplitForm::even:
      if (v > 1) {
        args.push_back("--num-layers-per-virtual-pipeline-stage " +
                       std::to_string(split[0] / v));
      }
      return;
    case SplitForm::layer_list:
      args.push_back("--num-layer-list " + split_text);
      return;
    case SplitForm::first_last: {
      // Megatron-Core shares what the first and the last stage leave equally among the middle
      // ones; with two stages the first's count says it all (naming both leaves no middle stage
      // to share among, which its split refuses). With model chunks each stage's layers are
      // shared evenly by its chunks, and the chunks are counted per stage.
      const int middle = pipeline > 2 ? split[1] : -1;
      if (split.front() != middle)
        args.push_back("--decoder-first-pipeline-num-layers " + std::to_string(split.front()));
      if (pipeline > 2 && split.back() != middle)
        args.push_back("--decoder-last-pipeline-num-layers " + std::to_string(split.back()));
      if (v > 1) args.push_back("--num-virtual-stages-per-pipeline-rank " + std::to_string(v));
      return;
    }
    case SplitForm::layout: {
      // Megatron-Core's layout: the virtual stages in order (chunk c of stage s is c x stages +
      // s), separated by '|', each an 'E' for the embedding, a 't' per decoder layer, an 'm' per
      // multi-token-prediction layer and an 'L' for the loss, each count written as t*N.
      std::string layout;
      for (int c = 0; c < v; ++c) {
        for (int s = 0; s < pipeline; ++s) {
          if (c > 0 || s > 0) layout += '|';
          if (c == 0 && s == 0) layout += "E,";
          const int layers = chunk_layer_count(plan.stages[static_cast<std::size_t>(s)], c, v);
          layout += layers == 1 ? std::string("t") : "t*" + std::to_string(layers);
          if (c == v - 1 && s == pipeline - 1) {
            if (model.mtp_layers > 0) layout += ",m*" + std::to_string(model.mtp_layers);
            layout += ",L";
          }
        }
      }
      args.push_back("--pipeline-model-parallel-layout " + layout);
      return;
    }
    case SplitForm::none:
      break;
  }
  notes.push_back(
      std::string("MindSpeed-LLM cannot express this plan's layer split: ") +
      (unequal_chunks
           ? "its model chunks differ in size, and the Megatron-LM it runs on (core_v0.12.1) has "
             "no --pipeline-model-parallel-layout"
           : "with " + std::to_string(v) +
                 " model chunks per stage it takes an even split or equal middle stages "
                 "(--decoder-first/last-pipeline-num-layers), and --num-layer-list is refused "
                 "beside virtual pipeline stages") +
      ". No split or chunk argument is written. The plan's split, stage by stage: " + split_text +
      " (" + std::to_string(v) +
      " chunks each). hetplan's search keeps to the splits each island's framework can "
      "express; this plan was written by hand.");
}

std::string launch_file(const ExportInput& input, const std::vector<IslandPart>& parts,
                        const IslandPart& part) {
  const Scenario& scenario = *input.scenario;
  const Plan& plan = *input.plan;
  const ModelShape& model = scenario.workload.model;
  const sim::StepSettings settings = sim::step_settings(scenario.workload, plan);
  const TrainingSettings& training = settings.training;
  const Framework framework = framework_for(*part.chip);
  const Island& island = *part.island;
  const int pipeline = static_cast<int>(plan.stages.size());
  const int tp = plan.stages[part.stages.front()].tp;
  const int plan_dp = plan.stages[part.stages.front()].dp;

  // Ranks stage by stage in pipeline order, tensor-parallel fastest, then data-parallel.
  std::vector<int> first_rank(plan.stages.size());
  int world = 0;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    first_rank[i] = world;
    world += plan.stages[i].tp * plan.stages[i].dp;
  }
  int job_nodes = 0;
  for (const IslandPart& other : parts) job_nodes += other.nodes;

  std::vector<std::string> notes;  // comment paragraphs after the stage list
  std::vector<std::string> parallel;
  parallel.push_back("--tensor-model-parallel-size " + std::to_string(tp));
  parallel.push_back("--pipeline-model-parallel-size " + std::to_string(pipeline));
  split_arguments(plan, model, framework, parallel, notes);
  parallel.push_back("--micro-batch-size " + std::to_string(settings.micro_batch));
  parallel.push_back("--global-batch-size " + std::to_string(training.global_batch));
  parallel.push_back("--seq-length " + std::to_string(training.seq_len));
  // One recompute per launch: the island's stages' own, when they agree.
  sim::StageRecompute recompute = sim::settings_recompute(settings);
  {
    auto of_stage = [&](std::size_t i) {
      const PlanStage& stage = plan.stages[i];
      return stage.recompute ? sim::StageRecompute{*stage.recompute, stage.recompute_layers.value_or(0)}
                             : sim::settings_recompute(settings);
    };
    recompute = of_stage(part.stages.front());
    for (const std::size_t i : part.stages) {
      if (of_stage(i) == recompute) continue;
      notes.push_back("The stages of this island differ in activation recomputation; " +
                      framework.name +
                      " takes one --recompute-granularity per job (written: stage " +
                      std::to_string(part.stages.front()) + "'s).");
      break;
    }
  }
  if (recompute.mode == Recompute::selective) {
    parallel.push_back("--recompute-granularity selective");
    // Megatron-Core's default module is the core attention; others by name.
    const unsigned modules = training.recompute_modules;
    if (modules != kRecomputeCoreAttention) {
      std::string names;
      for (std::size_t i = 0; i < std::size(kRecomputeModuleNames); ++i)
        if ((modules & (1u << i)) != 0) names += " " + std::string(kRecomputeModuleNames[i]);
      parallel.push_back("--recompute-modules" + names);
    }
  } else if (recompute.mode == Recompute::full && recompute.layers > 0) {
    // The first N layers of each model chunk, the others keeping their activations.
    parallel.push_back("--recompute-granularity full");
    parallel.push_back("--recompute-method block");
    parallel.push_back("--recompute-num-layers " + std::to_string(recompute.layers));
  } else if (recompute.mode == Recompute::full) {
    parallel.push_back("--recompute-granularity full");
    parallel.push_back("--recompute-method uniform");
    parallel.push_back("--recompute-num-layers 1");
  }
  if (model.moe()) {
    // One expert-parallel and expert tensor-parallel size per launch: the island's stages' own,
    // when they agree.
    const int ep = plan.stages[part.stages.front()].ep;
    const int etp = expert_tp(plan.stages[part.stages.front()]);
    parallel.push_back("--expert-model-parallel-size " + std::to_string(ep));
    parallel.push_back("--expert-tensor-parallel-size " + std::to_string(etp));
    const std::string refused = training.moe_dispatcher == MoeDispatcher::flex
                                    ? sim::flex_dispatcher_refusal(*part.chip)
                                    : std::string();
    if (training.moe_dispatcher == MoeDispatcher::flex && refused.empty()) {
      // Megatron-Core's flex dispatcher with DeepEP as its backend.
      parallel.push_back("--moe-token-dispatcher-type flex");
      parallel.push_back("--moe-enable-deepep");
    } else {
      parallel.push_back("--moe-token-dispatcher-type alltoall");
      if (!refused.empty()) {
        notes.push_back("The workload dispatches with the flex dispatcher, not passed: " + refused +
                        " (the estimate prices the all-to-all dispatcher's copies too).");
      }
      if (training.moe_dispatcher == MoeDispatcher::gshard) {
        notes.push_back(
            std::string("The workload dispatches with GShard's einsums (DeepSpeed-MoE, "
                        "ModelLink's legacy MoE), which ") +
            (framework.mindspeed
                 ? "MindSpeed-LLM runs only on its legacy models (its deepspeed_moe model "
                   "type), which this export does not write"
                 : framework.name + " does not have") +
            ": its all-to-all dispatcher is passed, with the experts padded to the same "
            "capacity; the estimate prices the einsums, which this launch would not run.");
      }
    }
    if (training.moe_capacity_factor > 0) {
      char factor[32];
      std::snprintf(factor, sizeof factor, "%g", training.moe_capacity_factor);
      parallel.push_back(std::string("--moe-expert-capacity-factor ") + factor);
      if (training.moe_pad_to_capacity) parallel.push_back("--moe-pad-expert-input-to-capacity");
    }
    if (training.grouped_gemm) parallel.push_back("--moe-grouped-gemm");
    if (training.overlap_ep_comm) {
      const std::string ep_refused =
          sim::ep_overlap_refusal(settings, static_cast<int>(plan.stages.size()));
      if (ep <= 1) {
        notes.push_back(
            "The workload overlaps the expert-parallel all-to-alls, not passed: "
            "this plan has none (ep 1), and " +
            framework.name +
            " requires expert "
            "parallelism for it.");
      } else if (!ep_refused.empty()) {
        notes.push_back("The workload overlaps the expert-parallel all-to-alls, not passed: " +
                        ep_refused + " (the estimate leaves them exposed too).");
      } else if (framework.mindspeed) {
        // MindSpeed's own forward-backward overlap of the mixture's communication.
        parallel.push_back("--moe-fb-overlap");
      } else {
        // Megatron-Core's combined 1F1B schedule, with the weight gradients delayed to give
        // the all-to-alls more compute to hide behind (as its performance recipes set it).
        parallel.push_back("--overlap-moe-expert-parallel-comm");
        parallel.push_back("--delay-wgrad-compute");
      }
    }
    for (const std::size_t i : part.stages) {
      if (plan.stages[i].ep == ep && expert_tp(plan.stages[i]) == etp) continue;
      notes.push_back("The stages of this island differ in expert parallelism; " + framework.name +
                      " takes one --expert-model-parallel-size and one "
                      "--expert-tensor-parallel-size per job (written: stage " +
                      std::to_string(part.stages.front()) + "'s, ep " + std::to_string(ep) +
                      " and etp " + std::to_string(etp) + ").");
      break;
    }
  }
  if (training.zero_stage >= 1) parallel.push_back("--use-distributed-optimizer");
  if (training.zero_stage >= 2) {
    notes.push_back("The plan uses ZeRO stage " + std::to_string(training.zero_stage) + ": " +
                    framework.name +
                    "'s distributed optimizer shards only the optimizer states (stage 1). "
                    "Sharding gradients and weights as well needs its FSDP options, which depend "
                    "on the version; without them a stage needs more memory than estimated.");
  }
  if (training.sequence_parallel && tp > 1) parallel.push_back("--sequence-parallel");
  // The attention the estimate priced (training.flash_attention): MindSpeed takes its fused
  // kernel (npu_fusion_attention) only with --use-flash-attn, and without it keeps the scores in
  // memory; Megatron-Core picks a backend unless told, so it is named.
  if (framework.mindspeed) {
    if (training.flash_attention) parallel.push_back("--use-flash-attn");
  } else {
    parallel.push_back(training.flash_attention ? "--attention-backend flash"
                                                : "--attention-backend unfused");
  }
  // The workload's overlaps, as Megatron-Core (and MindSpeed on Ascend) name them.
  if (training.overlap_grad_reduce && plan_dp > 1) parallel.push_back("--overlap-grad-reduce");
  if (training.overlap_param_gather && training.zero_stage >= 1 && plan_dp > 1) {
    // Megatron-LM's argument checks require the gradient reduction overlapped as well.
    if (training.overlap_grad_reduce) {
      parallel.push_back("--overlap-param-gather");
    } else {
      notes.push_back("The workload overlaps the parameter all-gather but not the gradient "
                      "reduction; " + framework.name + " accepts --overlap-param-gather only "
                      "with --overlap-grad-reduce: not passed, so the all-gather after the "
                      "optimizer step is exposed, unlike in the estimate.");
    }
  }
  if (training.overlap_tp_comm && tp > 1) {
    const std::string refused = sim::tp_overlap_refusal(*part.chip, model, training);
    if (!refused.empty()) {
      notes.push_back("The workload overlaps tensor-parallel communication, not passed: " +
                      refused + " (the estimate leaves the collectives exposed too).");
    } else {
      // MindSpeed fuses the matmul with its collective (MC2); Megatron-Core overlaps them with
      // Transformer Engine's userbuffers.
      parallel.push_back(framework.mindspeed ? "--use-ascend-mc2" : "--tp-comm-overlap");
    }
  }
  switch (training.dtype) {
    case DType::bf16:
      parallel.push_back("--bf16");
      if (!training.fp32_grad_accumulation) parallel.push_back("--grad-reduce-in-bf16");
      break;
    case DType::fp16:
      parallel.push_back("--fp16");
      // Megatron keeps fp16 gradients unless asked (bf16 forces fp32 on its own).
      if (training.fp32_grad_accumulation)
        parallel.push_back("--accumulate-allreduce-grads-in-fp32");
      break;
    case DType::fp8:
      parallel.push_back("--bf16");
      parallel.push_back("--fp8-format hybrid");
      notes.push_back("FP8 training goes through Transformer Engine (--fp8-format); check that " +
                      framework.name + " on this chip supports it.");
      break;
    case DType::fp32:
    case DType::tf32:
      notes.push_back("The plan trains in " + std::string(to_string(training.dtype)) +
                      ": no precision argument (" + framework.name + "'s default).");
      break;
  }

  // Tensor parallelism that one job's single --tensor-model-parallel-size cannot carry.
  for (const std::size_t i : part.stages) {
    if (plan.stages[i].tp != tp) {
      notes.push_back("The stages of this island differ in tensor-parallel size; " +
                      framework.name +
                      " takes one --tensor-model-parallel-size per job (written: stage " +
                      std::to_string(part.stages.front()) + "'s, " + std::to_string(tp) + ").");
      break;
    }
  }
  std::vector<std::string> island_tps;
  std::vector<std::string> island_names;
  bool tp_differs = false;
  for (const IslandPart& other : parts) {
    const int other_tp = plan.stages[other.stages.front()].tp;
    tp_differs = tp_differs || other_tp != tp;
    island_tps.push_back(other.island->name + ": " + std::to_string(other_tp));
    island_names.push_back(other.island->name);
  }
  if (tp_differs) {
    notes.push_back("The islands differ in tensor-parallel size (" + join(island_tps, ", ") +
                    "); one Megatron-LM or MindSpeed-LLM job has one, so this needs a framework "
                    "with heterogeneous tensor parallelism.");
  }
  if (parts.size() > 1) {
    notes.push_back("The pipeline spans " + std::to_string(parts.size()) + " islands (" +
                    join(island_names, ", ") +
                    "). Each island launches its own ranks with its own framework; the stage "
                    "boundaries between islands need pipeline sends and receives that cross "
                    "vendors. Stock Megatron-LM and MindSpeed-LLM build one torch.distributed "
                    "world with one backend; hetplan does not check which heterogeneous-training "
                    "framework you use.");
  }

  std::vector<std::string> model_args;
  model_args.push_back("--num-layers " + std::to_string(model.layers));
  model_args.push_back("--hidden-size " + std::to_string(model.hidden));
  model_args.push_back("--ffn-hidden-size " + std::to_string(model.ffn));
  model_args.push_back("--num-attention-heads " + std::to_string(model.heads));
  if (model.kv_heads != model.heads) {
    model_args.push_back("--group-query-attention");
    model_args.push_back("--num-query-groups " + std::to_string(model.kv_heads));
  }
  if (model.max_positions > 0) {
    model_args.push_back("--max-position-embeddings " + std::to_string(model.max_positions));
  }
  model_args.push_back(std::string("--position-embedding-type ") +
                       (model.learned_positions ? "learned_absolute" : "rope"));
  if (model.norm == Norm::rmsnorm) model_args.push_back("--normalization RMSNorm");
  {
    char eps[32];
    std::snprintf(eps, sizeof eps, "%g", model.norm_eps);
    model_args.push_back(std::string("--norm-epsilon ") + eps);
  }
  if (!model.learned_positions) {
    char theta[32];
    std::snprintf(theta, sizeof theta,
                  model.rope_theta == static_cast<double>(static_cast<long long>(model.rope_theta))
                      ? "%.0f"
                      : "%g",
                  model.rope_theta);
    model_args.push_back(std::string("--rotary-base ") + theta);
    if (model.rotary_percent < 1.0) {
      char share[32];
      std::snprintf(share, sizeof share, "%g", model.rotary_percent);
      model_args.push_back(std::string("--rotary-percent ") + share);
    }
  }
  if (model.qkv_bias && !model.linear_bias) model_args.push_back("--add-qkv-bias");
  // Heads as wide as the config says (Qwen3, GLM-4), and Qwen3's norms of each head's Q and K.
  // Latent attention gives its widths below (--kv-channels is not what its heads use).
  if (model.head_size > 0 && model.head_size * model.heads != model.hidden &&
      !model.latent_attention())
    model_args.push_back("--kv-channels " + std::to_string(model.head_size));
  if (model.qk_norm) model_args.push_back("--qk-layernorm");
  if (model.latent_attention()) {
    // Multi-head latent attention (DeepSeek-V2/V3). Megatron-LM: --multi-latent-attention, the
    // no-rope part of a head's Q and K as --qk-head-dim and the rope part as
    // --qk-pos-emb-head-dim (MLATransformerConfig); MindSpeed-LLM's DeepSeek scripts:
    // --multi-head-latent-attention with --qk-nope-head-dim and --qk-rope-head-dim. Both:
    // --qk-layernorm for the latents' norms, and no --q-lora-rank when Q is projected directly.
    if (framework.mindspeed) {
      model_args.push_back("--multi-head-latent-attention");
      model_args.push_back("--qk-nope-head-dim " + std::to_string(model.qk_nope_head_dim));
      model_args.push_back("--qk-rope-head-dim " + std::to_string(model.qk_rope_head_dim));
    } else {
      model_args.push_back("--multi-latent-attention");
      model_args.push_back("--qk-head-dim " + std::to_string(model.qk_nope_head_dim));
      model_args.push_back("--qk-pos-emb-head-dim " + std::to_string(model.qk_rope_head_dim));
    }
    if (model.q_lora_rank > 0)
      model_args.push_back("--q-lora-rank " + std::to_string(model.q_lora_rank));
    model_args.push_back("--kv-lora-rank " + std::to_string(model.kv_lora_rank));
    model_args.push_back("--v-head-dim " + std::to_string(model.v_head_dim));
    model_args.push_back("--qk-layernorm");
  }
  if (model.moe()) {
    // Megatron-Core's mixture-of-experts arguments (MindSpeed-LLM takes the same).
    model_args.push_back("--num-experts " + std::to_string(model.experts));
    model_args.push_back("--moe-router-topk " + std::to_string(model.experts_per_token));
    model_args.push_back("--moe-ffn-hidden-size " + std::to_string(model.expert_ffn));
    if (model.shared_experts > 0) {
      model_args.push_back("--moe-shared-expert-intermediate-size " +
                           std::to_string(model.shared_experts * model.shared_expert_ffn));
    }
    if (model.shared_experts > 0 && model.shared_expert_gate) {
      if (framework.mindspeed) {
        // MindSpeed-LLM's gate on the shared experts' output (Qwen2-MoE): --shared-expert-gate
        // (mindspeed_llm/training/arguments.py, _add_moe_args). Its argument checks
        // (_validate_moe_args) refuse the gate with gradient-accumulation fusion, which
        // Megatron-LM turns on unless told otherwise.
        model_args.push_back("--shared-expert-gate");
        model_args.push_back("--no-gradient-accumulation-fusion");
      } else {
        // Megatron-LM's arguments (megatron/training/arguments.py) have no gate on the shared
        // experts.
        notes.push_back(
            "The model gates its shared experts' output (Qwen2-MoE's shared_expert_gate); " +
            framework.name +
            " has no argument for that gate (MindSpeed-LLM's is --shared-expert-gate), so none is "
            "written: the shared experts run ungated unless the framework's layer spec adds the "
            "gate.");
      }
    }
    if (model.expert_bias) model_args.push_back("--moe-router-enable-expert-bias");
    if (model.dense_layers > 0) {
      // Dense first layers (DeepSeek's first_k_dense_replace): MindSpeed-LLM's
      // --first-k-dense-replace; Megatron-LM's --moe-layer-freq as a list of 0 (dense) and 1
      // (MoE), one per layer.
      const int dense = std::min(model.dense_layers, model.layers);
      if (framework.mindspeed) {
        model_args.push_back("--first-k-dense-replace " + std::to_string(dense));
        model_args.push_back("--moe-layer-freq 1");
      } else {
        model_args.push_back("--moe-layer-freq [0]*" + std::to_string(dense) + "+[1]*" +
                             std::to_string(model.layers - dense));
      }
    }
  }
  // Multi-token prediction modules (DeepSeek-V3), on the last pipeline stage: Megatron-LM's
  // and MindSpeed-LLM's --mtp-num-layers.
  if (model.mtp_layers > 0)
    model_args.push_back("--mtp-num-layers " + std::to_string(model.mtp_layers));
  if (model.extra_norms > 0) {
    notes.push_back("The model has " + std::to_string(model.extra_norms) +
                    " more norms per layer (GLM-4's and Gemma 2's after the attention and after "
                    "the MLP), which Megatron-LM's GPT layer has no argument for; the framework "
                    "needs a layer spec with them.");
  }
  if (model.activation == Activation::swiglu) model_args.push_back("--swiglu");
  // The fused norm, SwiGLU and rotary kernels the estimate priced
  // (docs/models/compute.md#unfused): MindSpeed-LLM runs its reference operators unless asked
  // for the fused ones; Megatron-Core with Transformer Engine fuses them and has no argument to
  // run them unfused.
  {
    static constexpr const char* kFusedFlag[] = {"--use-fused-rmsnorm", "--use-fused-swiglu",
                                                 "--use-fused-rotary-pos-emb"};
    static constexpr const char* kOperator[] = {"RMSNorm", "SwiGLU", "the rotary embedding"};
    const unsigned has = unfusable_operators(model);
    const unsigned unfused = training.unfused & has;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < std::size(kFusedFlag); ++i) {
      const unsigned bit = 1u << i;
      if (framework.mindspeed && (has & bit) != 0 && (unfused & bit) == 0)
        model_args.push_back(kFusedFlag[i]);
      if ((unfused & bit) != 0) names.emplace_back(kOperator[i]);
    }
    if (!framework.mindspeed && !names.empty()) {
      notes.push_back("The workload runs " + join(names, ", ") +
                      " unfused, which Megatron-LM's arguments cannot ask for (Megatron-Core "
                      "with Transformer Engine fuses them): the run will be faster than the "
                      "estimate.");
    }
  }
  // The loss the estimate priced (docs/models/memory.md#head): Megatron's jit-fused one, or
  // Transformer Engine's, which MindSpeed-LLM on Ascend has no kernel for.
  if (training.cross_entropy_fusion != CrossEntropyFusion::none) {
    model_args.push_back("--cross-entropy-loss-fusion");
    if (training.cross_entropy_fusion == CrossEntropyFusion::te) {
      if (framework.mindspeed) {
        notes.push_back(
            "The workload computes the loss with Transformer Engine's fused kernel, which "
            "MindSpeed-LLM on Ascend does not have: the launch asks for Megatron's jit-fused "
            "loss, which keeps an fp32 copy of the logits the estimate did not count.");
      } else {
        model_args.push_back("--cross-entropy-fusion-impl te");
      }
    }
  }
  // A gated GELU MLP (Gemma's): MindSpeed-LLM's --geglu; Megatron-LM's arguments have only the
  // gated SiLU.
  if (model.activation == Activation::geglu) {
    if (framework.mindspeed) {
      model_args.push_back("--geglu");
    } else {
      notes.push_back(
          "The MLP is a gated GELU (GeGLU), which Megatron-LM's arguments cannot ask "
          "for (--swiglu is the gated SiLU); the framework needs a layer spec with a "
          "gated linear unit and GELU.");
    }
  }
  if (!model.linear_bias) model_args.push_back("--disable-bias-linear");
  if (!model.tied_embeddings) model_args.push_back("--untie-embeddings-and-output-weights");

  // Stage lines and the island's rank ranges (consecutive stages hold consecutive ranks).
  std::string stage_lines;
  std::vector<std::pair<int, int>> rank_ranges;  // first, last
  std::vector<std::string> stage_numbers;
  for (std::size_t k = 0; k < part.stages.size(); ++k) {
    const std::size_t i = part.stages[k];
    const PlanStage& s = plan.stages[i];
    stage_lines += "#   stage " + std::to_string(i) + ": layers " +
                   range_text(s.first_layer, s.num_layers) + " (" + std::to_string(s.num_layers) +
                   "), tp " + std::to_string(s.tp) + ", dp " + std::to_string(s.dp) + ", ranks " +
                   range_text(first_rank[i], s.tp * s.dp) + "\n";
    stage_numbers.push_back(std::to_string(i));
    const int last_rank = first_rank[i] + s.tp * s.dp - 1;
    if (k > 0 && part.stages[k - 1] + 1 == i) {
      rank_ranges.back().second = last_rank;
    } else {
      rank_ranges.emplace_back(first_rank[i], last_rank);
    }
  }
  std::vector<std::string> rank_words;
  for (const auto& [first, last] : rank_ranges) {
    rank_words.push_back(range_text(first, last - first + 1));
  }
  std::vector<std::string> split_words;
  for (const PlanStage& s : plan.stages) split_words.push_back(std::to_string(s.num_layers));

  const std::string file = "launch-" + island.name + ".sh";
  // bash: the argument lists are arrays, so that each word reaches the framework as written.
  // The variables are for the script that sources the file (shellcheck: not unused).
  std::string out = "# shellcheck shell=bash disable=SC2034\n";
  out += comment(file + ": launch arguments for island " + island.name + " of plan \"" + plan.name +
                 "\" (scenario \"" + scenario.name + "\"). Generated by hetplan.");
  out += "#\n";
  out += unvalidated_banner(input);
  out += comment(
      "Source it in the bash launch script of each node of the island (the argument lists are "
      "bash arrays), then start the "
      "trainer with one torch.distributed world for the whole job (" +
      std::to_string(world) + " ranks on " + std::to_string(job_nodes) +
      " nodes; this island's nodes hold ranks HETPLAN_RANKS):");
  out += "#   . ./" + file + "\n";
  out += "#   torchrun --nnodes \"$HETPLAN_JOB_NODES\" --node-rank <this node's> \\\n";
  out +=
      "#     --nproc-per-node \"$HETPLAN_CHIPS_PER_NODE\" ... pretrain_gpt.py "
      "\"${HETPLAN_ARGS[@]}\" \\\n";
  out += "#     <tokenizer, data, optimizer and checkpoint arguments>\n";
  out += "#\n";
  out += comment("Framework: " + framework.name + ". " + framework.note);
  out += "#\n";
  out += comment("Island " + island.name + ": " + part.chip->vendor + " " + part.chip->model +
                 " (profile " + part.chip->id + "), " + island.runtime.name + " " +
                 island.runtime.version + ", " + std::to_string(island.chips_per_node) +
                 " chips per node. The plan uses " + std::to_string(part.chips) + " chips on " +
                 std::to_string(part.nodes) + " of its " + std::to_string(island.nodes) +
                 " nodes, in these stages of the " + std::to_string(pipeline) +
                 "-stage pipeline (ranks numbered stage by stage in pipeline order, "
                 "tensor-parallel ranks fastest, then data-parallel: Megatron's default order):");
  out += stage_lines;
  out += comment("Data-parallel size " + std::to_string(plan.stages[part.stages.front()].dp) +
                 " follows from the world size (" + std::to_string(world) +
                 " = tensor x pipeline x data parallel).");
  for (const std::string& note : notes) out += "#\n" + comment(note);
  out += "\n";
  out += "HETPLAN_ISLAND=" + shell_word(island.name) + "\n";
  out += "HETPLAN_FRAMEWORK=" + framework.id + "\n";
  out += "HETPLAN_STAGES=\"" + join(stage_numbers, " ") + "\"\n";
  out += "HETPLAN_RANKS=\"" + join(rank_words, " ") + "\"\n";
  out += "HETPLAN_WORLD_SIZE=" + std::to_string(world) + "\n";
  out += "HETPLAN_NODES=" + std::to_string(part.nodes) + "\n";
  out += "HETPLAN_JOB_NODES=" + std::to_string(job_nodes) + "\n";
  out += "HETPLAN_CHIPS_PER_NODE=" + std::to_string(island.chips_per_node) + "\n";
  out += "HETPLAN_LAYER_SPLIT=\"" + join(split_words, ",") + "\"\n";
  out += args_assignment("HETPLAN_MODEL_ARGS", model_args);
  out += args_assignment("HETPLAN_PARALLEL_ARGS", parallel);
  out += "HETPLAN_ARGS=(\"${HETPLAN_MODEL_ARGS[@]}\" \"${HETPLAN_PARALLEL_ARGS[@]}\")\n";
  return out;
}

}  // namespace

std::vector<ExportedFile> export_megatron(const ExportInput& input) {
  check_input(input, "export_megatron");
  const std::vector<IslandPart> parts = island_parts(input.scenario->cluster, *input.plan);
  std::vector<ExportedFile> files;
  for (const IslandPart& part : parts) {
    files.push_back({"launch-" + part.island->name + ".sh", launch_file(input, parts, part)});
  }
  return files;
}

ExportedFile export_labels(const ExportInput& input) {
  check_input(input, "export_labels");
  const Plan& plan = *input.plan;
  const std::vector<IslandPart> parts = island_parts(input.scenario->cluster, plan);
  Placement placement;
  try {
    placement = place_plan(input.scenario->cluster, plan);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string("export_labels: ") + error.what());
  }

  std::string out = "#!/bin/sh\n";
  out += comment("labels.sh: Kubernetes node labels for plan \"" + plan.name + "\" (scenario \"" +
                 input.scenario->name + "\"). Generated by hetplan.");
  out += "#\n";
  out += unvalidated_banner(input);
  const IslandPart* unnamed = nullptr;
  for (const IslandPart& part : parts)
    if (part.island->node_names.empty() && !unnamed) unnamed = &part;
  if (unnamed) {
    out += comment(
        "Where the cluster file counts an island's nodes but does not name them (node_names, "
        "which `hetplan inventory import` writes), the node names below are placeholders, "
        "<island>-node-NN, each labelled hetplan.io/node with its placeholder. Before running "
        "this script, substitute your nodes' names (kubectl get nodes), e.g. sed -i 's/ " +
        placeholder_node_name(*unnamed->island, 0) +
        " / worker-17 /' labels.sh, so that the nodes of one hetplan.io/leaf hang off one leaf "
        "switch.");
  }
  out += comment(
      "hetplan.io/leaf names the leaf switch of the plan's placement (docs/export.md#placement), "
      "which the extender scores by and the Volcano HyperNodes select. Labels in the "
      "kubernetes.io and k8s.io namespaces belong to the kubelet and the cloud provider; they "
      "are never written here.");
  out += "set -e\n";
  for (const IslandPart& part : parts) {
    const Island& island = *part.island;
    std::vector<std::string> labels;
    for (const auto& [key, value] : island.labels) {
      const auto slash = key.find('/');
      const std::string domain = slash == std::string::npos ? "" : key.substr(0, slash);
      if (domain.ends_with("kubernetes.io") || domain.ends_with("k8s.io")) continue;  // the kubelet's
      labels.push_back(shell_word(key + "=" + value));
    }
    const std::string label_text = join(labels, " ");
    std::vector<std::string> stage_numbers;
    for (const std::size_t i : part.stages) stage_numbers.push_back(std::to_string(i));
    // The island's nodes in the placement, in order, each once.
    std::vector<PlacedNode> nodes;
    for (const std::size_t i : part.stages)
      for (const PlacedNode& node : placement.stages[i].nodes)
        if (nodes.empty() || nodes.back().index < node.index) nodes.push_back(node);

    out += "\n";
    out += comment("Island " + island.name + ": " + std::to_string(nodes.size()) + " of its " +
                   std::to_string(island.nodes) + " nodes (" + std::to_string(part.chips) +
                   " chips; stage" + (part.stages.size() > 1 ? "s " : " ") +
                   join(stage_numbers, ", ") + ").");
    for (const PlacedNode& node : nodes) {
      std::string placed = shell_word(std::string(kLeafLabel) + "=" +
                                      leaf_name(input.scenario->cluster, island, node.leaf));
      if (!node.named) placed += " " + shell_word(std::string(kNodeLabel) + "=" + node.name);
      out += "kubectl label node " + shell_word(node.name) + " " + label_text + " " + placed +
             " --overwrite\n";
    }
  }
  return {"labels.sh", out};
}

}  // namespace hetplan::exporters
