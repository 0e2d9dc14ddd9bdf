#include "gui/main_window.hpp"

#include <QAction>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QStatusBar>
#include <QStyledItemDelegate>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <bit>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <optional>
#include <set>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/scratch_files.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "formats/yaml_edit.hpp"
#include "gui/export_dialog.hpp"
#include "gui/pipeline_diagram.hpp"
#include "models/transformer_ops.hpp"

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

// The chip column's editor: the profiles beside the cluster's chip profiles, by id.
class ChipDelegate : public QStyledItemDelegate {
 public:
  ChipDelegate(const std::optional<Scenario>& scenario, QObject* parent)
      : QStyledItemDelegate(parent), scenario_(scenario) {}

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* box = new QComboBox(parent);
    QStringList ids;
    if (scenario_) {
      std::set<std::filesystem::path> folders;
      for (const ChipProfile& chip : scenario_->cluster.chips)
        folders.insert(std::filesystem::path(chip.location.file).parent_path());
      for (const auto& folder : folders) {
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator(folder, error))
          if (entry.path().extension() == ".yaml") ids << QString::fromStdString(entry.path().stem().string());
      }
    }
    ids.sort();
    ids.removeDuplicates();
    box->addItems(ids);
    return box;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* box = static_cast<QComboBox*>(editor);
    box->setCurrentIndex(box->findText(index.data(Qt::EditRole).toString()));
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    model->setData(index, static_cast<QComboBox*>(editor)->currentText());
  }

 private:
  const std::optional<Scenario>& scenario_;
};

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
  save_action_ = tools->addAction(tr("Save"));
  save_action_->setToolTip(tr("Write the edited islands and workload into their files"));
  save_action_->setShortcut(QKeySequence::Save);
  search_action_ = tools->addAction(tr("Search plans"));
  // hetplan plan --max-pipeline-islands: on a site of many islands the task-level search's time
  // grows steeply with their number; a cap bounds it the same way on every machine.
  auto* pipeline_islands_label = new QLabel(tr("Islands per pipeline:"), tools);
  pipeline_islands_label->setContentsMargins(6, 0, 4, 0);
  pipeline_islands_ = new QSpinBox(tools);
  pipeline_islands_->setRange(1, 1024);
  pipeline_islands_->setSpecialValueText(tr("all"));
  pipeline_islands_->setMaximumWidth(
      pipeline_islands_->fontMetrics().horizontalAdvance(QStringLiteral("00000")) + 40);
  const QString pipeline_islands_tip =
      tr("The most islands one task-level pipeline may span (all: no cap). A cap bounds the "
         "search's time on sites of many islands.");
  pipeline_islands_label->setToolTip(pipeline_islands_tip);
  pipeline_islands_->setToolTip(pipeline_islands_tip);
  pipeline_islands_label->setBuddy(pipeline_islands_);
  tools->addWidget(pipeline_islands_label);
  tools->addWidget(pipeline_islands_);
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
  connect(save_action_, &QAction::triggered, this, &MainWindow::save_edits);
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
  islands_view_->setItemDelegateForColumn(IslandsModel::kChip, new ChipDelegate(scenario_, islands_view_));
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
      {EventKind::data_parallel, tr("gradient sync")},
      {EventKind::expert_parallel, tr("expert-parallel all-to-all")},
      {EventKind::optimizer, tr("optimizer", "the optimizer step")}};
  for (const auto& [kind, name] : kinds)
    legend_html += QStringLiteral("<span style=\"color:%1\">&#9632;</span> %2&nbsp;&nbsp;")
                       .arg(timeline_colour(kind).name(), name.toHtmlEscaped());
  legend->setText(legend_html);
  // On its own line, wrapped: beside the buttons it made the timeline's least width that of the
  // whole row, and the splitter squeezed the summary beside it until its labels broke mid-word.
  legend->setWordWrap(true);
  timeline_layout->addLayout(buttons);
  timeline_layout->addWidget(legend);
  timeline_ = new TimelineView(timeline_box);
  timeline_layout->addWidget(timeline_, 1);
  // Wide enough for the summary's longest label and its figures on one line.
  simulation_text_->setMinimumWidth(simulation_text_->fontMetrics().averageCharWidth() * 44);
  simulated->setSizes({430, 970});
  simulated->setChildrenCollapsible(false);
  tabs_->addTab(simulated, tr("Simulated step"));
  // What-if: the pinned plan beside the one in the detail tab.
  auto* compare = new QWidget();
  auto* compare_layout = new QVBoxLayout(compare);
  auto* comparison_note = new QLabel(
      tr("Pin a plan (Pin for comparison), then pick another plan, or edit the islands and search "
         "again: the two are compared here, the changes better in green and worse in red."),
      compare);
  comparison_note->setWordWrap(true);
  compare_layout->addWidget(comparison_note);
  auto* compare_view = new QTableView(compare);
  compare_view->setModel(comparison_);
  compare_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  compare_view->horizontalHeader()->setStretchLastSection(true);
  compare_layout->addWidget(compare_view, 1);
  tabs_->addTab(compare, tr("Compare"));
  // The workload: its model (editable when written inline) and its training settings.
  auto* workload_tab = new QWidget();
  auto* workload_form = new QFormLayout(workload_tab);
  model_label_ = new QLabel(workload_tab);
  model_label_->setWordWrap(true);
  workload_form->addRow(tr("Model"), model_label_);
  model_structure_ = new QLabel(workload_tab);
  model_structure_->setWordWrap(true);
  workload_form->addRow(tr("Structure"), model_structure_);
  model_config_button_ = new QPushButton(tr("Choose config.json..."), workload_tab);
  model_config_button_->setMaximumWidth(220);
  workload_form->addRow(QString(), model_config_button_);
  connect(model_config_button_, &QPushButton::clicked, this, [this] {
    if (!scenario_) return;
    const QString start = QString::fromStdString(
        std::filesystem::path(scenario_->workload.model_file).parent_path().string());
    const QString path = QFileDialog::getOpenFileName(this, tr("A Hugging Face config.json"), start,
                                                      tr("Model configs (*.json)"));
    if (!path.isEmpty()) use_model_config(path);
  });
  auto path_of = [](const QString& key) {
    formats::YamlPath path;
    for (const QString& step : key.split(QLatin1Char('.'))) path.emplace_back(step.toStdString());
    return path;
  };
  auto add_line = [&](const QString& key, const QString& label) {
    auto* edit = new QLineEdit(workload_tab);
    edit->setMaximumWidth(160);
    workload_fields_.insert(key, edit);
    workload_form->addRow(label, edit);
    connect(edit, &QLineEdit::editingFinished, this, [this, edit, key, path_of] {
      if (edit->isModified()) {
        edit->setModified(false);
        edit_workload(path_of(key), edit->text().trimmed());
      }
    });
  };
  auto add_choice = [&](const QString& key, const QString& label, const QStringList& choices) {
    auto* box = new QComboBox(workload_tab);
    box->addItems(choices);
    box->setMaximumWidth(160);
    workload_fields_.insert(key, box);
    workload_form->addRow(label, box);
    connect(box, &QComboBox::activated, this,
            [this, box, key, path_of](int) { edit_workload(path_of(key), box->currentText()); });
  };
  auto add_switch = [&](const QString& key, const QString& label) {
    auto* box = new QCheckBox(label, workload_tab);
    workload_fields_.insert(key, box);
    workload_form->addRow(QString(), box);
    connect(box, &QCheckBox::clicked, this, [this, key, path_of](bool on) {
      edit_workload(path_of(key), on ? QStringLiteral("true") : QStringLiteral("false"));
    });
  };
  add_line(QStringLiteral("model.shape.layers"), tr("Layers"));
  add_line(QStringLiteral("model.shape.hidden"), tr("Hidden size"));
  add_line(QStringLiteral("model.shape.heads"), tr("Attention heads"));
  add_line(QStringLiteral("model.shape.kv_heads"), tr("Key/value heads"));
  add_line(QStringLiteral("model.shape.ffn"), tr("FFN size"));
  add_line(QStringLiteral("model.shape.vocab"), tr("Vocabulary"));
  add_line(QStringLiteral("training.seq_len"), tr("Sequence length"));
  add_line(QStringLiteral("training.global_batch"), tr("Global batch (sequences)"));
  add_line(QStringLiteral("training.micro_batch"), tr("Micro-batch (sequences)"));
  add_choice(QStringLiteral("training.dtype"), tr("Data type"),
             {QStringLiteral("fp32"), QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("fp8")});
  add_choice(QStringLiteral("training.recompute"), tr("Recompute"),
             {QStringLiteral("none"), QStringLiteral("selective"), QStringLiteral("full")});
  add_choice(QStringLiteral("training.zero_stage"), tr("ZeRO stage"),
             {QStringLiteral("0"), QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3")});
  {
    QStringList names;
    for (const std::string_view name : kCrossEntropyFusionNames)
      names.append(QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size())));
    add_choice(QStringLiteral("training.cross_entropy_fusion"), tr("Cross-entropy kernel"), names);
  }
  workload_fields_.value(QStringLiteral("training.cross_entropy_fusion"))
      ->setToolTip(tr("none: Megatron's loss on an fp32 copy of the logits; native: the same, "
                      "jit-fused; te: Transformer Engine's, in the logits' type, its gradient "
                      "written over them"));
  add_switch(QStringLiteral("training.sequence_parallel"), tr("Sequence parallelism"));
  add_switch(QStringLiteral("training.flash_attention"), tr("Fused (flash) attention"));
  add_switch(QStringLiteral("training.overlap.grad_reduce"), tr("Overlap the gradient reduce-scatter with backward"));
  add_switch(QStringLiteral("training.overlap.param_gather"), tr("Overlap the weight all-gather with the next forward"));
  add_switch(QStringLiteral("training.overlap.tp_comm"), tr("Overlap tensor-parallel communication (MC2 on Ascend)"));
  add_switch(QStringLiteral("training.overlap.ep_comm"),
             tr("Overlap expert-parallel all-to-alls with the other micro-batch"));
  // Operators the framework runs as PyTorch's reference operators (training.unfused, a list;
  // docs/models/compute.md#unfused): a switch each, enabled when the model has the operator.
  auto add_unfused = [&](unsigned bit, const QString& label) {
    const std::string_view name = kUnfusedNames[std::countr_zero(bit)];
    auto* box = new QCheckBox(label, workload_tab);
    workload_fields_.insert(
        QStringLiteral("training.unfused.") +
            QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size())),
        box);
    workload_form->addRow(QString(), box);
    connect(box, &QCheckBox::clicked, this, [this, bit](bool on) {
      if (!scenario_) return;
      const unsigned now = scenario_->workload.training.unfused;
      const unsigned bits = on ? now | bit : now & ~bit;
      std::string list;
      for (unsigned i = 0; i < std::size(kUnfusedNames); ++i) {
        if ((bits & (1u << i)) == 0) continue;
        list += (list.empty() ? "" : ", ") + std::string(kUnfusedNames[i]);
      }
      edit_workload_yaml({std::string("training"), std::string("unfused")}, "[" + list + "]");
    });
  };
  add_unfused(kUnfusedRmsnorm, tr("RMSNorm unfused (PyTorch's reference operators)"));
  add_unfused(kUnfusedSwiglu, tr("SwiGLU unfused (silu and a product)"));
  add_unfused(kUnfusedRope, tr("Rotary embedding unfused (rotate_half, products and a sum)"));
  // A mixture's expert load and dispatch (docs/models/moe.md); enabled for mixtures only.
  add_line(QStringLiteral("training.moe.imbalance"), tr("Busiest expert's load over the mean"));
  add_line(QStringLiteral("training.moe.capacity_factor"), tr("Experts capped at a capacity of"));
  add_switch(QStringLiteral("training.moe.pad_to_capacity"),
             tr("Pad every expert to its capacity"));
  add_choice(QStringLiteral("training.moe.dispatcher"), tr("Token dispatcher"),
             {QStringLiteral("alltoall"), QStringLiteral("flex"), QStringLiteral("gshard")});
  add_switch(QStringLiteral("training.moe.grouped_gemm"), tr("Grouped GEMM for a chip's experts"));
  tabs_->addTab(workload_tab, tr("Workload"));
  islands_->set_field_editor([this](int row, IslandsModel::Column column, const QString& value, QString& error) {
    return edit_island(row, column, value, error);
  });
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
    inputs_edited(tr("islands changed: search again for plans on the changed cluster"));
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
  pipeline_islands_->setEnabled(!busy);
}

MainWindow::~MainWindow() = default;

// The plans shown were made for the inputs as they were: they go (pin one to keep it), and the
// edits wait to be saved.
void MainWindow::inputs_edited(const QString& message) {
  edited_ = true;
  plans_->set_result(nullptr);
  show_plan(nullptr);  // also brings the actions up to date
  show_message(message, false);
}

void MainWindow::update_summary() {
  if (!scenario_) return;
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
}

// The workload tab shows the workload as the scenario now has it.
void MainWindow::refresh_workload_form() {
  if (!scenario_) return;
  const Workload& w = scenario_->workload;
  const ModelShape& m = w.model;
  const bool inline_shape = w.model_file.empty();
  // Paths as the workload file writes them: relative to its folder.
  const std::filesystem::path folder = std::filesystem::path(w.location.file).parent_path();
  const QString workload_file = QString::fromStdString(std::filesystem::path(w.location.file).filename().string());
  model_label_->setText(
      inline_shape ? tr("%1: written inline in %2").arg(QString::fromStdString(w.name), workload_file)
                   : tr("%1: from the Hugging Face config %2 (edit that file to change the model)")
                         .arg(QString::fromStdString(w.name),
                              QString::fromStdString(std::filesystem::path(w.model_file).lexically_relative(folder).generic_string())));
  auto set_line = [&](const char* key, long long value, bool enabled) {
    auto* edit = qobject_cast<QLineEdit*>(workload_fields_.value(QString::fromLatin1(key)));
    if (!edit) return;
    const QSignalBlocker block(edit);
    edit->setText(QString::number(value));
    edit->setModified(false);
    edit->setEnabled(enabled);
  };
  // What the estimator reads from the model: a mixture of experts or latent attention is named,
  // so that a user sees their config was understood as the model it is.
  QStringList structure;
  const double total = m.total_parameters();
  const double active = m.active_parameters();
  structure << (m.moe() ? tr("%1 B parameters, %2 B active per token")
                              .arg(total / 1e9, 0, 'f', 2)
                              .arg(active / 1e9, 0, 'f', 2)
                        : tr("%1 B parameters").arg(total / 1e9, 0, 'f', 2));
  if (m.moe()) {
    QString experts = tr("mixture of experts: %1 routed experts of FFN %2, %3 per token")
                          .arg(m.experts)
                          .arg(m.expert_ffn)
                          .arg(m.experts_per_token);
    if (m.shared_experts > 0)
      experts += tr(", %1 shared of FFN %2").arg(m.shared_experts).arg(m.shared_expert_ffn);
    if (m.dense_layers == 1) experts += tr("; the first layer dense");
    if (m.dense_layers > 1) experts += tr("; the first %1 layers dense").arg(m.dense_layers);
    structure << experts;
  }
  if (m.latent_attention()) {
    structure << tr("latent attention: K/V rank %1, Q rank %2, rotary dimensions %3")
                     .arg(m.kv_lora_rank)
                     .arg(m.q_lora_rank > 0 ? QString::number(m.q_lora_rank) : tr("none"))
                     .arg(m.qk_rope_head_dim);
  }
  if (m.mtp_layers > 0)
    structure << tr("multi-token prediction modules: %1, on the last stage").arg(m.mtp_layers);
  model_structure_->setText(structure.join(QStringLiteral("\n")));
  model_config_button_->setEnabled(!inline_shape);
  model_config_button_->setToolTip(inline_shape ? tr("The workload writes its model inline") : QString());
  set_line("model.shape.layers", m.layers, inline_shape);
  set_line("model.shape.hidden", m.hidden, inline_shape);
  set_line("model.shape.heads", m.heads, inline_shape);
  set_line("model.shape.kv_heads", m.kv_heads, inline_shape);
  set_line("model.shape.ffn", m.ffn, inline_shape);
  set_line("model.shape.vocab", m.vocab, inline_shape);
  const TrainingSettings& t = w.training;
  set_line("training.seq_len", t.seq_len, true);
  set_line("training.global_batch", t.global_batch, true);
  set_line("training.micro_batch", t.micro_batch, true);
  auto set_choice = [&](const char* key, const QString& value) {
    auto* box = qobject_cast<QComboBox*>(workload_fields_.value(QString::fromLatin1(key)));
    if (!box) return;
    const QSignalBlocker block(box);
    box->setCurrentIndex(box->findText(value));
  };
  auto text_of = [](std::string_view word) {
    return QString::fromUtf8(word.data(), static_cast<qsizetype>(word.size()));
  };
  set_choice("training.dtype", text_of(to_string(t.dtype)));
  set_choice("training.recompute", text_of(to_string(t.recompute)));
  set_choice("training.zero_stage", QString::number(t.zero_stage));
  set_choice("training.cross_entropy_fusion",
             text_of(kCrossEntropyFusionNames[static_cast<int>(t.cross_entropy_fusion)]));
  auto set_switch = [&](const char* key, bool on) {
    auto* box = qobject_cast<QCheckBox*>(workload_fields_.value(QString::fromLatin1(key)));
    if (!box) return;
    const QSignalBlocker block(box);
    box->setChecked(on);
  };
  set_switch("training.sequence_parallel", t.sequence_parallel);
  set_switch("training.flash_attention", t.flash_attention);
  set_switch("training.overlap.grad_reduce", t.overlap_grad_reduce);
  set_switch("training.overlap.param_gather", t.overlap_param_gather);
  set_switch("training.overlap.tp_comm", t.overlap_tp_comm);
  set_switch("training.overlap.ep_comm", t.overlap_ep_comm);
  {
    // A switch per operator, enabled when the model has it.
    const QString without[] = {tr("The model's norm is LayerNorm, one native kernel either way"),
                               tr("The model's MLP is not SwiGLU"),
                               tr("The model learns its positions: it has no rotary embedding")};
    const unsigned has = unfusable_operators(m);
    for (std::size_t i = 0; i < std::size(kUnfusedNames); ++i) {
      const unsigned bit = 1u << i;
      const QString key = QStringLiteral("training.unfused.") +
                          QString::fromLatin1(kUnfusedNames[i].data(),
                                              static_cast<qsizetype>(kUnfusedNames[i].size()));
      set_switch(key.toLatin1().constData(), (t.unfused & bit) != 0);
      if (QWidget* field = workload_fields_.value(key)) {
        field->setEnabled((has & bit) != 0);
        field->setToolTip((has & bit) != 0 ? QString() : without[i]);
      }
    }
  }
  // A mixture's settings: unset figures show what the estimate assumes in their place.
  auto set_number = [&](const char* key, double value, const QString& unset) {
    auto* edit = qobject_cast<QLineEdit*>(workload_fields_.value(QString::fromLatin1(key)));
    if (!edit) return;
    const QSignalBlocker block(edit);
    edit->setText(value > 0 ? QString::number(value) : QString());
    edit->setPlaceholderText(unset);
    edit->setModified(false);
  };
  // A dense model has no expert figures to assume: its disabled fields stay blank.
  set_number("training.moe.imbalance", t.expert_imbalance,
             m.moe() ? tr("prior %1").arg(models::kExpertImbalancePrior) : QString());
  set_number("training.moe.capacity_factor", t.moe_capacity_factor,
             m.moe() ? tr("none (dropless)") : QString());
  set_choice("training.moe.dispatcher", text_of(to_string(t.moe_dispatcher)));
  set_switch("training.moe.grouped_gemm", t.grouped_gemm);
  set_switch("training.moe.pad_to_capacity", t.moe_pad_to_capacity);
  for (const char* key :
       {"training.moe.imbalance", "training.moe.capacity_factor", "training.moe.pad_to_capacity",
        "training.moe.dispatcher", "training.moe.grouped_gemm"}) {
    if (QWidget* field = workload_fields_.value(QString::fromLatin1(key))) {
      field->setEnabled(m.moe());
      field->setToolTip(m.moe() ? QString() : tr("The model has no experts"));
    }
  }
}

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
  cluster_text_.reset();
  workload_text_.reset();
  update_summary();
  refresh_workload_form();
  show_simulation(nullptr);
  show_message(tr("opened %1").arg(path), false);
  update_actions();
  return true;
}

void MainWindow::search() {
  if (!scenario_ || runner_->running() || simulation_runner_->running()) return;
  progress_->setRange(0, 0);  // busy until the first report gives the total
  planner::SearchOptions options;
  if (pipeline_islands_->value() > 1) options.max_pipeline_islands = pipeline_islands_->value();
  if (!runner_->start(*scenario_, options)) return;
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

namespace {

// What the loader makes of `text` as the file at `path` (written beside it, so that its relative
// references resolve as the file's do). Its errors name `path`, not the scratch copy.
template <typename Load>
auto load_as(const std::string& path, const std::string& text, Load load) {
  const std::string scratch_path =
      path + ".hetplan-edit-" + std::to_string(QCoreApplication::applicationPid());
  ScratchFile scratch(scratch_path);
  formats::write_file_atomically(scratch_path, text);
  try {
    auto loaded = load(scratch_path);
    std::filesystem::remove(scratch_path);
    return loaded;
  } catch (const std::exception& error) {
    std::filesystem::remove(scratch_path);
    std::string message = error.what();
    for (std::size_t at = message.find(scratch_path); at != std::string::npos;
         at = message.find(scratch_path, at + path.size()))
      message.replace(at, scratch_path.size(), path);
    throw std::runtime_error(message);
  }
}

// A value as the user typed it, as one YAML scalar: plain where YAML reads it as that very text
// (letters, digits and . _ / + -), else double-quoted, so that nothing typed can add keys or
// structure to the file; the loader then checks the value itself.
std::string yaml_scalar(const QString& typed) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_.+-][A-Za-z0-9._/+-]*$"));
  const std::string text = typed.toStdString();  // UTF-8
  return plain.match(typed).hasMatch() ? text : formats::yaml_quoted(text);
}

}  // namespace

std::string MainWindow::cluster_text() const {
  return cluster_text_ ? *cluster_text_ : formats::read_text_file(scenario_->cluster.location.file);
}

QString MainWindow::model_structure() const { return model_structure_->text(); }

std::string MainWindow::workload_text() const {
  return workload_text_ ? *workload_text_ : formats::read_text_file(scenario_->workload.location.file);
}

bool MainWindow::edit_island(int row, IslandsModel::Column column, const QString& value, QString& error) {
  if (!scenario_ || runner_->running() || simulation_runner_->running()) return false;
  const std::string path = scenario_->cluster.location.file;
  try {
    // The counts edited in the table so far, then this edit, in the file's own text.
    const std::string base = cluster_text();
    const Cluster as_written = load_as(path, base, formats::load_cluster);
    std::string text = formats::edit_island_counts(base, as_written, scenario_->cluster);
    const std::size_t index = static_cast<std::size_t>(row);
    const formats::YamlPath island{std::string("islands"), index};
    auto at = [&](const char* key) {
      formats::YamlPath path_of = island;
      path_of.emplace_back(std::string(key));
      return path_of;
    };
    const std::string v = yaml_scalar(value);
    if (column == IslandsModel::kChip) {
      text = formats::set_yaml_value(text, at("chip"), v, path);
    } else if (column == IslandsModel::kZone) {
      text = formats::set_yaml_value(text, at("zone"), v, path);
    } else if (column == IslandsModel::kNics) {
      // "4 x 200 Gbps" (the unit defaults to Gbps)
      static const QRegularExpression nics(
          QStringLiteral("^\\s*(\\d+)\\s*[xX\\x{00D7}*]\\s*([0-9.]+)\\s*([A-Za-z/]*)\\s*$"));
      const QRegularExpressionMatch m = nics.match(value);
      if (!m.hasMatch()) {
        error = QStringLiteral("%1: islands[%2].nics: expected COUNT x SPEED, such as 4 x 200 Gbps, got \"%3\"")
                    .arg(QString::fromStdString(path))
                    .arg(row)
                    .arg(value);
        return false;
      }
      formats::YamlPath count = at("nics"), speed = at("nics");
      count.emplace_back(std::string("count"));
      speed.emplace_back(std::string("speed"));
      const QString unit = m.captured(3).isEmpty() ? QStringLiteral("Gbps") : m.captured(3);
      text = formats::set_yaml_value(text, count, m.captured(1).toStdString(), path);
      text = formats::set_yaml_value(text, speed, (m.captured(2) + QStringLiteral(" ") + unit).toStdString(), path);
    } else {
      return false;
    }
    Cluster edited = load_as(path, text, formats::load_cluster);
    edited.location.file = path;
    for (Island& i : edited.islands) i.location.file = path;
    scenario_->cluster = std::move(edited);
    cluster_text_ = text;
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

bool MainWindow::edit_workload(const formats::YamlPath& key, const QString& value) {
  return edit_workload_yaml(key, yaml_scalar(value));
}

bool MainWindow::edit_workload_yaml(const formats::YamlPath& key, const std::string& yaml) {
  if (!scenario_ || runner_->running() || simulation_runner_->running()) return false;
  const std::string path = scenario_->workload.location.file;
  QWidget* field = workload_fields_.value(QString::fromStdString(formats::to_string(key)));
  try {
    const std::string text = formats::set_yaml_value(workload_text(), key, yaml, path);
    Workload edited = load_as(path, text, formats::load_workload);
    edited.location.file = path;
    scenario_->workload = std::move(edited);
    workload_text_ = text;
  } catch (const std::exception& e) {
    const QString message = QStringLiteral("error: ") + QString::fromStdString(e.what());
    show_message(message, true);
    refresh_workload_form();  // the field shows the value the scenario keeps
    if (field) {
      field->setToolTip(message);
      field->setStyleSheet(QStringLiteral("border: 2px solid #b00020"));
    }
    return false;
  }
  if (field) {
    field->setToolTip(QString());
    field->setStyleSheet(QString());
  }
  refresh_workload_form();
  update_summary();
  inputs_edited(tr("workload changed: search again for plans of the changed workload"));
  return true;
}

bool MainWindow::use_model_config(const QString& path) {
  if (!scenario_ || scenario_->workload.model_file.empty()) return false;
  const std::filesystem::path folder = std::filesystem::path(scenario_->workload.location.file).parent_path();
  const std::string relative = std::filesystem::absolute(path.toStdString())
                                   .lexically_normal()
                                   .lexically_relative(std::filesystem::absolute(folder).lexically_normal())
                                   .generic_string();
  return edit_workload({std::string("model"), std::string("hf_config")}, QString::fromStdString(relative));
}

bool MainWindow::save_edits() {
  if (!scenario_ || !edited_ || runner_->running() || simulation_runner_->running()) return false;
  const std::string cluster_path = scenario_->cluster.location.file;
  const std::string workload_path = scenario_->workload.location.file;
  QStringList saved;
  try {
    // Everything is checked before anything is written.
    const std::string base = cluster_text();
    const Cluster as_written = load_as(cluster_path, base, formats::load_cluster);
    const std::string cluster = formats::edit_island_counts(base, as_written, scenario_->cluster);
    const Cluster back = load_as(cluster_path, cluster, formats::load_cluster);
    for (const Island& island : scenario_->cluster.islands) {
      const Island* read = back.find_island(island.name);
      const int free = island.free_nodes < 0 ? island.nodes : island.free_nodes;
      if (!read || read->nodes != island.nodes || read->free_nodes != free)
        throw std::runtime_error(cluster_path + ": the edited file does not read back as edited (island " +
                                 island.name + ")");
    }
    if (workload_text_) (void)load_as(workload_path, *workload_text_, formats::load_workload);
    if (cluster != formats::read_text_file(cluster_path)) {
      formats::write_file_atomically(cluster_path, cluster);
      saved << QString::fromStdString(cluster_path);
    }
    if (workload_text_ && *workload_text_ != formats::read_text_file(workload_path)) {
      formats::write_file_atomically(workload_path, *workload_text_);
      saved << QString::fromStdString(workload_path);
    }
    Scenario reloaded = formats::load_scenario(scenario_path_.toStdString());
    scenario_ = std::move(reloaded);
    islands_->set_cluster(&scenario_->cluster);
  } catch (const std::exception& error) {
    show_message(QStringLiteral("error: ") + QString::fromStdString(error.what()), true);
    return false;
  }
  cluster_text_.reset();
  workload_text_.reset();
  edited_ = false;
  refresh_workload_form();
  update_actions();
  show_message(saved.isEmpty() ? tr("nothing to save: the files already say this")
                               : tr("saved %1").arg(saved.join(QStringLiteral(", "))),
               false);
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
    show_message(tr("error: the islands or the workload were edited here; save them first "
                    "(exports name the files a plan was made from)"),
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
  if (result->max_pipeline_islands > 0)
    text += tr("; task-level pipelines span at most %1 islands").arg(result->max_pipeline_islands);
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
  // Beside them, where the cluster declares gradient paths: the best replica groups on
  // different islands (one job, data parallelism across chip types; no cost is priced).
  std::optional<planner::RankedPlan> groups;
  if (!result.mixed_data_parallel.empty()) {
    const planner::MixedDataParallelPlan& mixed = result.mixed_data_parallel.front();
    groups.emplace();
    groups->tokens_per_s = mixed.step.tokens_per_s;
    groups->chips = mixed.step.chips;
    groups->software_stacks = mixed.software_stacks;
    names << tr("replica groups");
    states.push_back(&*groups);
  }
  auto one = [&](QChartView* view, const QString& title, const QString& label,
                 const std::function<std::optional<double>(const planner::RankedPlan&)>& figure) {
    auto* set = new QBarSet(label);
    bool any = false;
    double top = 0;
    for (const planner::RankedPlan* state : states) {
      const std::optional<double> value = state ? figure(*state) : std::nullopt;
      *set << value.value_or(0.0);
      any = any || value.has_value();
      top = std::max(top, value.value_or(0.0));
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
    x->setRange(0, top > 0 ? top : 1);  // an empty range has no nice numbers
    if (top > 0) x->applyNiceNumbers();
    x->setLabelsVisible(top > 0);  // no figures, no scale to read
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
    for (std::size_t i = 0; i < plan->estimate.stages.size(); ++i) {
      const sim::StageEstimate& s = plan->estimate.stages[i];
      DiagramStage d;
      d.island = QString::fromStdString(s.island);
      for (const ChipProfile& chip : scenario_->cluster.chips)
        if (chip.id == s.chip) d.vendor = QString::fromStdString(chip.vendor);
      d.first_layer = s.first_layer;
      d.num_layers = s.num_layers;
      d.tp = s.tp;
      d.dp = s.dp;
      if (i < plan->plan.stages.size()) d.ep = plan->plan.stages[i].ep;
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
  // How sure: the 80% intervals and the evidence behind them (docs/models/uncertainty.md).
  const QString level = PlansModel::evidence_text(e.evidence);
  if (e.step_band) {
    const sim::Interval step = sim::scaled_interval(e.step_time_s, *e.step_band);
    const sim::Interval tokens = sim::rate_interval(e.tokens_per_s, *e.step_band);
    const sim::Interval mfu = sim::rate_interval(e.mfu, *e.step_band);
    html += tr("<p>80% interval: step %1 - %2 s, %3 - %4 tokens/s, MFU %5 - %6 %; evidence: %7 "
               "(%8)</p>")
                .arg(seconds(step.low), seconds(step.high))
                .arg(tokens.low, 0, 'f', 0)
                .arg(tokens.high, 0, 'f', 0)
                .arg(100 * mfu.low, 0, 'f', 1)
                .arg(100 * mfu.high, 0, 'f', 1)
                .arg(level, QString::fromStdString(e.weakest_chip).toHtmlEscaped());
  } else {
    html += tr("<p>80% interval unknown: the profile of %1 states no evidence band; evidence: "
               "%2</p>")
                .arg(QString::fromStdString(e.weakest_chip).toHtmlEscaped(), level);
  }
  if (e.memory_tight()) {
    html += tr("<p><b>Memory tight</b>: a stage's 80% memory interval reaches past what a "
               "process can allocate.</p>");
  }
  html += tr("<p>compute %1 s (bottleneck stage), bubble %2 s, optimizer %3 s<br>"
             "exposed communication: tensor-parallel %4 s, pipeline %5 s, cross-island %6 s, "
             "data-parallel %7 s</p>")
              .arg(seconds(e.compute_s), seconds(e.bubble_s), seconds(e.optimizer_s),
                   seconds(e.exposed.tensor_parallel), seconds(e.exposed.pipeline),
                   seconds(e.exposed.cross_island), seconds(e.exposed.data_parallel));
  if (e.exposed.expert_parallel > 0) {
    html += tr("<p>expert-parallel all-to-all %1 s (exposed)</p>").arg(seconds(e.exposed.expert_parallel));
  }
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
    *optimizer << (s.memory.optimizer + s.memory.optimizer_step_extra()) / kGiB;
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
  simulation_ = std::move(simulation);
  save_trace_->setEnabled(simulation_ != nullptr);
  if (!simulation_) {
    simulation_text_->clear();
    timeline_->set_timeline(nullptr);
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
  // A row of name, seconds and percent.
  auto row = [&](const QString& name, double s, double percent) {
    return QStringLiteral("<tr><td>%1</td><td align=right>%2 s</td><td align=right>%3 %</td></tr>")
        .arg(name.toHtmlEscaped(), seconds(s))
        .arg(percent, 0, 'f', 1);
  };
  html += QStringLiteral("<table cellspacing=0 cellpadding=2>");
  const std::pair<QString, double> parts[] = {
      {tr("compute"), b.compute_s},           {tr("tensor parallel"), b.tensor_parallel_s},
      {tr("pipeline sends"), b.pipeline_s},   {tr("cross-island sends"), b.cross_island_s},
      {tr("data parallel (exposed)"), b.data_parallel_s},
      {tr("expert-parallel all-to-all"), b.expert_parallel_s}, {tr("pipeline bubble"), b.bubble_s},
      {tr("stragglers"), b.stragglers_s},     {tr("optimizer", "the optimizer step"), b.optimizer_s}};
  for (const auto& [name, value] : parts)
    html += row(name, value, r.step_time_s > 0 ? 100 * value / r.step_time_s : 0.0);
  html += QStringLiteral("</table>");
  html += tr("<p>most loaded links (time at full rate during the step):</p>");
  if (r.links.empty()) html += tr("<p>none: no traffic left the chips' nodes</p>");
  html += QStringLiteral("<table cellspacing=0 cellpadding=2>");
  for (const auto& link : r.links)
    html += row(QString::fromStdString(link.name), link.busy_s, 100 * link.utilization);
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
  // Shared with the simulation (an alias of its pointer): nothing copied on the GUI thread.
  timeline_->set_timeline(std::shared_ptr<const TimelineData>(simulation_, &simulation_->timeline));
  show_tab(2);
  show_message(tr("simulated plan %1: step %2 s").arg(QString::fromStdString(r.plan), seconds(r.step_time_s)),
               false);
  emit simulation_done();
}

}  // namespace hetplan::gui
