// The main window: the scenario's islands (node counts editable), a background plan search with
// progress and Cancel, the ranked plans, the three states as a chart, and why the best plan wins.
#pragma once

#include <QMainWindow>
#include <QString>

#include <memory>
#include <optional>

#include "core/scenario.hpp"
#include "gui/models.hpp"
#include "gui/search_runner.hpp"

class QAction;
class QLabel;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;
class QTextBrowser;
class QChart;
class QChartView;

namespace hetplan::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a scenario and everything it references; on bad input shows the CLI's one line
  // ("error: FILE:LINE:COLUMN: ...") and keeps the scenario it had. True when it loaded.
  bool open_scenario(const QString& path);
  void search();
  void cancel();

  // For the tests and the screenshots.
  IslandsModel* islands_model() const { return islands_; }
  PlansModel* plans_model() const { return plans_; }
  SearchRunner* runner() const { return runner_; }
  const Scenario* scenario() const { return scenario_ ? &*scenario_ : nullptr; }
  QString message() const;
  QAction* search_action() const { return search_action_; }
  QAction* cancel_action() const { return cancel_action_; }

 signals:
  void search_done();

 private:
  void show_message(const QString& text, bool error);
  void show_result(std::shared_ptr<const planner::SearchResult> result);
  void update_chart(const planner::SearchResult& result);
  void replace_chart(QChart* chart);  // the view owns the new one; the old one is deleted

  std::optional<Scenario> scenario_;
  QString scenario_path_;
  IslandsModel* islands_;
  PlansModel* plans_;
  QSortFilterProxyModel* sorted_plans_;
  SearchRunner* runner_;
  QTableView* islands_view_;
  QTableView* plans_view_;
  QChartView* chart_;
  QTextBrowser* why_;
  QLabel* summary_;
  QLabel* message_;
  QProgressBar* progress_;
  QAction* search_action_;
  QAction* cancel_action_;
};

}  // namespace hetplan::gui
