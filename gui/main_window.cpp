#include "gui/main_window.hpp"

#include <QAction>
#include <QCoreApplication>
#include <QKeySequence>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QHorizontalBarSeries>
#include <QChart>
#include <QChartView>
#include <QFileDialog>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QCheckBox>
#include <QSaveFile>
#include <QFile>
#include <QHBoxLayout>
#include <QGridLayout>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <functional>
#include <optional>
#include <filesystem>
#include <exception>

#include "core/error.hpp"
#include "core/scratch_files.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "gui/export_dialog.hpp"
#include "gui/pipeline_diagram.hpp"

namespace hetplan::gui {
namespace {

// A chart of the series over named categories, with a value axis from 0 to `top` (0: rounded
// to nice numbers from the data).
QChart* bar_chart(const QString& title, std::initializer_list<QAbstractSeries*> series,
                  const QStringList& categories, double top) {
  auto* chart = new QChart();
  chart->setTitle(title);
  auto* x = new QBarCategoryAxis();
  x->append(categories);
  x->setTruncateLabels(false);  // an island's name whole ("ascend-910b"), even if it is wide
  auto* y = new QValueAxis();
  y->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : series) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }
  if (top > 0)
    y->setRange(0, top);
  else
    y->applyNiceNumbers();
  return chart;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      islands_(new IslandsModel(this)),
      plans_(new PlansModel(this)),
      stages_(new StagesModel(this)),
      sorted_plans_(new QSortFilterProxyModel(this)),
      runner_(new SearchRunner(this)),
      simulation_runner_(new SimulationRunner(this)),
      comparison_(new ComparisonModel(this)) {
  setWindowTitle(tr("hetplan"));
  resize(1400, 1000);

  QToolBar* tools = addToolBar(tr("Plan"));
  QAction* open = tools->addAction(tr("Open scenario..."));
  save_action_ = tools->addAction(tr("Save cluster"));
  save_action_->setToolTip(tr("Write the edited node counts into the cluster file"));
  save_action_->setShortcut(QKeySequence::Save);
  search_action_ = tools->addAction(tr("Search plans"));
  simulate_action_ = tools->addAction(tr("Simulate plan"));
  simulate_action_->setToolTip(tr("Simulate one step of the plan in the detail tab on the cluster's fabric"));
  pin_action_ = tools->addAction(tr("Pin for comparison"));
  pin_action_->setToolTip(tr("Keep the plan in the detail tab to compare it with others, also after editing the islands"));
  export_action_ = tools->addAction(tr("Export plan..."));
  export_action_->setToolTip(tr("Write the plan in the detail tab for the scheduler: Volcano Job, plan JSON, launch arguments, labels"));
  cancel_action_ = tools->addAction(tr("Cancel"));
  connect(open, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a scenario"), scenario_path_,
                                                      tr("Scenarios (*.yaml *.yml)"));
    if (!path.isEmpty()) open_scenario(path);
  });
  connect(search_action_, &QAction::triggered, this, &MainWindow::search);
  connect(save_action_, &QAction::triggered, this, &MainWindow::save_cluster);
  connect(pin_action_, &QAction::triggered, this, &MainWindow::pin_plan);
  connect(simulate_action_, &QAction::triggered, this, &MainWindow::simulate);
  connect(export_action_, &QAction::triggered, this, [this] {
    if (ExportDialog* dialog = export_dialog()) {
      dialog->setAttribute(Qt::WA_DeleteOnClose);
      dialog->open();
    }
  });
  connect(cancel_action_, &QAction::triggered, this, &MainWindow::cancel);

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  summary_ = new QLabel(central);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);

  auto* split = new QSplitter(Qt::Vertical, central);
  islands_view_ = new QTableView(split);
  islands_view_->setModel(islands_);
  islands_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  islands_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                 QAbstractItemView::AnyKeyPressed);

  sorted_plans_->setSourceModel(plans_);
  sorted_plans_->setSortRole(Qt::UserRole);
  sorted_plans_->setFilterKeyColumn(-1);  // any column
  sorted_plans_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  auto* plans_box = new QWidget(split);
  auto* plans_layout = new QVBoxLayout(plans_box);
  plans_layout->setContentsMargins(0, 0, 0, 0);
  filter_ = new QLineEdit(plans_box);
  filter_->setPlaceholderText(tr("Filter plans: any text of a row (an island, \"task-level\", \"tp8\", ...)"));
  filter_->setClearButtonEnabled(true);
  plans_layout->addWidget(filter_);
  connect(filter_, &QLineEdit::textChanged, this,
          [this](const QString& text) { sorted_plans_->setFilterFixedString(text); });
  plans_view_ = new QTableView(plans_box);
  plans_layout->addWidget(plans_view_);
  plans_view_->setModel(sorted_plans_);
  plans_view_->setSortingEnabled(true);
  plans_view_->sortByColumn(PlansModel::kRank, Qt::AscendingOrder);
  plans_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  plans_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  plans_view_->horizontalHeader()->setSectionResizeMode(PlansModel::kPlan, QHeaderView::Stretch);

  // Below the plans: the three states beside why the best plan wins, and the selected plan.
  tabs_ = new QTabWidget(split);
  auto* overview = new QSplitter(Qt::Horizontal);
  auto* charts = new QWidget(overview);
  auto* grid = new QGridLayout(charts);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(2);
  for (QChartView** view : {&chart_, &chips_chart_, &cost_chart_, &stacks_chart_}) {
    *view = new QChartView(charts);
    (*view)->setMinimumSize(300, 190);
    (*view)->setRenderHint(QPainter::Antialiasing);
  }
  grid->addWidget(chart_, 0, 0);
  grid->addWidget(chips_chart_, 0, 1);
  grid->addWidget(cost_chart_, 1, 0);
  grid->addWidget(stacks_chart_, 1, 1);
  why_ = new QTextBrowser(overview);
  overview->setSizes({780, 620});
  overview->setChildrenCollapsible(false);
  tabs_->addTab(overview, tr("Three states and why"));
  auto* detail = new QSplitter(Qt::Horizontal);
  auto* left = new QSplitter(Qt::Vertical, detail);
  auto* pipeline_box = new QWidget(left);
  auto* pipeline_layout = new QVBoxLayout(pipeline_box);
  pipeline_layout->setContentsMargins(0, 0, 0, 0);
  diagram_ = new PipelineDiagram(pipeline_box);
  pipeline_layout->addWidget(diagram_);
  auto* pipeline_legend = new QLabel(
      tr("Stages in pipeline order, coloured by vendor. <b>Thick arrow</b>: a cross-island "
         "boundary (activations cross vendors over the fabric); dashed border: the stage does "
         "not fit in memory."),
      pipeline_box);
  pipeline_legend->setWordWrap(true);
  pipeline_layout->addWidget(pipeline_legend);
  pipeline_box->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
  stages_view_ = new QTableView(left);
  stages_view_->setModel(stages_);
  stages_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  breakdown_ = new QTextBrowser(left);
  memory_chart_ = new QChartView(detail);
  memory_chart_->setMinimumSize(520, 260);
  memory_chart_->setRenderHint(QPainter::Antialiasing);
  detail->setSizes({760, 640});
  tabs_->addTab(detail, tr("Plan detail"));
  // The simulated step: what it says beside its timeline.
  auto* simulated = new QSplitter(Qt::Horizontal);
  simulation_text_ = new QTextBrowser(simulated);
  auto* timeline_box = new QWidget(simulated);
  auto* timeline_layout = new QVBoxLayout(timeline_box);
  timeline_layout->setContentsMargins(0, 0, 0, 0);
  auto* buttons = new QHBoxLayout();
  auto* zoom_in = new QPushButton(tr("Zoom in"), timeline_box);
  auto* zoom_out = new QPushButton(tr("Zoom out"), timeline_box);
  auto* whole = new QPushButton(tr("Whole step"), timeline_box);
  save_trace_ = new QPushButton(tr("Save trace for Perfetto..."), timeline_box);
  save_trace_->setEnabled(false);
  for (QPushButton* b : {zoom_in, zoom_out, whole, save_trace_}) buttons->addWidget(b);
  auto* every = new QCheckBox(tr("Every replica"), timeline_box);
  every->setToolTip(tr("Show every data-parallel replica of each stage, not only the first"));
  buttons->addWidget(every);
  buttons->addStretch(1);
  auto* legend = new QLabel(timeline_box);
  QString legend_html;
  const std::pair<EventKind, QString> kinds[] = {
      {EventKind::forward, tr("forward")},        {EventKind::backward, tr("backward")},
      {EventKind::send, tr("pipeline send")},     {EventKind::wait, tr("waiting")},
      {EventKind::data_parallel, tr("gradient sync")}, {EventKind::optimizer, tr("optimizer", "the optimizer step")}};
  for (const auto& [kind, name] : kinds)
    legend_html += QStringLiteral("<span style=\"color:%1\">&#9632;</span> %2&nbsp;&nbsp;")
                       .arg(timeline_colour(kind).name(), name.toHtmlEscaped());
  legend->setText(legend_html);
  buttons->addWidget(legend);
  timeline_layout->addLayout(buttons);
  timeline_ = new TimelineView(timeline_box);
  timeline_layout->addWidget(timeline_, 1);
  simulated->setSizes({430, 970});
  simulated->setChildrenCollapsible(false);
  tabs_->addTab(simulated, tr("Simulated step"));
  // What-if: the pinned plan beside the one in the detail tab.
  auto* compare = new QWidget();
  auto* compare_layout = new QVBoxLayout(compare);
  comparison_note_ = new QLabel(
      tr("Pin a plan (Pin for comparison), then pick another plan, or edit the islands and search "
         "again: the two are compared here, the changes better in green and worse in red."),
      compare);
  comparison_note_->setWordWrap(true);
  compare_layout->addWidget(comparison_note_);
  auto* compare_view = new QTableView(compare);
  compare_view->setModel(comparison_);
  compare_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  compare_view->horizontalHeader()->setStretchLastSection(true);
  compare_layout->addWidget(compare_view, 1);
  tabs_->addTab(compare, tr("Compare"));
  connect(zoom_in, &QPushButton::clicked, this, [this] { timeline_->zoom(2); });
  connect(zoom_out, &QPushButton::clicked, this, [this] { timeline_->zoom(0.5); });
  connect(whole, &QPushButton::clicked, this, [this] { timeline_->zoom_to_fit(); });
  connect(every, &QCheckBox::toggled, this, [this](bool on) { timeline_->set_every_replica(on); });
  connect(save_trace_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the Chrome trace"), QStringLiteral("trace.json"),
                                                      tr("Chrome traces (*.json)"));
    if (!path.isEmpty()) save_trace(path);
  });
  connect(plans_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) show_plan_row(current.row());
          });
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 2);
  layout->addWidget(split, 1);
  setCentralWidget(central);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setMaximumWidth(320);
  message_ = new QLabel(this);
  statusBar()->addWidget(message_, 1);
  statusBar()->addPermanentWidget(progress_);

  connect(islands_, &IslandsModel::rejected, this,
          [this](const QString& text) { show_message(QStringLiteral("error: ") + text, true); });
  connect(islands_, &IslandsModel::edited, this, [this] {
    edited_ = true;
    plans_->set_result(nullptr);
    show_plan(nullptr);  // its plans were made for the islands as they were (pin one to keep it)
    show_message(tr("islands changed: search again for plans on the changed cluster"), false);
  });
  connect(runner_, &SearchRunner::progress, this,
          [this](qulonglong done, qulonglong total, qulonglong evaluations, qulonglong pruned,
                 const QString& phase) {
            progress_->setRange(0, static_cast<int>(std::min<qulonglong>(total, 1 << 30)));
            progress_->setValue(static_cast<int>(std::min<qulonglong>(done, 1 << 30)));
            show_message(tr("searching: %1 of %2 settings, %3 plans scored, %4 pruned (%5)")
                             .arg(done)
                             .arg(total)
                             .arg(evaluations)
                             .arg(pruned)
                             .arg(phase),
                         false);
          });
  connect(runner_, &SearchRunner::finished, this, &MainWindow::show_result);
  connect(runner_, &SearchRunner::failed, this, [this](const QString& text) {
    update_actions();
    show_message(text, true);
    emit search_done();
  });
  connect(simulation_runner_, &SimulationRunner::finished, this, &MainWindow::show_simulation);
  connect(simulation_runner_, &SimulationRunner::cancelled, this, [this] {
    update_actions();
    progress_->setRange(0, 1);
    show_message(tr("simulation cancelled"), false);
    emit simulation_done();
  });
  connect(simulation_runner_, &SimulationRunner::failed, this, [this](const QString& text) {
    update_actions();
    progress_->setRange(0, 1);
    show_message(text, true);
    emit simulation_done();
  });
  update_actions();
}

void MainWindow::update_actions() {
  const bool busy = runner_->running() || simulation_runner_->running();
  search_action_->setEnabled(scenario_ && !busy);
  simulate_action_->setEnabled(detailed_ && !busy);
  export_action_->setEnabled(detailed_ && !busy);
  pin_action_->setEnabled(detailed_ != nullptr);
  save_action_->setEnabled(scenario_ && edited_ && !busy);
  cancel_action_->setEnabled(busy);
}

MainWindow::~MainWindow() = default;

QString MainWindow::message() const { return message_->text(); }

QString MainWindow::why_text() const { return why_->toPlainText(); }

void MainWindow::show_message(const QString& text, bool error) {
  message_->setText(text);
  message_->setStyleSheet(error ? QStringLiteral("color: #b00020") : QString());
}

bool MainWindow::open_scenario(const QString& path) {
  if (runner_->running() || simulation_runner_->running()) return false;
  try {
    Scenario loaded = formats::load_scenario(path.toStdString());
    scenario_ = std::move(loaded);
  } catch (const InputError& error) {
    show_message(QStringLiteral("error: ") + QString::fromStdString(error.what()), true);
    return false;
  } catch (const std::exception& error) {
    show_message(tr("internal error: %1").arg(QString::fromStdString(error.what())), true);
    return false;
  }
  scenario_path_ = path;
  edited_ = false;
  islands_->set_cluster(&scenario_->cluster);
  // Every island in sight (up to eight rows; more scroll).
  const int rows = std::min(islands_->rowCount(), 8);
  islands_view_->setMinimumHeight(islands_view_->horizontalHeader()->sizeHint().height() +
                                  rows * islands_view_->verticalHeader()->defaultSectionSize() +
                                  2 * islands_view_->frameWidth() + 2);
  plans_->set_result(nullptr);
  why_->clear();
  for (QChartView* view : state_charts()) replace_chart(view, new QChart());
  show_plan(nullptr);
  result_.reset();
  const ModelShape& m = scenario_->workload.model;
  summary_->setText(tr("Scenario %1: workload %2 (%3 layers, hidden %4, %5 heads) on cluster %6, "
                       "%7 islands; objective %8")
                        .arg(QString::fromStdString(scenario_->name),
                             QString::fromStdString(scenario_->workload.name))
                        .arg(m.layers)
                        .arg(m.hidden)
                        .arg(m.heads)
                        .arg(QString::fromStdString(scenario_->cluster.name))
                        .arg(scenario_->cluster.islands.size())
                        .arg(scenario_->objective == Objective::cost ? tr("cost") : tr("throughput")));
  show_simulation(nullptr);
  show_message(tr("opened %1").arg(path), false);
  update_actions();
  return true;
}

void MainWindow::search() {
  if (!scenario_ || runner_->running() || simulation_runner_->running()) return;
  progress_->setRange(0, 0);  // busy until the first report gives the total
  if (!runner_->start(*scenario_)) return;
  update_actions();
  show_message(tr("searching..."), false);
}

void MainWindow::simulate() {
  if (!scenario_ || !detailed_ || runner_->running() || simulation_runner_->running()) return;
  if (!simulation_runner_->start(*scenario_, detailed_->plan)) return;
  progress_->setRange(0, 0);  // the twin reports no progress of its own
  update_actions();
  show_message(tr("simulating plan %1 on the fabric...").arg(QString::fromStdString(detailed_->plan.name)),
               false);
}

void MainWindow::cancel() {
  if (simulation_runner_->running()) {
    simulation_runner_->cancel();
    show_message(tr("stopping the simulation..."), false);
  }
  if (runner_->running()) {
    runner_->cancel();
    show_message(tr("stopping the search..."), false);
  }
}

bool MainWindow::save_cluster() {
  if (!scenario_ || !edited_ || runner_->running() || simulation_runner_->running()) return false;
  const std::string path = scenario_->cluster.location.file;
  try {
    const std::string text = formats::read_text_file(path);
    const Cluster on_disk = formats::load_cluster(path);
    const std::string edited = formats::edit_island_counts(text, on_disk, scenario_->cluster);
    // Read the new text back before it replaces the file (beside it, so that its profile
    // folders resolve as the file's do): it must say what the window shows.
    const std::string check = path + ".hetplan-check-" + std::to_string(QCoreApplication::applicationPid());
    {
      ScratchFile scratch(check);
      formats::write_file_atomically(check, edited);
      Cluster back;
      try {
        back = formats::load_cluster(check);
      } catch (...) {
        std::filesystem::remove(check);
        throw;
      }
      std::filesystem::remove(check);
      for (const Island& island : scenario_->cluster.islands) {
        const Island* read = back.find_island(island.name);
        const int free = island.free_nodes < 0 ? island.nodes : island.free_nodes;
        if (!read || read->nodes != island.nodes || read->free_nodes != free)
          throw std::runtime_error("the edited file does not read back as edited (island " + island.name + ")");
      }
    }
    formats::write_file_atomically(path, edited);
    Scenario reloaded = formats::load_scenario(scenario_path_.toStdString());
    scenario_ = std::move(reloaded);
    islands_->set_cluster(&scenario_->cluster);
  } catch (const InputError& error) {
    show_message(QStringLiteral("error: ") + QString::fromStdString(error.what()), true);
    return false;
  } catch (const std::exception& error) {
    show_message(QStringLiteral("error: %1: %2").arg(QString::fromStdString(path), QString::fromStdString(error.what())),
                 true);
    return false;
  }
  edited_ = false;
  update_actions();
  show_message(tr("saved %1").arg(QString::fromStdString(path)), false);
  return true;
}

void MainWindow::pin_plan() {
  if (!detailed_ || !scenario_) return;
  pinned_ = PinnedPlan{*detailed_, scenario_line(*scenario_)};
  update_comparison();
  show_message(tr("pinned plan %1 for comparison").arg(QString::fromStdString(detailed_->plan.name)), false);
}

void MainWindow::update_comparison() {
  std::optional<PinnedPlan> current;
  if (detailed_ && scenario_) current = PinnedPlan{*detailed_, scenario_line(*scenario_)};
  comparison_->set_plans(pinned_ ? &*pinned_ : nullptr, current ? &*current : nullptr);
}

ExportDialog* MainWindow::export_dialog() {
  if (!scenario_ || !detailed_) return nullptr;
  if (edited_) {
    show_message(tr("error: the islands were edited here; save the cluster first (exports name "
                    "the files a plan was made from)"),
                 true);
    return nullptr;
  }
  return new ExportDialog(*scenario_, scenario_path_, *detailed_, this);
}

bool MainWindow::save_trace(const QString& path) {
  if (!simulation_) return false;
  QFile source(QString::fromStdString(simulation_->trace_path));
  QSaveFile target(path);  // the whole trace or, on failure, the file as it was
  if (!source.open(QIODevice::ReadOnly) || !target.open(QIODevice::WriteOnly)) {
    show_message(QStringLiteral("error: %1: expected a file hetplan can write, got %2")
                     .arg(path, source.isOpen() ? target.errorString() : source.errorString()),
                 true);
    return false;
  }
  while (!source.atEnd()) {
    const QByteArray chunk = source.read(1 << 20);
    if (chunk.isEmpty() || target.write(chunk) != chunk.size()) break;
  }
  if (!source.atEnd() || !target.commit()) {
    target.cancelWriting();
    show_message(QStringLiteral("error: %1: expected a file hetplan can write, got %2")
                     .arg(path, target.errorString()),
                 true);
    return false;
  }
  show_message(tr("trace written to %1 (open it in Perfetto, ui.perfetto.dev)").arg(path), false);
  return true;
}

void MainWindow::show_result(std::shared_ptr<const planner::SearchResult> result) {
  show_plan(nullptr);
  result_ = result;
  plans_->set_result(result);
  progress_->setRange(0, static_cast<int>(std::max<std::size_t>(result->settings_total, 1)));
  progress_->setValue(static_cast<int>(result->settings));
  QString text = tr("searched %1 settings, scored %2 plans, %3 more pruned by a bound")
                     .arg(result->settings)
                     .arg(result->evaluations)
                     .arg(result->pruned);
  if (!result->stopped.empty())
    text += tr("; stopped early (%1): the best plans found until then")
                .arg(QString::fromStdString(result->stopped));
  show_message(text, false);
  QString why;
  for (const auto& sentence : planner::explain(*result))
    why += QStringLiteral("<p>") + QString::fromStdString(sentence).toHtmlEscaped() +
           QStringLiteral("</p>");
  if (!result->passes.empty()) {
    why += tr("<p><b>Rejected candidates, by constraint pass</b></p>");
    why += QStringLiteral("<table cellspacing=0 cellpadding=3>");
    for (const auto& pass : result->passes) {
      QString examples;
      for (const auto& example : pass.examples)
        examples += QStringLiteral("<br>") + QString::fromStdString(example).toHtmlEscaped();
      why += QStringLiteral("<tr><td valign=top>%1</td><td valign=top align=right>%2</td><td valign=top>%3</td></tr>")
                 .arg(QString::fromStdString(pass.name).toHtmlEscaped())
                 .arg(pass.rejected)
                 .arg(examples.mid(4));
    }
    why += QStringLiteral("</table>");
  }
  why_->setHtml(why);
  update_chart(*result);
  // The best one-job plan (planner::best_job) in the detail tab, selected in the table.
  if (const planner::RankedPlan* best = planner::best_job(*result)) {
    const int source_row = static_cast<int>(best - result->ranked.data());
    // Selecting the row shows it (currentRowChanged); show it here if the selection did not move.
    plans_view_->selectRow(sorted_plans_->mapFromSource(plans_->index(source_row, 0)).row());
    if (detailed_ != best) show_plan(best);
  }
  update_actions();
  emit search_done();
}

// The three states side by side: the best plan of each island alone, the islands as separate
// jobs (resource pool) and one job across islands (task level): their tokens/s, chips, cost per
// million tokens and software stacks.
void MainWindow::update_chart(const planner::SearchResult& result) {
  std::vector<const planner::RankedPlan*> states;
  QStringList names;
  for (const auto& baseline : result.islands) {
    names << QString::fromStdString(baseline.island);
    states.push_back(baseline.best ? &*baseline.best : nullptr);
  }
  names << tr("pool");
  states.push_back(result.resource_pool ? &*result.resource_pool : nullptr);
  names << tr("task-level");
  states.push_back(result.task_level ? &*result.task_level : nullptr);
  auto one = [&](QChartView* view, const QString& title, const QString& label,
                 const std::function<std::optional<double>(const planner::RankedPlan&)>& figure) {
    auto* set = new QBarSet(label);
    bool any = false;
    for (const planner::RankedPlan* state : states) {
      const std::optional<double> value = state ? figure(*state) : std::nullopt;
      *set << value.value_or(0.0);
      any = any || value.has_value();
    }
    // Horizontal bars: the states' names on the left stay whole however narrow the chart.
    auto* series = new QHorizontalBarSeries();
    series->append(set);
    auto* chart = new QChart();
    chart->setTitle(any ? title : title + tr(" (none known)"));
    auto* y = new QBarCategoryAxis();
    y->append(names);
    y->setTruncateLabels(false);
    auto* x = new QValueAxis();
    x->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(y, Qt::AlignLeft);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addSeries(series);
    series->attachAxis(y);
    series->attachAxis(x);
    x->applyNiceNumbers();
    chart->legend()->hide();
    chart->setMargins(QMargins(2, 2, 2, 2));
    replace_chart(view, chart);
  };
  one(chart_, tr("Tokens/s"), tr("tokens/s"),
      [](const planner::RankedPlan& p) -> std::optional<double> { return p.tokens_per_s; });
  one(chips_chart_, tr("Chips used"), tr("chips"),
      [](const planner::RankedPlan& p) -> std::optional<double> { return p.chips; });
  one(cost_chart_, tr("Cost per million tokens"), tr("cost"),
      [](const planner::RankedPlan& p) { return p.cost_per_million_tokens; });
  one(stacks_chart_, tr("Software stacks to run"), tr("stacks"),
      [](const planner::RankedPlan& p) -> std::optional<double> { return p.software_stacks; });
}

void MainWindow::replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

void MainWindow::show_tab(int index) { tabs_->setCurrentIndex(index); }

void MainWindow::show_plan_row(int row) {
  const QModelIndex source = sorted_plans_->mapToSource(sorted_plans_->index(row, 0));
  show_plan(source.isValid() ? plans_->plan_at(source.row()) : nullptr);
}

// The selected plan: its stages, each stage's memory by part against what a process can use,
// and where its step goes. A resource pool has no single pipeline to show.
void MainWindow::show_plan(const planner::RankedPlan* plan) {
  if (plan && plan->mode == planner::Mode::resource_pool) plan = nullptr;
  detailed_ = plan;
  update_actions();
  stages_->set_estimate(plan ? &plan->estimate : nullptr);
  std::vector<DiagramStage> diagram;
  if (plan && scenario_) {
    for (const sim::StageEstimate& s : plan->estimate.stages) {
      DiagramStage d;
      d.island = QString::fromStdString(s.island);
      for (const ChipProfile& chip : scenario_->cluster.chips)
        if (chip.id == s.chip) d.vendor = QString::fromStdString(chip.vendor);
      d.first_layer = s.first_layer;
      d.num_layers = s.num_layers;
      d.tp = s.tp;
      d.dp = s.dp;
      d.fits = s.fits;
      d.cross_island_boundary = s.cross_island_boundary;
      diagram.push_back(d);
    }
  }
  diagram_->set_stages(std::move(diagram));
  update_comparison();
  if (!plan) {
    breakdown_->clear();
    replace_chart(memory_chart_, new QChart());
    return;
  }
  const sim::Estimate& e = plan->estimate;
  auto seconds = [](double s) { return QString::number(s, 'f', 3); };
  QString html = QStringLiteral("<p><b>%1</b></p>").arg(QString::fromStdString(plan->plan.name).toHtmlEscaped());
  html += tr("<p>step %1 s, %2 tokens/s, MFU %3 %; %4 micro-batches of %5</p>")
              .arg(seconds(e.step_time_s))
              .arg(e.tokens_per_s, 0, 'f', 0)
              .arg(100 * e.mfu, 0, 'f', 1)
              .arg(e.micro_batches)
              .arg(e.micro_batch);
  html += tr("<p>compute %1 s (bottleneck stage), bubble %2 s, optimizer %3 s<br>"
             "exposed communication: tensor-parallel %4 s, pipeline %5 s, cross-island %6 s, "
             "data-parallel %7 s</p>")
              .arg(seconds(e.compute_s), seconds(e.bubble_s), seconds(e.optimizer_s),
                   seconds(e.exposed.tensor_parallel), seconds(e.exposed.pipeline),
                   seconds(e.exposed.cross_island), seconds(e.exposed.data_parallel));
  if (!e.assumptions.empty()) {
    html += tr("<p>Assumed (priors where a profile leaves a figure unknown):</p><ul>");
    for (const auto& a : e.assumptions)
      html += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(a).toHtmlEscaped());
    html += QStringLiteral("</ul>");
  }
  breakdown_->setHtml(html);

  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  auto* weights = new QBarSet(tr("weights"));
  auto* gradients = new QBarSet(tr("gradients"));
  auto* optimizer = new QBarSet(tr("optimizer"));
  auto* activations = new QBarSet(tr("activations"));
  auto* transient = new QBarSet(tr("buffers"));
  auto* usable = new QLineSeries();
  usable->setName(tr("usable"));
  QStringList names;
  double top = 0;
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const sim::StageEstimate& s = e.stages[i];
    names << QString::number(i);  // the stage; its island is in the table beside
    *weights << s.memory.weights / kGiB;
    *gradients << s.memory.gradients / kGiB;
    *optimizer << s.memory.optimizer / kGiB;
    *activations << (s.memory.activations + s.memory.head) / kGiB;
    *transient << s.memory.transient / kGiB;
    usable->append(static_cast<double>(i), s.memory_usable / kGiB);
    top = std::max({top, s.memory.total() / kGiB, s.memory_usable / kGiB});
  }
  auto* bars = new QStackedBarSeries();
  for (QBarSet* set : {weights, gradients, optimizer, activations, transient}) bars->append(set);
  auto* chart = bar_chart(tr("Memory per chip of each stage (0, 1, ...), GiB"), {bars, usable},
                          names, top * 1.05);
  replace_chart(memory_chart_, chart);
}

// The simulated step: its figures against the analytic estimate, where the step goes, the most
// loaded links, goodput and the checkpoint interval, beside the timeline.
void MainWindow::show_simulation(std::shared_ptr<const Simulation> simulation) {
  const bool finished = simulation != nullptr;
  simulation_ = std::move(simulation);
  save_trace_->setEnabled(simulation_ != nullptr);
  if (!simulation_) {
    simulation_text_->clear();
    timeline_->set_timeline({});
    if (finished) emit simulation_done();
    return;
  }
  update_actions();
  progress_->setRange(0, 1);
  progress_->setValue(1);
  const sim::TwinResult& r = simulation_->result;
  const sim::TwinBreakdown& b = r.breakdown;
  auto seconds = [](double s) { return QString::number(s, 'f', 3); };
  QString html = QStringLiteral("<p><b>%1</b></p>").arg(QString::fromStdString(r.plan).toHtmlEscaped());
  html += tr("<p>one step of %1 ranks on the fabric (%2 flows, seed %3)</p>")
              .arg(r.ranks)
              .arg(r.flows)
              .arg(simulation_->seed);
  const double delta = simulation_->analytic_step_time_s > 0
                           ? 100 * (r.step_time_s / simulation_->analytic_step_time_s - 1)
                           : 0;
  html += tr("<p>step %1 s (analytic %2 s, %3 %)<br>%4 tokens/s, MFU %5 %</p>")
              .arg(seconds(r.step_time_s), seconds(simulation_->analytic_step_time_s))
              .arg(QString(delta >= 0 ? QStringLiteral("+") : QString()) + QString::number(delta, 'f', 1))
              .arg(r.tokens_per_s, 0, 'f', 0)
              .arg(100 * r.mfu, 0, 'f', 1);
  html += tr("<p>where the step goes (stage %1, dp %2, the last to finish):</p>")
              .arg(r.critical_stage)
              .arg(r.critical_replica);
  html += QStringLiteral("<table cellspacing=0 cellpadding=2>");
  const std::pair<QString, double> parts[] = {
      {tr("compute"), b.compute_s},           {tr("tensor parallel"), b.tensor_parallel_s},
      {tr("pipeline sends"), b.pipeline_s},   {tr("cross-island sends"), b.cross_island_s},
      {tr("data parallel (exposed)"), b.data_parallel_s}, {tr("pipeline bubble"), b.bubble_s},
      {tr("stragglers"), b.stragglers_s},     {tr("optimizer", "the optimizer step"), b.optimizer_s}};
  for (const auto& [name, value] : parts) {
    html += QStringLiteral("<tr><td>%1</td><td align=right>%2 s</td><td align=right>%3 %</td></tr>")
                .arg(name.toHtmlEscaped(), seconds(value))
                .arg(r.step_time_s > 0 ? 100 * value / r.step_time_s : 0.0, 0, 'f', 1);
  }
  html += QStringLiteral("</table>");
  html += tr("<p>most loaded links (time at full rate during the step):</p>");
  if (r.links.empty()) html += tr("<p>none: no traffic left the chips' nodes</p>");
  html += QStringLiteral("<table cellspacing=0 cellpadding=2>");
  for (const auto& link : r.links) {
    html += QStringLiteral("<tr><td>%1</td><td align=right>%2 s</td><td align=right>%3 %</td></tr>")
                .arg(QString::fromStdString(link.name).toHtmlEscaped(), seconds(link.busy_s))
                .arg(100 * link.utilization, 0, 'f', 1);
  }
  html += QStringLiteral("</table>");
  if (const auto& g = simulation_->goodput) {
    html += tr("<p>goodput %1 tokens/s (%2 % of the time is useful)")
                .arg(g->goodput_tokens_per_s, 0, 'f', 0)
                .arg(100 * g->useful_fraction, 0, 'f', 1);
    if (g->mtbf_s > 0) {
      html += tr("<br>job MTBF %1 h; checkpoint every %2 steps (%3 h; Young %4 h, Daly %5 h)")
                  .arg(g->mtbf_s / 3600, 0, 'f', 2)
                  .arg(g->interval_steps)
                  .arg(g->interval_s / 3600, 0, 'f', 2)
                  .arg(g->young_interval_s / 3600, 0, 'f', 2)
                  .arg(g->daly_interval_s / 3600, 0, 'f', 2);
    }
    html += QStringLiteral("</p>");
  }
  for (const auto& note : simulation_->notes)
    html += QStringLiteral("<p>note: %1</p>").arg(QString::fromStdString(note).toHtmlEscaped());
  simulation_text_->setHtml(html);
  timeline_->set_timeline(simulation_->timeline);
  show_tab(2);
  show_message(tr("simulated plan %1: step %2 s").arg(QString::fromStdString(r.plan), seconds(r.step_time_s)),
               false);
  emit simulation_done();
}

}  // namespace hetplan::gui
