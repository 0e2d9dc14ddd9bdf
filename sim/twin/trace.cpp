#include "sim/twin/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hetplan::sim::twin {
namespace {

// Times on one timeline of whole nanoseconds: a slice's start and end are rounded, and its
// duration is their difference, so that a slice that starts where another ends shares its
// boundary exactly (rounding start and duration separately left 1 ns overlaps Perfetto hides).
long long nanos(double seconds) {
  return std::llround(seconds * 1e9);
}

// Microseconds with nanosecond resolution from whole nanoseconds: the same bytes for the same
// times.
std::string micros_of(long long ns) {
  char text[48];
  std::snprintf(text, sizeof text, "%lld.%03lld", ns / 1000, ns % 1000);
  return text;
}

std::string micros(double seconds) {
  return micros_of(nanos(seconds));
}

// A JSON string: the names come from cluster and plan files; nlohmann escapes them (and
// replaces bytes that are not UTF-8 rather than throwing).
std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace);
}

std::string event_name(const Event& e) {
  std::string name(to_string(e.kind));
  if (e.micro_batch >= 0) name += " mb" + std::to_string(e.micro_batch);
  if (e.chunk >= 0 && (e.replica < 0 || e.micro_batch >= 0)) name += " chunk " + std::to_string(e.chunk);
  return name;
}

std::string_view category(EventKind kind) {
  switch (kind) {
    case EventKind::forward:
    case EventKind::backward:
      return "compute";
    case EventKind::send:
      return "pipeline";
    case EventKind::receive_wait:
    case EventKind::sync_wait:
    case EventKind::expert_wait:
      return "wait";
    case EventKind::optimizer:
      return "optimizer";
    case EventKind::all_to_all:
      return "expert-parallel";
    default:
      return "data-parallel";
  }
}

}  // namespace

void write_chrome_trace(std::ostream& out, const TwinInput& in, const Timeline& timeline) {
  const int p = static_cast<int>(in.stages.size());
  std::vector<long long> first_rank(static_cast<std::size_t>(p) + 1, 0);
  for (int s = 0; s < p; ++s)
    first_rank[s + 1] = first_rank[s] + static_cast<long long>(in.stages[s].tp) * in.stages[s].dp;
  const long long sync_tid_base = first_rank[p];

  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"plan\":" << json_string(in.plan)
      << ",\"seed\":" << in.seed << "},\"traceEvents\":[\n";
  bool first = true;
  auto next = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int s = 0; s < p; ++s) {
    const TwinStage& st = in.stages[s];
    const TwinIsland& ti = in.islands[static_cast<std::size_t>(st.island)];
    next();
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << s + 1
        << ",\"args\":{\"name\":" << json_string("stage " + std::to_string(s) + " (" + ti.name + ")")
        << "}}";
    next();
    out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << s + 1
        << ",\"args\":{\"sort_index\":" << s << "}}";
    for (int d = 0; d < st.dp; ++d) {
      for (int j = 0; j < st.tp; ++j) {
        const int chip = st.first_chip + d * st.tp + j;
        const long long rank = first_rank[s] + static_cast<long long>(d) * st.tp + j;
        next();
        out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << s + 1 << ",\"tid\":" << rank
            << ",\"args\":{\"name\":"
            << json_string("rank " + std::to_string(rank) + " dp " + std::to_string(d) + " tp " +
                      std::to_string(j) + " " + ti.name + "/n" +
                      std::to_string(chip / ti.chips_per_node) + "/c" +
                      std::to_string(chip % ti.chips_per_node))
            << "}}";
      }
    }
    if (!st.dp_sync.empty()) {
      next();
      out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << s + 1
          << ",\"tid\":" << sync_tid_base + s << ",\"args\":{\"name\":"
          << json_string("stage " + std::to_string(s) + " gradient sync") << "}}";
    }
  }
  // Each event's whole-nanosecond span. The engine's times come from sums of doubles, so an
  // event may start a hair before the previous one on its track ends; within a nanosecond
  // that is the same instant, and the later start is moved to the earlier end.
  std::vector<std::pair<long long, long long>> spans(timeline.events.size());
  std::map<std::pair<int, int>, std::vector<std::size_t>> by_track;  // (stage, replica) -> events
  for (std::size_t i = 0; i < timeline.events.size(); ++i) {
    const Event& e = timeline.events[i];
    spans[i] = {nanos(e.start_s), std::max(nanos(e.start_s), nanos(e.end_s))};
    by_track[{e.stage, e.replica}].push_back(i);
  }
  for (auto& [track, events] : by_track) {
    std::stable_sort(events.begin(), events.end(),
                     [&](std::size_t a, std::size_t b) { return spans[a].first < spans[b].first; });
    long long end = -1;
    for (std::size_t i : events) {
      auto& [start, stop] = spans[i];
      if (start < end && end - start <= 1 && stop >= end) start = end;
      end = std::max(end, stop);
    }
  }
  for (std::size_t i = 0; i < timeline.events.size(); ++i) {
    const Event& e = timeline.events[i];
    const TwinStage& st = in.stages[static_cast<std::size_t>(e.stage)];
    const std::string name = json_string(event_name(e));
    const std::string cat = json_string(category(e.kind));
    const std::string ts = micros_of(spans[i].first);
    const std::string dur = micros_of(spans[i].second - spans[i].first);
    auto emit = [&](long long tid) {
      next();
      out << "{\"ph\":\"X\",\"name\":" << name << ",\"cat\":" << cat << ",\"pid\":" << e.stage + 1
          << ",\"tid\":" << tid << ",\"ts\":" << ts << ",\"dur\":" << dur << "}";
    };
    if (e.replica < 0) {
      emit(sync_tid_base + e.stage);
    } else {
      for (int j = 0; j < st.tp; ++j)
        emit(first_rank[e.stage] + static_cast<long long>(e.replica) * st.tp + j);
    }
  }
  // Arrows from the sender's send to the operation that takes the data (tp rank 0 of each).
  long long id = 0;
  for (const Arrow& a : timeline.arrows) {
    const long long from = first_rank[a.from_stage] +
                           static_cast<long long>(a.replica) * in.stages[a.from_stage].tp;
    const long long to =
        first_rank[a.to_stage] + static_cast<long long>(a.replica) * in.stages[a.to_stage].tp;
    ++id;
    const char* what = a.gradients ? "gradients" : "activations";
    next();
    out << "{\"ph\":\"s\",\"name\":\"" << what << "\",\"cat\":\"pipeline\",\"id\":" << id
        << ",\"pid\":" << a.from_stage + 1 << ",\"tid\":" << from << ",\"ts\":" << micros(a.sent_s)
        << "}";
    next();
    out << "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"" << what << "\",\"cat\":\"pipeline\",\"id\":"
        << id << ",\"pid\":" << a.to_stage + 1 << ",\"tid\":" << to
        << ",\"ts\":" << micros(a.taken_s) << "}";
  }
  out << "\n]}\n";
}

}  // namespace hetplan::sim::twin
