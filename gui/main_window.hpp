// The main window: the scenario's islands (node counts editable), a background plan search with
// progress and Cancel, the ranked plans, the three states as a chart, and why the best plan wins.
#pragma once

#include <QHash>
#include <QMainWindow>
#include <QString>

#include <memory>
#include <optional>

#include "core/scenario.hpp"
#include "formats/yaml_edit.hpp"
#include "gui/comparison.hpp"
#include "gui/models.hpp"
#include "gui/search_runner.hpp"
#include "gui/simulation_runner.hpp"

class QAction;
class QSpinBox;
class QLabel;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;
class QTabWidget;
class QTextBrowser;
class QChart;
class QChartView;
class QPushButton;
class QLineEdit;

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
  // Simulates the plan in the detail tab with the digital twin (off the GUI thread) and shows
  // its step in the simulation tab.
  void simulate();
  // Pins the plan in the detail tab for comparison (what-if): it stays while the islands are
  // edited and searched again, and the Compare tab sets it beside the plan in the detail tab.
  void pin_plan();
  // Stops the running search or simulation.
  void cancel();
  // Copies the last simulation's Chrome trace to `path` (written whole or not at all); the
  // one-line error otherwise.
  bool save_trace(const QString& path);
  // Applies an edit of an island's chip, NICs or zone to the cluster (the cluster file's text
  // edited in place and read by the loader, which checks it). False with the loader's one line.
  bool edit_island(int row, IslandsModel::Column column, const QString& value, QString& error);
  // Applies an edit of the workload (`path` into its file: {"training", "micro_batch"}, or an
  // inline model's {"model", "shape", "layers"}), the value as typed (one scalar, quoted where
  // YAML would read more into it), checked by the loader. False with its one line in the status
  // bar and at the field.
  bool edit_workload(const formats::YamlPath& path, const QString& value);
  // The same with `yaml` written as it is (a list such as [rmsnorm, swiglu]), not as one scalar.
  bool edit_workload_yaml(const formats::YamlPath& path, const std::string& yaml);
  // Makes the workload's model the Hugging Face config.json at `path` (written relative to the
  // workload file, as its hf_config); a workload that writes its model inline keeps it.
  bool use_model_config(const QString& path);
  // Writes the edits into the files the scenario names, the cluster's and the workload's (in
  // place, atomically, nothing else in them changed; formats/yaml_edit.hpp), each checked by its
  // loader before anything is written. The one-line error otherwise.
  bool save_edits();
  // The workload tab's summary of the model: its parameters, its mixture of experts and latent
  // attention when it has them, for the tests.
  QString model_structure() const;
  // The workload tab's field of a path ("training.micro_batch"), for the tests.
  QWidget* workload_field(const QString& path) const { return workload_fields_.value(path); }
  // The export dialog for the plan in the detail tab (null when there is none, or when the
  // islands were edited and not saved: exports name the files they were planned from).
  class ExportDialog* export_dialog();

  // For the tests and the screenshots.
  IslandsModel* islands_model() const { return islands_; }
  PlansModel* plans_model() const { return plans_; }
  SearchRunner* runner() const { return runner_; }
  const Scenario* scenario() const { return scenario_ ? &*scenario_ : nullptr; }
  QString message() const;
  QAction* search_action() const { return search_action_; }
  // The plan shown in the detail tab (the best one-job plan after a search), or null.
  const planner::RankedPlan* detailed_plan() const { return detailed_; }
  QTableView* stages_view() const { return stages_view_; }
  QTableView* plans_view() const { return plans_view_; }
  QTableView* islands_view() const { return islands_view_; }
  QLineEdit* plans_filter() const { return filter_; }
  // The text beside the three states: why the best plan wins, and the rejected candidates by
  // constraint pass.
  QString why_text() const;
  QChartView* memory_chart() const { return memory_chart_; }
  // The three states side by side: tokens/s, chips, cost per million tokens, software stacks.
  std::vector<QChartView*> state_charts() const { return {chart_, chips_chart_, cost_chart_, stacks_chart_}; }
  // Shows the plan of a row of the ranked table (in the table's current order).
  void show_plan_row(int row);
  // Brings the tab below the plans to the front: 0 the three states and why, 1 the plan
  // detail, 2 the simulated step.
  void show_tab(int index);
  QAction* cancel_action() const { return cancel_action_; }
  QAction* simulate_action() const { return simulate_action_; }
  QAction* export_action() const { return export_action_; }
  QAction* save_action() const { return save_action_; }
  QAction* pin_action() const { return pin_action_; }
  // The most islands one task-level pipeline may span; its lowest value, 1, means no cap.
  QSpinBox* pipeline_islands_box() const { return pipeline_islands_; }
  ComparisonModel* comparison_model() const { return comparison_; }
  SimulationRunner* simulation_runner() const { return simulation_runner_; }
  const Simulation* simulation() const { return simulation_.get(); }
  TimelineView* timeline_view() const { return timeline_; }
  QTextBrowser* simulation_summary() const { return simulation_text_; }
  class PipelineDiagram* pipeline_diagram() const { return diagram_; }

 signals:
  void search_done();
  void simulation_done();  // finished, cancelled or failed

 private:
  void show_message(const QString& text, bool error);
  void show_result(std::shared_ptr<const planner::SearchResult> result);
  void update_chart(const planner::SearchResult& result);
  void replace_chart(QChartView* view, QChart* chart);  // the old chart is deleted
  void show_plan(const planner::RankedPlan* plan);
  void show_simulation(std::shared_ptr<const Simulation> simulation);
  void update_actions();
  void update_comparison();
  void inputs_edited(const QString& message);
  void update_summary();
  void refresh_workload_form();
  std::string cluster_text() const;   // the cluster file's text with the edits so far
  std::string workload_text() const;  // the workload file's text with the edits so far

  std::optional<Scenario> scenario_;
  QString scenario_path_;
  IslandsModel* islands_;
  PlansModel* plans_;
  StagesModel* stages_;
  QSortFilterProxyModel* sorted_plans_;
  SearchRunner* runner_;
  QTableView* islands_view_;
  QTableView* plans_view_;
  QChartView* chart_;          // tokens/s of the three states
  QChartView* chips_chart_;    // chips each uses
  QChartView* cost_chart_;     // cost per million tokens (where the scenario prices chips)
  QChartView* stacks_chart_;   // software stacks each runs
  QTextBrowser* why_;
  QLineEdit* filter_;
  QTabWidget* tabs_;
  QTableView* stages_view_;
  QChartView* memory_chart_;
  QTextBrowser* breakdown_;
  const planner::RankedPlan* detailed_ = nullptr;
  std::shared_ptr<const planner::SearchResult> result_;
  QLabel* summary_;
  QLabel* message_;
  QProgressBar* progress_;
  QAction* search_action_;
  QAction* cancel_action_;
  QAction* simulate_action_;
  QAction* export_action_;
  QAction* save_action_;
  QAction* pin_action_;
  QSpinBox* pipeline_islands_;
  std::optional<PinnedPlan> pinned_;
  bool edited_ = false;  // islands or workload changed in the window since opened or saved
  std::optional<std::string> cluster_text_;   // edits beyond node counts, not yet saved
  std::optional<std::string> workload_text_;  // workload edits, not yet saved
  QHash<QString, QWidget*> workload_fields_;  // by path, "training.micro_batch"
  QLabel* model_label_;
  QLabel* model_structure_;  // parameters, and what makes it more than a dense GPT
  QPushButton* model_config_button_;
  SimulationRunner* simulation_runner_;
  ComparisonModel* comparison_;
  std::shared_ptr<const Simulation> simulation_;
  QTextBrowser* simulation_text_;
  class PipelineDiagram* diagram_;
  TimelineView* timeline_;
  QPushButton* save_trace_;
};

}  // namespace hetplan::gui
