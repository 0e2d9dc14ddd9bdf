// What-if: two plans side by side — one pinned (kept across edits of the islands and new
// searches, so "what if I add 8 DCU nodes" compares the plan before with the plan after) and the
// one in the detail tab — figure by figure, with the difference and whether it is better.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <optional>
#include <vector>

#include "planner/search.hpp"

namespace hetplan::gui {

struct PinnedPlan {
  planner::RankedPlan plan;
  QString scenario;  // what it was planned on: the scenario and its islands' node counts
};

// What a scenario's islands are, in a line: "default: ascend-910b 32, dcu-k100 16, mlu370 16 nodes".
QString scenario_line(const Scenario& scenario);

class ComparisonModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kFigure, kPinned, kCurrent, kChange, kColumnCount };
  // Which way is better for a row.
  enum class Better { higher, lower, neither };

  explicit ComparisonModel(QObject* parent = nullptr);
  void set_plans(const PinnedPlan* pinned, const PinnedPlan* current);  // copies; null clears

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // For the tests: a row's values (pinned, current), absent when a plan lacks the figure.
  struct Row {
    QString name;
    std::optional<double> pinned;
    std::optional<double> current;
    Better better = Better::neither;
    int decimals = 3;
  };
  const std::vector<Row>& rows() const { return rows_; }
  // Whether `current` is better (+1), worse (-1) or neither (0) than `pinned` on a row.
  int verdict(int row) const;

 private:
  void rebuild();
  std::optional<PinnedPlan> pinned_;
  std::optional<PinnedPlan> current_;
  std::vector<Row> rows_;
};

}  // namespace hetplan::gui
