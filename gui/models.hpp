// Qt item models over hetplan's core types, for the main window's tables. They copy nothing
// they do not show and never compute figures: the plans model shows the search result exactly
// as `hetplan plan` prints it.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <functional>
#include <memory>

#include "core/scenario.hpp"
#include "planner/search.hpp"

namespace hetplan::gui {

// The scenario's islands; the node and free-node counts are editable (checked as the cluster
// loader checks them: 1..100000 nodes, free nodes at most the nodes), and with a field editor
// the chip (a profile id), the NICs ("4 x 200 Gbps") and the zone, which the editor applies to
// the cluster file's text and the loader checks (MainWindow).
class IslandsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kName, kChip, kNodes, kFreeNodes, kChipsPerNode, kNics, kZone, kColumns };
  explicit IslandsModel(QObject* parent = nullptr);
  void set_cluster(Cluster* cluster);  // edits go into it; null shows nothing
  // Applies an edit of the chip, NICs or zone column to the cluster; false with the one-line
  // error when it is refused.
  using FieldEditor = std::function<bool(int row, Column column, const QString& value, QString& error)>;
  void set_field_editor(FieldEditor editor) { editor_ = std::move(editor); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 signals:
  // A value the model refused, in the loader's words ("islands[1].nodes: expected ...").
  void rejected(const QString& message);
  void edited();

 private:
  Cluster* cluster_ = nullptr;
  FieldEditor editor_;
};

// The stages of one plan's estimate: what `hetplan eval` prints per stage.
class StagesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kStage, kIsland, kChip, kLayers, kTp, kDp, kMicroBatch, kMemory, kColumns };
  explicit StagesModel(QObject* parent = nullptr);
  void set_estimate(const sim::Estimate* estimate);  // null shows nothing; must outlive the model's use

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  const sim::Estimate* estimate_ = nullptr;
};

// The ranked plans of a search, one row per plan, the columns of `hetplan plan`.
class PlansModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // kInterval: the 80% interval of tokens/s; kEvidence: the weakest chip's evidence level
  // (docs/models/uncertainty.md).
  enum Column {
    kRank, kMode, kPlan, kChips, kStep, kTokens, kInterval, kEvidence, kMfu, kBubble, kComm,
    kCost, kColumns
  };
  // An evidence level in the user's language.
  static QString evidence_text(EvidenceLevel level);
  explicit PlansModel(QObject* parent = nullptr);
  void set_result(std::shared_ptr<const planner::SearchResult> result);
  const planner::RankedPlan* plan_at(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::shared_ptr<const planner::SearchResult> result_;
};

}  // namespace hetplan::gui
