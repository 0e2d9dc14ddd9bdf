#include "gui/main_window.hpp"

#include <QAction>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QVBoxLayout>
#include <QValueAxis>

#include <exception>

#include "core/error.hpp"
#include "formats/loaders.hpp"

namespace hetplan::gui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      islands_(new IslandsModel(this)),
      plans_(new PlansModel(this)),
      sorted_plans_(new QSortFilterProxyModel(this)),
      runner_(new SearchRunner(this)) {
  setWindowTitle(tr("hetplan"));
  resize(1400, 900);

  QToolBar* tools = addToolBar(tr("Plan"));
  QAction* open = tools->addAction(tr("Open scenario..."));
  search_action_ = tools->addAction(tr("Search plans"));
  cancel_action_ = tools->addAction(tr("Cancel"));
  cancel_action_->setEnabled(false);
  connect(open, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a scenario"), scenario_path_,
                                                      tr("Scenarios (*.yaml *.yml)"));
    if (!path.isEmpty()) open_scenario(path);
  });
  connect(search_action_, &QAction::triggered, this, &MainWindow::search);
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
  plans_view_ = new QTableView(split);
  plans_view_->setModel(sorted_plans_);
  plans_view_->setSortingEnabled(true);
  plans_view_->sortByColumn(PlansModel::kRank, Qt::AscendingOrder);
  plans_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  plans_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  plans_view_->horizontalHeader()->setStretchLastSection(true);

  auto* bottom = new QSplitter(Qt::Horizontal, split);
  chart_ = new QChartView(bottom);
  chart_->setMinimumSize(520, 260);
  chart_->setRenderHint(QPainter::Antialiasing);
  why_ = new QTextBrowser(bottom);
  bottom->setSizes({620, 780});
  bottom->setChildrenCollapsible(false);
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
    plans_->set_result(nullptr);
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
    search_action_->setEnabled(true);
    cancel_action_->setEnabled(false);
    show_message(text, true);
    emit search_done();
  });
}

MainWindow::~MainWindow() = default;

QString MainWindow::message() const { return message_->text(); }

void MainWindow::show_message(const QString& text, bool error) {
  message_->setText(text);
  message_->setStyleSheet(error ? QStringLiteral("color: #b00020") : QString());
}

bool MainWindow::open_scenario(const QString& path) {
  if (runner_->running()) return false;
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
  islands_->set_cluster(&scenario_->cluster);
  plans_->set_result(nullptr);
  why_->clear();
  replace_chart(new QChart());
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
  show_message(tr("opened %1").arg(path), false);
  return true;
}

void MainWindow::search() {
  if (!scenario_ || runner_->running()) return;
  progress_->setRange(0, 0);  // busy until the first report gives the total
  if (!runner_->start(*scenario_)) return;
  search_action_->setEnabled(false);
  cancel_action_->setEnabled(true);
  show_message(tr("searching..."), false);
}

void MainWindow::cancel() {
  runner_->cancel();
  show_message(tr("stopping the search..."), false);
}

void MainWindow::show_result(std::shared_ptr<const planner::SearchResult> result) {
  search_action_->setEnabled(true);
  cancel_action_->setEnabled(false);
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
  why_->setHtml(why);
  update_chart(*result);
  emit search_done();
}

// The three states side by side: the best plan of each island alone, the islands as separate
// jobs (resource pool) and one job across islands (task level), in tokens/s.
void MainWindow::update_chart(const planner::SearchResult& result) {
  auto* set = new QBarSet(tr("tokens/s"));
  QStringList names;
  for (const auto& baseline : result.islands) {
    names << QString::fromStdString(baseline.island);
    *set << (baseline.best ? baseline.best->tokens_per_s : 0.0);
  }
  names << tr("pool");
  *set << (result.resource_pool ? result.resource_pool->tokens_per_s : 0.0);
  names << tr("task-level");
  *set << (result.task_level ? result.task_level->tokens_per_s : 0.0);
  auto* series = new QBarSeries();
  series->append(set);
  auto* chart = new QChart();
  chart->addSeries(series);
  chart->setTitle(tr("Tokens/s: each island alone, the resource pool, one task-level job"));
  auto* x = new QBarCategoryAxis();
  x->append(names);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  auto* y = new QValueAxis();
  y->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(y);
  y->applyNiceNumbers();
  chart->legend()->hide();
  replace_chart(chart);
}

void MainWindow::replace_chart(QChart* chart) {
  QChart* old = chart_->chart();
  chart_->setChart(chart);
  delete old;
}

}  // namespace hetplan::gui
