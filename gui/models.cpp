#include "gui/models.hpp"

#include <QColor>
#include <QLocale>

namespace hetplan::gui {

// ---- islands -------------------------------------------------------------------------------

IslandsModel::IslandsModel(QObject* parent) : QAbstractTableModel(parent) {}

void IslandsModel::set_cluster(Cluster* cluster) {
  beginResetModel();
  cluster_ = cluster;
  endResetModel();
}

int IslandsModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !cluster_) return 0;
  return static_cast<int>(cluster_->islands.size());
}

int IslandsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant IslandsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case kName: return tr("Island");
    case kChip: return tr("Chip");
    case kNodes: return tr("Nodes");
    case kFreeNodes: return tr("Free nodes");
    case kChipsPerNode: return tr("Chips per node");
    case kNics: return tr("NICs");
    case kZone: return tr("Zone");
    default: return {};
  }
}

QVariant IslandsModel::data(const QModelIndex& index, int role) const {
  if (!cluster_ || !index.isValid() || index.row() >= rowCount()) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const Island& island = cluster_->islands[static_cast<std::size_t>(index.row())];
  switch (index.column()) {
    case kName: return QString::fromStdString(island.name);
    case kChip:  // the profile id to edit, its model to read
      return QString::fromStdString(role == Qt::EditRole ? cluster_->chip_of(island).id
                                                         : cluster_->chip_of(island).model);
    case kNodes: return island.nodes;
    case kFreeNodes: return island.free_nodes;
    case kChipsPerNode: return island.chips_per_node;
    case kNics:
      return QStringLiteral("%1 x %2 Gbps").arg(island.nic_count).arg(island.nic_speed * 8 / 1e9);
    case kZone: return QString::fromStdString(island.zone);
    default: return {};
  }
}

Qt::ItemFlags IslandsModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && (index.column() == kNodes || index.column() == kFreeNodes))
    f |= Qt::ItemIsEditable;
  if (index.isValid() && editor_ &&
      (index.column() == kChip || index.column() == kNics || index.column() == kZone))
    f |= Qt::ItemIsEditable;
  return f;
}

bool IslandsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!cluster_ || !index.isValid() || role != Qt::EditRole) return false;
  if (index.column() == kChip || index.column() == kNics || index.column() == kZone) {
    if (!editor_) return false;
    QString error;
    if (data(index, Qt::EditRole).toString() == value.toString().trimmed()) return true;  // unchanged
    if (!editor_(index.row(), static_cast<Column>(index.column()), value.toString().trimmed(), error)) {
      emit rejected(error);
      return false;
    }
    // A chip brings its own defaults (chips per node, NICs): the whole row may change.
    emit dataChanged(this->index(index.row(), 0), this->index(index.row(), kColumns - 1));
    emit edited();
    return true;
  }
  if (index.column() != kNodes && index.column() != kFreeNodes) return false;
  Island& island = cluster_->islands[static_cast<std::size_t>(index.row())];
  const QString field = QStringLiteral("islands[%1].%2")
                            .arg(index.row())
                            .arg(index.column() == kNodes ? "nodes" : "free_nodes");
  bool ok = false;
  const long long n = value.toString().trimmed().toLongLong(&ok);
  if (index.column() == kNodes) {
    if (!ok || n < 1 || n > 100000) {
      emit rejected(field + tr(": expected an integer from 1 to 100000, got \"%1\"").arg(value.toString()));
      return false;
    }
    // Free nodes follow a change of the whole when they were all free, and never exceed it.
    const bool all_free = island.free_nodes == island.nodes;
    island.nodes = static_cast<int>(n);
    if (all_free || island.free_nodes > island.nodes) island.free_nodes = island.nodes;
  } else {
    if (!ok || n < 0 || n > island.nodes) {
      emit rejected(field + tr(": expected at most the island's %1 nodes, got \"%2\"")
                                .arg(island.nodes)
                                .arg(value.toString()));
      return false;
    }
    island.free_nodes = static_cast<int>(n);
  }
  emit dataChanged(this->index(index.row(), kNodes), this->index(index.row(), kFreeNodes));
  emit edited();
  return true;
}

// ---- stages --------------------------------------------------------------------------------

StagesModel::StagesModel(QObject* parent) : QAbstractTableModel(parent) {}

void StagesModel::set_estimate(const sim::Estimate* estimate) {
  beginResetModel();
  estimate_ = estimate;
  endResetModel();
}

int StagesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !estimate_) return 0;
  return static_cast<int>(estimate_->stages.size());
}

int StagesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant StagesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case kStage: return tr("Stage");
    case kIsland: return tr("Island");
    case kChip: return tr("Chip");
    case kLayers: return tr("Layers");
    case kTp: return tr("tp");
    case kDp: return tr("dp");
    case kMicroBatch: return tr("fwd+bwd per micro-batch");
    case kMemory: return tr("Memory peak / usable");
    default: return {};
  }
}

QVariant StagesModel::data(const QModelIndex& index, int role) const {
  if (!estimate_ || !index.isValid() || index.row() >= rowCount()) return {};
  const sim::StageEstimate& s = estimate_->stages[static_cast<std::size_t>(index.row())];
  if (role == Qt::ForegroundRole && index.column() == kMemory && !s.fits)
    return QColor(0xb0, 0x00, 0x20);
  if (role != Qt::DisplayRole) return {};
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  switch (index.column()) {
    case kStage: return index.row();
    case kIsland: return QString::fromStdString(s.island);
    case kChip: return QString::fromStdString(s.chip);
    case kLayers:
      return QStringLiteral("%1-%2").arg(s.first_layer).arg(s.first_layer + s.num_layers - 1);
    case kTp: return s.tp;
    case kDp: return s.dp;
    case kMicroBatch: return tr("%1 ms").arg(1e3 * s.micro_batch_s, 0, 'f', 1);
    case kMemory: {
      QString text = tr("%1 GiB / %2 GiB")
                         .arg(s.memory.total() / kGiB, 0, 'f', 1)
                         .arg(s.memory_usable / kGiB, 0, 'f', 1);
      if (!s.fits) text += tr("  does not fit");
      else if (s.tight) text += tr("  tight");
      return text;
    }
    default: return {};
  }
}

// ---- plans ---------------------------------------------------------------------------------

PlansModel::PlansModel(QObject* parent) : QAbstractTableModel(parent) {}

void PlansModel::set_result(std::shared_ptr<const planner::SearchResult> result) {
  beginResetModel();
  result_ = std::move(result);
  endResetModel();
}

const planner::RankedPlan* PlansModel::plan_at(int row) const {
  if (!result_ || row < 0 || row >= rowCount()) return nullptr;
  return &result_->ranked[static_cast<std::size_t>(row)];
}

int PlansModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !result_) return 0;
  return static_cast<int>(result_->ranked.size());
}

int PlansModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant PlansModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case kRank: return tr("Rank");
    case kMode: return tr("Mode");
    case kPlan: return tr("Plan");
    case kChips: return tr("Chips");
    case kStep: return tr("Step s");
    case kTokens: return tr("Tokens/s");
    case kInterval: return tr("Tokens/s, 80% interval");
    case kEvidence: return tr("Evidence");
    case kMfu: return tr("MFU %");
    case kBubble: return tr("Bubble %");
    case kComm: return tr("Comm s");
    case kCost: return tr("Cost/Mtok");
    default: return {};
  }
}

QString PlansModel::evidence_text(EvidenceLevel level) {
  switch (level) {
    case EvidenceLevel::datasheet: return tr("datasheet");
    case EvidenceLevel::microbenchmarks: return tr("microbenchmarks");
    case EvidenceLevel::probe: return tr("probe");
    case EvidenceLevel::runs: return tr("runs");
  }
  return {};
}

QVariant PlansModel::data(const QModelIndex& index, int role) const {
  const planner::RankedPlan* r = plan_at(index.row());
  if (!r || index.column() >= kColumns) return {};
  const bool pool = r->mode == planner::Mode::resource_pool;
  // Sorting by the number, display as `hetplan plan` prints it.
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case kRank: return index.row() + 1;
      case kChips: return r->chips;
      case kStep: return pool ? QVariant() : r->estimate.step_time_s;
      case kTokens: return r->tokens_per_s;
      case kInterval:
        return pool || !r->estimate.step_band
                   ? QVariant()
                   : QVariant(sim::rate_interval(r->tokens_per_s, *r->estimate.step_band).low);
      case kEvidence: return pool ? QVariant() : static_cast<int>(r->estimate.evidence);
      case kMfu: return pool ? QVariant() : r->estimate.mfu;
      case kBubble: return pool ? QVariant() : r->estimate.bubble_fraction;
      case kComm: return pool ? QVariant() : r->estimate.exposed.total();
      case kCost: return r->cost_per_million_tokens ? QVariant(*r->cost_per_million_tokens) : QVariant();
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return index.column() == kMode || index.column() == kPlan
               ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
               : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  const QString dash = QStringLiteral("-");
  switch (index.column()) {
    case kRank: return index.row() + 1;
    case kMode:
      switch (r->mode) {
        case planner::Mode::single_island: return tr("single-island");
        case planner::Mode::resource_pool: return tr("resource-pool");
        case planner::Mode::task_level: return tr("task-level");
      }
      return {};
    case kPlan: {
      if (!pool) return QString::fromStdString(r->plan.name);
      QString name = tr("pool: ");
      for (std::size_t k = 0; k < r->islands.size(); ++k)
        name += (k ? QStringLiteral(" + ") : QString()) + QString::fromStdString(r->islands[k]);
      return name;
    }
    case kChips: return r->chips;
    case kStep: return pool ? dash : QString::number(r->estimate.step_time_s, 'f', 2);
    case kTokens: return QString::number(r->tokens_per_s, 'f', 0);
    case kInterval: {
      if (pool) return dash;
      if (!r->estimate.step_band) return tr("unknown");
      const sim::Interval i = sim::rate_interval(r->tokens_per_s, *r->estimate.step_band);
      return QStringLiteral("%1 - %2").arg(i.low, 0, 'f', 0).arg(i.high, 0, 'f', 0);
    }
    case kEvidence: return pool ? dash : evidence_text(r->estimate.evidence);
    case kMfu: return pool ? dash : QString::number(100 * r->estimate.mfu, 'f', 1);
    case kBubble: return pool ? dash : QString::number(100 * r->estimate.bubble_fraction, 'f', 1);
    case kComm: return pool ? dash : QString::number(r->estimate.exposed.total(), 'f', 2);
    case kCost:
      return r->cost_per_million_tokens ? QString::number(*r->cost_per_million_tokens, 'f', 3) : dash;
    default: return {};
  }
}

}  // namespace hetplan::gui
