#include "gui/comparison.hpp"

#include <QBrush>
#include <QColor>

#include <algorithm>
#include <cmath>

namespace hetplan::gui {

QString scenario_line(const Scenario& scenario) {
  QStringList islands;
  for (const Island& island : scenario.cluster.islands) {
    const int free = island.free_nodes < 0 ? island.nodes : island.free_nodes;
    islands << (free == island.nodes ? QStringLiteral("%1 %2").arg(QString::fromStdString(island.name)).arg(island.nodes)
                                     : QStringLiteral("%1 %2 (%3 free)")
                                           .arg(QString::fromStdString(island.name))
                                           .arg(island.nodes)
                                           .arg(free));
  }
  return ComparisonModel::tr("%1: %2 nodes")
      .arg(QString::fromStdString(scenario.name), islands.join(QStringLiteral(", ")));
}

ComparisonModel::ComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

void ComparisonModel::set_plans(const PinnedPlan* pinned, const PinnedPlan* current) {
  beginResetModel();
  pinned_ = pinned ? std::optional<PinnedPlan>(*pinned) : std::nullopt;
  current_ = current ? std::optional<PinnedPlan>(*current) : std::nullopt;
  rebuild();
  endResetModel();
}

namespace {

double peak_memory_gib(const sim::Estimate& e) {
  double peak = 0;
  for (const auto& s : e.stages) peak = std::max(peak, s.memory.total());
  return peak / (1024.0 * 1024.0 * 1024.0);
}

}  // namespace

void ComparisonModel::rebuild() {
  rows_.clear();
  if (!pinned_ && !current_) return;
  using Figure = std::optional<double> (*)(const planner::RankedPlan&);
  struct Spec {
    QString name;
    Figure figure;
    Better better;
    int decimals;
    bool of_pool = false;  // a resource pool has the figure (it has no single estimate)
  };
  const Spec specs[] = {
      {tr("tokens/s"), [](const planner::RankedPlan& p) -> std::optional<double> { return p.tokens_per_s; },
       Better::higher, 0, true},
      {tr("chips"), [](const planner::RankedPlan& p) -> std::optional<double> { return p.chips; }, Better::neither, 0, true},
      {tr("tokens/s per chip"),
       [](const planner::RankedPlan& p) -> std::optional<double> {
         if (p.chips <= 0) return std::nullopt;
         return p.tokens_per_s / p.chips;
       },
       Better::higher, 1, true},
      {tr("cost per million tokens"),
       [](const planner::RankedPlan& p) { return p.cost_per_million_tokens; }, Better::lower, 3, true},
      {tr("software stacks"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.software_stacks; }, Better::lower, 0, true},
      {tr("step time, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.step_time_s; }, Better::lower, 3},
      {tr("MFU, %"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return 100 * p.estimate.mfu; }, Better::higher, 1},
      {tr("pipeline stages"),
       [](const planner::RankedPlan& p) -> std::optional<double> {
         return static_cast<double>(p.estimate.stages.size());
       },
       Better::neither, 0},
      {tr("micro-batches"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.micro_batches; },
       Better::neither, 0},
      {tr("compute (bottleneck stage), s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.compute_s; }, Better::lower, 3},
      {tr("bubble, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.bubble_s; }, Better::lower, 3},
      {tr("tensor-parallel communication, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.exposed.tensor_parallel; },
       Better::lower, 3},
      {tr("pipeline sends, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.exposed.pipeline; },
       Better::lower, 3},
      {tr("cross-island sends, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.exposed.cross_island; },
       Better::lower, 3},
      {tr("data-parallel sync (exposed), s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.exposed.data_parallel; },
       Better::lower, 3},
      {tr("expert-parallel all-to-all, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.exposed.expert_parallel; },
       Better::lower, 3},
      {tr("optimizer, s"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return p.estimate.optimizer_s; }, Better::lower, 3},
      {tr("peak memory per chip, GiB"),
       [](const planner::RankedPlan& p) -> std::optional<double> { return peak_memory_gib(p.estimate); },
       Better::lower, 1},
  };
  for (const Spec& spec : specs) {
    Row row{spec.name, std::nullopt, std::nullopt, spec.better, spec.decimals};
    // A resource pool has no single estimate: only its own figures count.
    auto value = [&](const std::optional<PinnedPlan>& p) -> std::optional<double> {
      if (!p) return std::nullopt;
      if (p->plan.mode == planner::Mode::resource_pool && !spec.of_pool) return std::nullopt;
      return spec.figure(p->plan);
    };
    row.pinned = value(pinned_);
    row.current = value(current_);
    rows_.push_back(row);
  }
}

int ComparisonModel::verdict(int row) const {
  const Row& r = rows_.at(static_cast<std::size_t>(row));
  if (!r.pinned || !r.current || r.better == Better::neither) return 0;
  const double scale = std::pow(10.0, -r.decimals) / 2;  // differences below the shown digits
  if (std::abs(*r.current - *r.pinned) < scale) return 0;
  const bool higher = *r.current > *r.pinned;
  return (higher == (r.better == Better::higher)) ? 1 : -1;
}

int ComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size()) + (rows_.empty() ? 0 : 2);
}

int ComparisonModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kFigure: return tr("Figure");
    case kPinned: return tr("Pinned");
    case kCurrent: return tr("Selected");
    case kChange: return tr("Change");
    default: return {};
  }
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  // The first two rows name the plans and what they were planned on.
  if (index.row() < 2) {
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    const std::optional<PinnedPlan>& p = index.column() == kPinned ? pinned_ : current_;
    if (index.column() == kFigure) return index.row() == 0 ? tr("plan") : tr("planned on");
    if (index.column() == kChange || !p) return {};
    return index.row() == 0 ? QString::fromStdString(p->plan.plan.name.empty() ? std::string("pool") : p->plan.plan.name)
                            : p->scenario;
  }
  const int r = index.row() - 2;
  const Row& row = rows_[static_cast<std::size_t>(r)];
  if (role == Qt::ForegroundRole && index.column() == kChange) {
    const int v = verdict(r);
    if (v > 0) return QBrush(QColor(0x1b, 0x7f, 0x3b));
    if (v < 0) return QBrush(QColor(0xb0, 0x00, 0x20));
    return {};
  }
  if (role == Qt::TextAlignmentRole && index.column() != kFigure)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  auto text = [&](const std::optional<double>& v) {
    return v ? QString::number(*v, 'f', row.decimals) : QStringLiteral("-");
  };
  switch (index.column()) {
    case kFigure: return row.name;
    case kPinned: return text(row.pinned);
    case kCurrent: return text(row.current);
    case kChange: {
      if (!row.pinned || !row.current) return QStringLiteral("-");
      const double d = *row.current - *row.pinned;
      QString out = (d >= 0 ? QStringLiteral("+") : QString()) + QString::number(d, 'f', row.decimals);
      if (*row.pinned != 0) {
        const double pct = 100 * d / std::abs(*row.pinned);
        out += QStringLiteral(" (%1%2 %)").arg(pct >= 0 ? QStringLiteral("+") : QString()).arg(pct, 0, 'f', 1);
      }
      return out;
    }
    default: return {};
  }
}

}  // namespace hetplan::gui
