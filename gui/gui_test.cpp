// The main window driven as a person would, headless (QT_QPA_PLATFORM=offscreen): open the
// default scenario, edit an island, search to the end and compare the table with the planner's
// own result, cancel a long search, open a broken scenario. The models pass Qt's model tester.
#include <QAbstractBarSeries>
#include <QAbstractItemDelegate>
#include <QAbstractItemModelTester>
#include <QAction>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStackedBarSeries>
#include <QStyleOptionViewItem>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTextLayout>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "gui/export_dialog.hpp"
#include "gui/main_window.hpp"
#include "gui/pipeline_diagram.hpp"
#include "gui/translation.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "sim/twin/json.hpp"
#include "sim/twin/runner.hpp"

namespace hetplan::gui {

const QString kSource = QStringLiteral(HETPLAN_SOURCE_DIR);
const QString kDefault = kSource + QStringLiteral("/scenarios/default.yaml");
const QString kCli = QStringLiteral(HETPLAN_CLI);

// A 10 ms timer on the GUI thread from construction to stop(): that it fires while the work
// runs shows the GUI thread's event loop was not held by it; its worst gap, the latency a user
// sees, is printed, not asserted (a shared machine's load decides it, not the code).
class GapProbe {
 public:
  GapProbe() {
    tick_.setInterval(10);
    QObject::connect(&tick_, &QTimer::timeout, [this] {
      const qint64 now = clock_.elapsed();
      worst_ = std::max(worst_, now - last_);
      last_ = now;
      ++ticks_;
    });
    clock_.start();
    tick_.start();
  }
  void stop() {
    tick_.stop();
    elapsed_ = clock_.elapsed();
  }
  qint64 worst() const { return worst_; }
  qint64 elapsed() const { return elapsed_; }
  qint64 ticks() const { return ticks_; }

 private:
  QElapsedTimer clock_;
  QTimer tick_;
  qint64 last_ = 0, worst_ = 0, elapsed_ = 0, ticks_ = 0;
};

// The bundled scenarios, topologies, workloads, plans and profiles, copied into `site` (tests that
// save edit the copies).
void copy_bundled_data(const QTemporaryDir& site) {
  for (const char* folder : {"scenarios", "topologies", "workloads", "plans", "profiles"}) {
    std::filesystem::copy((kSource + QStringLiteral("/") + QString::fromLatin1(folder)).toStdString(),
                          site.filePath(QString::fromLatin1(folder)).toStdString(),
                          std::filesystem::copy_options::recursive);
  }
}

QByteArray file_bytes(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void opensTheDefaultScenarioAndItsModelsPassTheTester() {
    MainWindow window;
    QAbstractItemModelTester islands_tester(window.islands_model());
    QAbstractItemModelTester plans_tester(window.plans_model());
    QVERIFY(window.open_scenario(kDefault));
    QCOMPARE(window.islands_model()->rowCount(), 3);
    QCOMPARE(window.islands_model()->index(0, IslandsModel::kName).data().toString(),
             QStringLiteral("ascend-910b"));
    QCOMPARE(window.islands_model()->index(0, IslandsModel::kNodes).data().toInt(), 32);
  }

  // Changing an island's nodes in the table changes the scenario the search sees; a value the
  // loader would refuse is refused with its words and changes nothing.
  void anEditedNodeCountReachesTheSearch() {
    MainWindow window;
    QVERIFY(window.open_scenario(kDefault));
    IslandsModel* model = window.islands_model();
    const QModelIndex nodes = model->index(1, IslandsModel::kNodes);
    QVERIFY(model->setData(nodes, QStringLiteral("8")));
    QCOMPARE(window.scenario()->cluster.islands[1].nodes, 8);
    QCOMPARE(window.scenario()->cluster.islands[1].free_nodes, 8);
    QVERIFY(!model->setData(nodes, QStringLiteral("zero")));
    QCOMPARE(window.scenario()->cluster.islands[1].nodes, 8);
    QCOMPARE(window.message(), QStringLiteral(
        "error: islands[1].nodes: expected an integer from 1 to 100000, got \"zero\""));

    QSignalSpy done(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(done.wait(300000));
    Scenario edited = formats::load_scenario(kDefault.toStdString());
    edited.cluster.islands[1].nodes = 8;
    edited.cluster.islands[1].free_nodes = 8;
    const planner::SearchResult expected = planner::search_plans(edited);
    expect_rows(window, expected);
  }

  // The pipeline-island cap in the tool bar reaches the search as `hetplan plan
  // --max-pipeline-islands 2` does: the default cluster's best task-level plan spans its three
  // islands, capped it spans two; the rows are the planner's own under the cap, the status line
  // says the search ran capped, and the box is locked while the search runs.
  void aPipelineIslandCapReachesTheSearch() {
    MainWindow window;
    QVERIFY(window.open_scenario(kDefault));
    QSpinBox* cap = window.pipeline_islands_box();
    QCOMPARE(cap->value(), 1);
    QCOMPARE(cap->text(), QStringLiteral("all"));
    cap->setValue(2);
    QSignalSpy done(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(!cap->isEnabled());
    QVERIFY(done.wait(300000));
    QVERIFY(cap->isEnabled());
    planner::SearchOptions options;
    options.max_pipeline_islands = 2;
    const planner::SearchResult expected =
        planner::search_plans(formats::load_scenario(kDefault.toStdString()), options);
    QVERIFY(expected.task_level.has_value());
    std::set<std::string> islands;
    for (const auto& stage : expected.task_level->plan.stages) islands.insert(stage.island);
    QCOMPARE(islands.size(), std::size_t{2});
    expect_rows(window, expected);
    QVERIFY2(
        window.message().contains(QStringLiteral("task-level pipelines span at most 2 islands")),
        qPrintable(window.message()));
  }

  // The search runs off the GUI thread: the table ends with the planner's own ranking, and a
  // timer on the GUI thread keeps firing meanwhile (its worst gap is the latency a user sees).
  void searchesInTheBackgroundAndShowsThePlannersRanking() {
    MainWindow window;
    window.show();
    QVERIFY(window.open_scenario(kDefault));
    QSignalSpy done(&window, &MainWindow::search_done);
    QSignalSpy progress(window.runner(), &SearchRunner::progress);
    GapProbe probe;
    window.search();
    QVERIFY(!window.search_action()->isEnabled());
    QVERIFY(done.wait(300000));
    probe.stop();
    QVERIFY(progress.count() >= 2);
    qInfo("GUI thread: worst timer gap %lld ms during a search of %lld ms", probe.worst(), probe.elapsed());
    // The timer kept firing and the progress reached the table while the search ran: the GUI
    // thread's event loop was free (a search on it would hold the loop until the end).
    QVERIFY2(probe.ticks() >= 2, qPrintable(QStringLiteral("%1 ticks").arg(probe.ticks())));
    const planner::SearchResult expected = planner::search_plans(formats::load_scenario(kDefault.toStdString()));
    expect_rows(window, expected);
    // The table says what `hetplan plan --json` says of the same scenario, row by row.
    QProcess cli;
    cli.start(kCli, {QStringLiteral("plan"), kDefault, QStringLiteral("--json")});
    QVERIFY(cli.waitForFinished(300000));
    QCOMPARE(cli.exitCode(), 0);
    const auto report = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
    const auto& ranked = report["ranked"];
    QCOMPARE(window.plans_model()->rowCount(), static_cast<int>(ranked.size()));
    for (int row = 0; row < window.plans_model()->rowCount(); ++row) {
      const auto& want = ranked[static_cast<std::size_t>(row)];
      const planner::RankedPlan* shown = window.plans_model()->plan_at(row);
      QCOMPARE(QString::fromStdString(std::string(planner::to_string(shown->mode))),
               QString::fromStdString(want["mode"].get<std::string>()));
      QCOMPARE(shown->chips, want["chips"].get<int>());
      if (want.contains("name")) QCOMPARE(shown->plan.name, want["name"].get<std::string>());
      const double tokens = want["tokens_per_s"].get<double>();  // six significant figures
      QVERIFY2(std::abs(shown->tokens_per_s - tokens) <= 5e-6 * tokens,
               qPrintable(QStringLiteral("row %1: %2 vs %3").arg(row).arg(shown->tokens_per_s).arg(tokens)));
    }
    // The three states side by side: tokens/s, chips, cost, software stacks of each.
    const auto charts = window.state_charts();
    QCOMPARE(charts.size(), std::size_t{4});
    auto bars = [](QChartView* view) {
      auto* series = qobject_cast<QAbstractBarSeries*>(view->chart()->series().value(0));
      return series && !series->barSets().isEmpty() ? series->barSets().front() : nullptr;
    };
    QBarSet* tokens = bars(charts[0]);
    QBarSet* chips = bars(charts[1]);
    QBarSet* stacks = bars(charts[3]);
    QVERIFY(tokens && chips && stacks);
    const std::size_t islands = expected.islands.size();
    // The default cluster declares a gradient path: the best replica groups come after them.
    QVERIFY(!expected.mixed_data_parallel.empty());
    QCOMPARE(tokens->count(), static_cast<int>(islands + 3));
    QCOMPARE(tokens->at(static_cast<int>(islands) + 2),
             expected.mixed_data_parallel.front().step.tokens_per_s);
    QCOMPARE(chips->at(static_cast<int>(islands) + 2),
             static_cast<double>(expected.mixed_data_parallel.front().step.chips));
    QCOMPARE(stacks->at(static_cast<int>(islands) + 2),
             static_cast<double>(expected.mixed_data_parallel.front().software_stacks));
    for (std::size_t i = 0; i < islands; ++i) {
      const auto& best = expected.islands[i].best;
      QCOMPARE(tokens->at(static_cast<int>(i)), best ? best->tokens_per_s : 0.0);
      QCOMPARE(chips->at(static_cast<int>(i)), best ? static_cast<double>(best->chips) : 0.0);
    }
    QVERIFY(expected.resource_pool && expected.task_level);
    QCOMPARE(tokens->at(static_cast<int>(islands)), expected.resource_pool->tokens_per_s);
    QCOMPARE(tokens->at(static_cast<int>(islands) + 1), expected.task_level->tokens_per_s);
    QCOMPARE(stacks->at(static_cast<int>(islands) + 1), static_cast<double>(expected.task_level->software_stacks));
    QVERIFY(window.message().startsWith(QStringLiteral("searched ")));
    QVERIFY(window.search_action()->isEnabled());
    // Beside the three states: the rejected candidates of each pass, with their counts.
    QVERIFY(!expected.passes.empty());
    for (const auto& pass : expected.passes) {
      const QRegularExpression row(QRegularExpression::escape(QString::fromStdString(pass.name)) +
                                   QStringLiteral("\\s+") + QString::number(pass.rejected) +
                                   QStringLiteral("\\b"));
      QVERIFY2(window.why_text().contains(row), qPrintable(QString::fromStdString(pass.name) + QStringLiteral(" in ") + window.why_text()));
    }
    // The filter keeps the rows that mention its text, in any column.
    QAbstractItemModel* shown = window.plans_view()->model();
    window.plans_filter()->setText(QStringLiteral("DCU-K100-tp2"));
    int want = 0;
    for (const auto& plan : expected.ranked)
      want += QString::fromStdString(plan.plan.name).contains(QStringLiteral("dcu-k100-tp2")) ? 1 : 0;
    QVERIFY(want > 0);
    QCOMPARE(shown->rowCount(), want);
    for (int row = 0; row < shown->rowCount(); ++row)
      QVERIFY(shown->index(row, PlansModel::kPlan).data().toString().contains(QStringLiteral("dcu-k100-tp2")));
    window.plans_filter()->clear();
    QCOMPARE(shown->rowCount(), static_cast<int>(expected.ranked.size()));
  }

  // Cancel stops a long search (six chip types, seconds of work) within a second, with the
  // best plans found until then.
  void cancelStopsALongSearchWithinASecond() {
    MainWindow window;
    QVERIFY(window.open_scenario(kSource + QStringLiteral("/scenarios/six-vendors.yaml")));
    QSignalSpy progress(window.runner(), &SearchRunner::progress);
    QSignalSpy done(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(progress.wait(60000));
    cancel_within_a_second(window, done, "search");
    if (QTest::currentTestFailed()) return;
    QVERIFY(window.message().contains(QStringLiteral("stopped early (stopped on request)")));
  }

  // After a search the detail tab shows the best one-job plan: its stages as `hetplan eval`
  // lists them and each stage's memory by part, stacked, beside what a process can use.
  void theBestPlansStagesAndMemoryAreShown() {
    MainWindow window;
    QVERIFY(window.open_scenario(kDefault));
    QSignalSpy done(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(done.wait(300000));
    const planner::SearchResult expected =
        planner::search_plans(formats::load_scenario(kDefault.toStdString()));
    const planner::RankedPlan* best = planner::best_job(expected);
    QVERIFY(best && window.detailed_plan());
    QCOMPARE(window.detailed_plan()->plan.name, best->plan.name);
    const sim::Estimate& e = best->estimate;
    QAbstractItemModel* stages = window.stages_view()->model();
    QAbstractItemModelTester tester(stages);
    QCOMPARE(stages->rowCount(), static_cast<int>(e.stages.size()));
    QCOMPARE(stages->index(0, StagesModel::kIsland).data().toString(),
             QString::fromStdString(e.stages[0].island));
    QCOMPARE(stages->index(0, StagesModel::kLayers).data().toString(),
             QStringLiteral("0-%1").arg(e.stages[0].num_layers - 1));
    // The pipeline diagram: every stage in order, a boundary wherever the island changes.
    const PipelineDiagram* diagram = window.pipeline_diagram();
    QCOMPARE(diagram->stages().size(), e.stages.size());
    int changes = 0;
    for (std::size_t i = 0; i < e.stages.size(); ++i) {
      QCOMPARE(diagram->stages()[i].island, QString::fromStdString(best->plan.stages[i].island));
      QCOMPARE(diagram->stages()[i].tp, best->plan.stages[i].tp);
      if (i + 1 < e.stages.size() && best->plan.stages[i].island != best->plan.stages[i + 1].island) ++changes;
    }
    QVERIFY(changes > 0);  // the default scenario's best one-job plan spans islands
    QCOMPARE(diagram->boundaries_drawn(), changes);
    QVERIFY(!diagram->stages().front().vendor.isEmpty());
    const auto series = window.memory_chart()->chart()->series();
    QCOMPARE(series.size(), 2);
    auto* bars = qobject_cast<QStackedBarSeries*>(series[0]);
    QVERIFY(bars);
    QCOMPARE(bars->count(), 5);  // weights, gradients, optimizer, activations, buffers
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    for (std::size_t i = 0; i < e.stages.size(); ++i) {
      double sum = 0;
      for (QBarSet* set : bars->barSets()) sum += set->at(static_cast<int>(i));
      QVERIFY(std::abs(sum - e.stages[i].memory.total() / kGiB) < 1e-9 * sum + 1e-12);
    }
  }

  // The workload tab says what the model is: a dense LLaMA-70B is its parameters only; the
  // bundled DeepSeek-V2-Lite is named a mixture of experts with its dense first layer and its
  // latent attention, with its total and active parameters (computed from its config).
  void workloadTabNamesTheMixtureAndTheLatentAttention() {
    MainWindow window;
    QVERIFY(window.open_scenario(kDefault));
    QVERIFY2(!window.model_structure().contains(QStringLiteral("mixture")),
             qPrintable(window.model_structure()));
    QVERIFY(window.model_structure().contains(QStringLiteral("B parameters")));
    const QString deepseek = kSource + QStringLiteral("/scenarios/deepseek-v2-lite-mixed.yaml");
    QVERIFY(window.open_scenario(deepseek));
    const QString text = window.model_structure();
    const ModelShape& m = formats::load_scenario(deepseek.toStdString()).workload.model;
    QVERIFY2(text.contains(QStringLiteral("mixture of experts: %1 routed experts").arg(m.experts)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("%1 per token").arg(m.experts_per_token)), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("the first layer dense")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("latent attention: K/V rank %1").arg(m.kv_lora_rank)),
             qPrintable(text));
    QVERIFY2(text.contains(QString::number(m.total_parameters() / 1e9, 'f', 2)), qPrintable(text));
    QVERIFY2(text.contains(QString::number(m.active_parameters() / 1e9, 'f', 2)), qPrintable(text));
  }

  // A mixture-of-experts plan: the best plan of the bundled Mixtral scenario uses expert
  // parallelism, and its simulated timeline shows the all-to-alls in their own colour, named in
  // the legend (`hetplan-gui --screenshot DIR scenarios/mixtral-mixed.yaml` shows it).
  void showsTheExpertParallelAllToAllsOnTheTimeline() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(window.open_scenario(kSource + QStringLiteral("/scenarios/mixtral-mixed.yaml")));
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.detailed_plan());
    bool expert_parallel = false;
    for (const auto& stage : window.detailed_plan()->plan.stages) expert_parallel |= stage.ep > 1;
    QVERIFY2(expert_parallel, window.detailed_plan()->plan.name.c_str());
    // The pipeline diagram gives each stage its expert parallelism.
    const auto& stages = window.detailed_plan()->plan.stages;
    QCOMPARE(window.pipeline_diagram()->stages().size(), stages.size());
    for (std::size_t i = 0; i < stages.size(); ++i)
      QCOMPARE(window.pipeline_diagram()->stages()[i].ep, stages[i].ep);
    QSignalSpy simulated(&window, &MainWindow::simulation_done);
    window.simulate_action()->trigger();
    QVERIFY(simulated.wait(300000));
    QVERIFY2(window.simulation(), qPrintable(window.message()));
    std::size_t all_to_alls = 0;
    for (const auto& track : window.timeline_view()->timeline().tracks)
      for (const auto& event : track.events) all_to_alls += event.kind == EventKind::expert_parallel;
    QVERIFY(all_to_alls > 0);
    for (EventKind other : {EventKind::forward, EventKind::backward, EventKind::send, EventKind::wait,
                            EventKind::data_parallel, EventKind::optimizer, EventKind::other})
      QVERIFY(timeline_colour(EventKind::expert_parallel) != timeline_colour(other));
  }

  // Simulate the best plan: the twin runs off the GUI thread (a timer keeps firing), and the
  // window shows what `hetplan simulate --json` says of the same plan; its timeline ends at the
  // simulated step, and the trace it saves is the CLI's --trace, byte for byte.
  void simulatesThePlanAsTheCliDoes() {
    MainWindow window;
    window.show();
    QVERIFY(window.open_scenario(kDefault));
    QVERIFY(!window.simulate_action()->isEnabled());  // no plan yet
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.detailed_plan());
    QVERIFY(window.simulate_action()->isEnabled());
    QSignalSpy simulated(&window, &MainWindow::simulation_done);
    GapProbe probe;
    window.simulate_action()->trigger();
    QVERIFY(!window.simulate_action()->isEnabled());
    QVERIFY(!window.search_action()->isEnabled());
    QVERIFY(window.cancel_action()->isEnabled());
    QVERIFY(simulated.wait(300000));
    probe.stop();
    qInfo("GUI thread: worst timer gap %lld ms during a simulation of %lld ms", probe.worst(), probe.elapsed());
    QVERIFY2(probe.ticks() >= 2, qPrintable(QStringLiteral("%1 ticks").arg(probe.ticks())));
    QVERIFY2(window.simulation(), qPrintable(window.message()));
    const Simulation& shown = *window.simulation();

    // The CLI on the same plan, written as `hetplan plan --out` writes it.
    QTemporaryDir dir;
    const QString plan_path = dir.filePath(QStringLiteral("plan.yaml"));
    {
      std::ofstream out(plan_path.toStdString());
      out << formats::plan_yaml(window.detailed_plan()->plan, "");
    }
    const QString cli_trace = dir.filePath(QStringLiteral("cli-trace.json"));
    QProcess cli;
    cli.start(kCli, {QStringLiteral("simulate"), kDefault, QStringLiteral("--plan"), plan_path,
                     QStringLiteral("--json"), QStringLiteral("--trace"), cli_trace});
    QVERIFY(cli.waitForFinished(300000));
    QCOMPARE(cli.exitCode(), 0);
    const auto report = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
    QCOMPARE(report["plan"].get<std::string>(), shown.result.plan);
    const double step = report["step_time_s"].get<double>();  // rounded to 6 figures
    QVERIFY2(std::abs(shown.result.step_time_s - step) <= 1e-5 * step,
             qPrintable(QStringLiteral("%1 vs %2").arg(shown.result.step_time_s).arg(step)));
    QVERIFY(std::abs(shown.result.tokens_per_s - report["tokens_per_s"].get<double>()) <=
            1e-5 * shown.result.tokens_per_s);
    QCOMPARE(static_cast<qint64>(shown.result.ranks), report["ranks"].get<qint64>());

    // The timeline: every stage, ending where the step ends.
    const TimelineData& timeline = window.timeline_view()->timeline();
    QVERIFY(std::abs(timeline.end_s - shown.result.step_time_s) <= 1e-6 * shown.result.step_time_s);
    int stages = 0;
    for (const auto& track : timeline.tracks) stages = std::max(stages, track.stage + 1);
    QCOMPARE(stages, static_cast<int>(window.detailed_plan()->plan.stages.size()));
    QVERIFY(window.timeline_view()->visible_tracks() > 0);
    window.timeline_view()->zoom(8);
    QVERIFY(std::abs(window.timeline_view()->view_span_s() - timeline.end_s / 8) < 1e-9 * timeline.end_s);
    window.timeline_view()->zoom_to_fit();
    QCOMPARE(window.timeline_view()->view_span_s(), timeline.end_s);

    // The summary beside the timeline, at the window's own size: each part of the step on one
    // line (a summary squeezed by the timeline's buttons once broke "stragglers" mid-word).
    QTextDocument* summary = window.simulation_summary()->document();
    summary->setTextWidth(window.simulation_summary()->viewport()->width());
    int parts = 0;
    for (QTextBlock block = summary->begin(); block.isValid(); block = block.next()) {
      const QString text = block.text();
      if (text == QStringLiteral("data parallel (exposed)") ||
          text == QStringLiteral("expert-parallel all-to-all") ||
          text == QStringLiteral("stragglers")) {
        ++parts;
        QVERIFY2(
            block.layout()->lineCount() == 1,
            qPrintable(text + QStringLiteral(" on %1 lines").arg(block.layout()->lineCount())));
      }
    }
    QCOMPARE(parts, 3);

    // Save trace: the CLI's trace, byte for byte.
    const QString saved = dir.filePath(QStringLiteral("gui-trace.json"));
    QVERIFY2(window.save_trace(saved), qPrintable(window.message()));
    const QByteArray cli_bytes = file_bytes(cli_trace);
    QVERIFY(!cli_bytes.isEmpty());
    QVERIFY(file_bytes(saved) == cli_bytes);
    // A folder that does not exist: the one-line error, nothing written.
    QVERIFY(!window.save_trace(dir.filePath(QStringLiteral("missing/trace.json"))));
    QVERIFY(window.message().startsWith(QStringLiteral("error: ")));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("missing/trace.json"))));
    QVERIFY(window.search_action()->isEnabled());
  }

  // Cancel stops a simulation of seconds (a 1,024-rank plan of the six-vendor cluster) within a
  // second: the worker is killed and the window says so.
  void cancelStopsASimulationWithinASecond() {
    MainWindow window;
    QVERIFY(window.open_scenario(kSource + QStringLiteral("/scenarios/six-vendors.yaml")));
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.detailed_plan());
    QSignalSpy simulated(&window, &MainWindow::simulation_done);
    QSignalSpy cancelled(window.simulation_runner(), &SimulationRunner::cancelled);
    window.simulate();
    QTest::qWait(300);
    cancel_within_a_second(window, simulated, "simulation");
    if (QTest::currentTestFailed()) return;
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!window.simulation());
    QCOMPARE(window.message(), QStringLiteral("simulation cancelled"));
    QVERIFY(window.simulate_action()->isEnabled());
  }

  // As a person would: change an island's node count, save the cluster, search, export the
  // best plan. An unvalidated plan is refused with the ladder's reasons until the override is
  // ticked; then each target's files equal `hetplan export`'s of the plan file written beside
  // them, byte for byte.
  void editSaveSearchAndExportAsTheCliDoes() {
    QTemporaryDir site;  // a copy of the bundled data: saving edits files
    copy_bundled_data(site);
    const QString scenario = site.filePath(QStringLiteral("scenarios/default.yaml"));
    const QString cluster_file = site.filePath(QStringLiteral("topologies/mixed-roce-64.yaml"));
    MainWindow window;
    QVERIFY(window.open_scenario(scenario));
    QVERIFY(!window.save_action()->isEnabled());
    IslandsModel* islands = window.islands_model();
    QCOMPARE(islands->index(2, IslandsModel::kName).data().toString(), QStringLiteral("mlu370"));
    QVERIFY(islands->setData(islands->index(2, IslandsModel::kNodes), QStringLiteral("24")));
    QVERIFY(window.save_action()->isEnabled());
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.detailed_plan());
    QVERIFY(!window.export_dialog());  // edited and not saved
    QVERIFY(window.message().contains(QStringLiteral("save them first")));
    const QByteArray before = file_bytes(cluster_file);
    QVERIFY2(window.save_edits(), qPrintable(window.message()));
    QVERIFY(!window.save_action()->isEnabled());
    const QByteArray after = file_bytes(cluster_file);
    QCOMPARE(formats::load_cluster(cluster_file.toStdString()).islands[2].nodes, 24);
    // Only the count changed.
    QCOMPARE(QString::fromUtf8(after), QString::fromUtf8(before).replace(
        QStringLiteral("  - name: mlu370\n    chip: cambricon-mlu370-x8\n    nodes: 16\n"),
        QStringLiteral("  - name: mlu370\n    chip: cambricon-mlu370-x8\n    nodes: 24\n")));
    // The search ran on what was saved: the same ranking as the planner's on the saved files.
    expect_rows(window, planner::search_plans(formats::load_scenario(scenario.toStdString())));

    std::unique_ptr<ExportDialog> dialog(window.export_dialog());
    QVERIFY2(dialog, qPrintable(window.message()));
    QVERIFY(!dialog->validated());  // the bundled scenario names no validation records
    QVERIFY(!dialog->override_box()->isHidden());  // offered, as the plan is not validated
    QTemporaryDir out;
    const QStringList targets{QStringLiteral("volcano"), QStringLiteral("json"),
                              QStringLiteral("megatron"), QStringLiteral("labels"),
                              QStringLiteral("kube-scheduler")};
    for (const QString& target : targets) {
      const QString gui_folder = out.filePath(QStringLiteral("gui-") + target);
      const QString cli_folder = out.filePath(QStringLiteral("cli-") + target);
      dialog->target_box()->setCurrentIndex(dialog->target_box()->findData(target));
      dialog->folder_edit()->setText(gui_folder);
      dialog->override_box()->setChecked(false);
      QVERIFY(!dialog->export_now());
      QVERIFY2(dialog->message().startsWith(QStringLiteral("refused: ")), qPrintable(dialog->message()));
      QVERIFY(dialog->message().contains(QStringLiteral("no validation records")));
      QVERIFY(!QDir(gui_folder).exists());  // nothing written
      dialog->override_box()->setChecked(true);
      QVERIFY2(dialog->export_now(), qPrintable(dialog->message()));
      const QString plan_file = QDir(gui_folder).filePath(ExportDialog::plan_file_name(window.detailed_plan()->plan));
      QVERIFY(QFile::exists(plan_file));
      QProcess cli;
      cli.start(kCli, {QStringLiteral("export"), plan_file, QStringLiteral("--to"), target,
                       QStringLiteral("--out"), cli_folder, QStringLiteral("--allow-unvalidated")});
      QVERIFY(cli.waitForFinished(300000));
      QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
      const QStringList cli_files = QDir(cli_folder).entryList(QDir::Files, QDir::Name);
      QStringList gui_files = QDir(gui_folder).entryList(QDir::Files, QDir::Name);
      gui_files.removeAll(ExportDialog::plan_file_name(window.detailed_plan()->plan));
      QCOMPARE(gui_files, cli_files);
      QVERIFY(!cli_files.isEmpty());
      for (const QString& name : cli_files) {
        QVERIFY2(file_bytes(QDir(gui_folder).filePath(name)) == file_bytes(QDir(cli_folder).filePath(name)),
                 qPrintable(target + QStringLiteral(": ") + name));
      }
    }
    // A folder that cannot be made: the one-line error.
    dialog->folder_edit()->setText(QStringLiteral("/proc/hetplan-cannot-write-here"));
    QVERIFY(!dialog->export_now());
    QVERIFY2(dialog->message().startsWith(QStringLiteral("error: ")), qPrintable(dialog->message()));
  }

  // What-if: pin the best plan, give the MLU island twice the nodes, search again; the Compare
  // tab sets the two side by side with what each was planned on, and says which is better.
  void comparesAPinnedPlanWithTheSearchAfterAnEdit() {
    MainWindow window;
    QAbstractItemModelTester tester(window.comparison_model());
    QVERIFY(window.open_scenario(kDefault));
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.pin_action()->isEnabled());
    const planner::RankedPlan before = *window.detailed_plan();
    window.pin_action()->trigger();
    IslandsModel* islands = window.islands_model();
    QVERIFY(islands->setData(islands->index(2, IslandsModel::kNodes), QStringLiteral("32")));
    QVERIFY(!window.detailed_plan());  // the old plans were for the old islands
    window.search();
    QVERIFY(searched.wait(300000));
    Scenario more = formats::load_scenario(kDefault.toStdString());
    more.cluster.islands[2].nodes = 32;
    more.cluster.islands[2].free_nodes = 32;
    const planner::SearchResult expected = planner::search_plans(more);
    const planner::RankedPlan* after = planner::best_job(expected);
    QVERIFY(after && window.detailed_plan());
    QCOMPARE(window.detailed_plan()->plan.name, after->plan.name);

    ComparisonModel* model = window.comparison_model();
    QCOMPARE(model->index(0, ComparisonModel::kPinned).data().toString(), QString::fromStdString(before.plan.name));
    QCOMPARE(model->index(0, ComparisonModel::kCurrent).data().toString(), QString::fromStdString(after->plan.name));
    QVERIFY(model->index(1, ComparisonModel::kPinned).data().toString().contains(QStringLiteral("mlu370 16")));
    QVERIFY(model->index(1, ComparisonModel::kCurrent).data().toString().contains(QStringLiteral("mlu370 32")));
    const auto& rows = model->rows();
    QVERIFY(!rows.empty());
    QCOMPARE(rows[0].name, QStringLiteral("tokens/s"));
    QCOMPARE(*rows[0].pinned, before.tokens_per_s);
    QCOMPARE(*rows[0].current, after->tokens_per_s);
    const int sign = after->tokens_per_s > before.tokens_per_s + 0.5 ? 1 : (after->tokens_per_s < before.tokens_per_s - 0.5 ? -1 : 0);
    QCOMPARE(model->verdict(0), sign);
    bool step_row = false;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].name != QStringLiteral("step time, s")) continue;
      step_row = true;
      QCOMPARE(*rows[r].current, after->estimate.step_time_s);
      const double d = after->estimate.step_time_s - before.estimate.step_time_s;
      QCOMPARE(model->verdict(static_cast<int>(r)), std::abs(d) < 5e-4 ? 0 : (d < 0 ? 1 : -1));
    }
    QVERIFY(step_row);
  }

  // Edit an island's zone and NICs and the training settings, as a person would: a value the
  // loader refuses is refused with its one line (at the field) and changes nothing; the accepted
  // ones reach the search, and Save writes them into the files, only those values changed.
  void editsTheIslandsAndTheWorkloadAndSavesThem() {
    QTemporaryDir site;
    copy_bundled_data(site);
    const QString scenario = site.filePath(QStringLiteral("scenarios/default.yaml"));
    const QString cluster_file = site.filePath(QStringLiteral("topologies/mixed-roce-64.yaml"));
    const QString workload_file = site.filePath(QStringLiteral("workloads/llama-70b-pretrain.yaml"));
    const QString cluster_before = QString::fromUtf8(file_bytes(cluster_file));
    const QString workload_before = QString::fromUtf8(file_bytes(workload_file));
    MainWindow window;
    QVERIFY(window.open_scenario(scenario));
    IslandsModel* islands = window.islands_model();
    QVERIFY(islands->flags(islands->index(2, IslandsModel::kZone)) & Qt::ItemIsEditable);
    // A zone the fabric does not have: the loader's words, nothing changed.
    QVERIFY(!islands->setData(islands->index(2, IslandsModel::kZone), QStringLiteral("zone-q")));
    QVERIFY2(window.message().startsWith(QStringLiteral("error: ") + cluster_file + QStringLiteral(":")),
             qPrintable(window.message()));
    QVERIFY(window.message().contains(QStringLiteral("zone")));
    QVERIFY(!window.message().contains(QStringLiteral("hetplan-edit")));  // names the file, not a scratch copy
    QCOMPARE(window.scenario()->cluster.islands[2].zone, std::string("zone-b"));
    // Text that would add keys stays one value (quoted), which the loader refuses.
    QVERIFY(!islands->setData(islands->index(2, IslandsModel::kZone), QStringLiteral("zone-a\n    nodes: 99")));
    QVERIFY(!islands->setData(islands->index(2, IslandsModel::kZone), QStringLiteral("zone-a, nodes: 99")));
    QVERIFY(!window.edit_workload({std::string("training"), std::string("dtype")}, QStringLiteral("bf16, zero_stage: 3")));
    QCOMPARE(window.scenario()->cluster.islands[2].nodes, 16);
    QCOMPARE(window.scenario()->workload.training.zero_stage, 1);
    QVERIFY(!window.save_action()->isEnabled());
    // The chip is picked from the profiles beside the cluster's; one that does not exist is refused.
    {
      QStyleOptionViewItem option;
      QAbstractItemDelegate* delegate = window.islands_view()->itemDelegateForColumn(IslandsModel::kChip);
      QVERIFY(delegate);
      std::unique_ptr<QWidget> editor(delegate->createEditor(nullptr, option, islands->index(2, IslandsModel::kChip)));
      auto* box = qobject_cast<QComboBox*>(editor.get());
      QVERIFY(box);
      QVERIFY(box->findText(QStringLiteral("cambricon-mlu370-x8")) >= 0);
      QVERIFY(box->findText(QStringLiteral("nvidia-a100-sxm4-80gb")) >= 0);
      delegate->setEditorData(box, islands->index(2, IslandsModel::kChip));
      QCOMPARE(box->currentText(), QStringLiteral("cambricon-mlu370-x8"));
    }
    QVERIFY(!islands->setData(islands->index(2, IslandsModel::kChip), QStringLiteral("no-such-chip")));
    QVERIFY(window.message().contains(QStringLiteral("no such profile")));
    QVERIFY(!window.save_action()->isEnabled());
    // Accepted: the MLU island moves into zone-a with 8 NICs of 100 Gb/s per node.
    QVERIFY2(islands->setData(islands->index(2, IslandsModel::kZone), QStringLiteral("zone-a")),
             qPrintable(window.message()));
    QVERIFY2(islands->setData(islands->index(2, IslandsModel::kNics), QStringLiteral("8 x 100 Gbps")),
             qPrintable(window.message()));
    QVERIFY(!islands->setData(islands->index(2, IslandsModel::kNics), QStringLiteral("many")));
    QCOMPARE(window.scenario()->cluster.islands[2].zone, std::string("zone-a"));
    QCOMPARE(window.scenario()->cluster.islands[2].nic_count, 8);
    QCOMPARE(islands->index(2, IslandsModel::kNics).data().toString(), QStringLiteral("8 x 100 Gbps"));
    QVERIFY(window.save_action()->isEnabled());

    // The training settings: refused and accepted values.
    auto* micro = qobject_cast<QLineEdit*>(window.workload_field(QStringLiteral("training.micro_batch")));
    QVERIFY(micro);
    QCOMPARE(micro->text(), QStringLiteral("1"));
    QVERIFY(!window.edit_workload({std::string("training"), std::string("micro_batch")}, QStringLiteral("0")));
    QVERIFY2(window.message().startsWith(QStringLiteral("error: ") + workload_file + QStringLiteral(":")),
             qPrintable(window.message()));
    QVERIFY(window.message().contains(QStringLiteral("training.micro_batch")));
    QVERIFY(!micro->toolTip().isEmpty());  // the error at the field
    QCOMPARE(window.scenario()->workload.training.micro_batch, 1);
    QVERIFY(window.edit_workload({std::string("training"), std::string("micro_batch")}, QStringLiteral("2")));
    QVERIFY(window.edit_workload({std::string("training"), std::string("overlap"), std::string("param_gather")},
                                 QStringLiteral("true")));
    QCOMPARE(window.scenario()->workload.training.micro_batch, 2);
    QVERIFY(window.scenario()->workload.training.overlap_param_gather);
    QCOMPARE(micro->text(), QStringLiteral("2"));
    auto* gather = qobject_cast<QCheckBox*>(window.workload_field(QStringLiteral("training.overlap.param_gather")));
    QVERIFY(gather && gather->isChecked());
    // The model comes from a Hugging Face config: its fields are shown, not edited here.
    auto* layers = qobject_cast<QLineEdit*>(window.workload_field(QStringLiteral("model.shape.layers")));
    QVERIFY(layers && !layers->isEnabled());
    QCOMPARE(layers->text(), QStringLiteral("80"));
    // Another config.json for the model: it becomes the workload's, written relative to it; one
    // that is not a model config is refused with the loader's line.
    QVERIFY(QDir().mkpath(site.filePath(QStringLiteral("workloads/hf/llama-2-7b"))));
    QVERIFY(QFile::copy(kSource + QStringLiteral("/tests/formats/data/hf/llama-2-7b.json"),
                        site.filePath(QStringLiteral("workloads/hf/llama-2-7b/config.json"))));
    QVERIFY2(window.use_model_config(site.filePath(QStringLiteral("workloads/hf/llama-2-7b/config.json"))),
             qPrintable(window.message()));
    QCOMPARE(window.scenario()->workload.model.layers, 32);
    QCOMPARE(layers->text(), QStringLiteral("32"));
    QVERIFY(!window.use_model_config(cluster_file));
    QVERIFY(window.message().startsWith(QStringLiteral("error: ")));
    QCOMPARE(window.scenario()->workload.model.layers, 32);
    QVERIFY(window.use_model_config(site.filePath(QStringLiteral("workloads/hf/llama-2-70b/config.json"))));
    QCOMPARE(window.scenario()->workload.model.layers, 80);

    // The search uses the edits, before they are saved.
    QSignalSpy searched(&window, &MainWindow::search_done);
    window.search();
    QVERIFY(searched.wait(300000));
    QVERIFY(window.save_edits());
    QVERIFY(!window.save_action()->isEnabled());
    QString cluster_after = cluster_before;
    cluster_after.replace(QStringLiteral("  - name: mlu370\n    chip: cambricon-mlu370-x8\n    nodes: 16\n    nics: {count: 4, speed: 200 Gbps}\n    zone: zone-b\n"),
                          QStringLiteral("  - name: mlu370\n    chip: cambricon-mlu370-x8\n    nodes: 16\n    nics: {count: 8, speed: 100 Gbps}\n    zone: zone-a\n"));
    QVERIFY(cluster_after != cluster_before);
    QCOMPARE(QString::fromUtf8(file_bytes(cluster_file)), cluster_after);
    QString workload_after = workload_before;
    workload_after.replace(QStringLiteral("  micro_batch: 1\n"), QStringLiteral("  micro_batch: 2\n"));

    workload_after.replace(QStringLiteral("  overlap: {grad_reduce: true}"), QStringLiteral("  overlap: {param_gather: true, grad_reduce: true}"));
    QCOMPARE(QString::fromUtf8(file_bytes(workload_file)), workload_after);
    // What was searched is what the saved files say.
    expect_rows(window, planner::search_plans(formats::load_scenario(scenario.toStdString())));
  }

  // A mixture's expert load and dispatch, set in the workload tab as a person would: disabled
  // for a dense model; unset figures show what the estimate assumes; GShard's dispatch without
  // a capacity is refused with the loader's line at the field; accepted values reach the
  // scenario and the file.
  void editsAMixturesExpertSettings() {
    QTemporaryDir site;
    copy_bundled_data(site);
    MainWindow window;
    QVERIFY(window.open_scenario(site.filePath(QStringLiteral("scenarios/default.yaml"))));
    auto* imbalance =
        qobject_cast<QLineEdit*>(window.workload_field(QStringLiteral("training.moe.imbalance")));
    QVERIFY(imbalance && !imbalance->isEnabled());
    QVERIFY(imbalance->placeholderText().isEmpty());  // no prior shown for a dense model
    QVERIFY(window.open_scenario(site.filePath(QStringLiteral("scenarios/mixtral-mixed.yaml"))));
    const QString workload_file =
        site.filePath(QStringLiteral("workloads/mixtral-8x7b-pretrain.yaml"));
    auto* capacity = qobject_cast<QLineEdit*>(
        window.workload_field(QStringLiteral("training.moe.capacity_factor")));
    auto* dispatcher =
        qobject_cast<QComboBox*>(window.workload_field(QStringLiteral("training.moe.dispatcher")));
    auto* grouped = qobject_cast<QCheckBox*>(
        window.workload_field(QStringLiteral("training.moe.grouped_gemm")));
    QVERIFY(capacity && dispatcher && grouped);
    QVERIFY(imbalance->isEnabled() && capacity->isEnabled() && dispatcher->isEnabled());
    QVERIFY(imbalance->text().isEmpty());
    QCOMPARE(imbalance->placeholderText(), QStringLiteral("prior 1.25"));
    QCOMPARE(dispatcher->currentText(), QStringLiteral("alltoall"));
    QVERIFY(grouped->isChecked());
    auto* pad = qobject_cast<QCheckBox*>(
        window.workload_field(QStringLiteral("training.moe.pad_to_capacity")));
    QVERIFY(pad && pad->isEnabled() && pad->isChecked());  // the default: padded
    const std::string moe = "moe";
    QVERIFY(!window.edit_workload({std::string("training"), moe, std::string("dispatcher")},
                                  QStringLiteral("gshard")));
    QVERIFY2(window.message().contains(QStringLiteral("expected capacity_factor beside gshard")),
             qPrintable(window.message()));
    QCOMPARE(dispatcher->currentText(), QStringLiteral("alltoall"));  // what the scenario keeps
    QVERIFY(!dispatcher->toolTip().isEmpty());
    QVERIFY2(window.edit_workload({std::string("training"), moe, std::string("imbalance")},
                                  QStringLiteral("1.4")),
             qPrintable(window.message()));
    QVERIFY2(window.edit_workload({std::string("training"), moe, std::string("capacity_factor")},
                                  QStringLiteral("1.1")),
             qPrintable(window.message()));
    QVERIFY2(window.edit_workload({std::string("training"), moe, std::string("dispatcher")},
                                  QStringLiteral("gshard")),
             qPrintable(window.message()));
    const TrainingSettings& t = window.scenario()->workload.training;
    QCOMPARE(t.expert_imbalance, 1.4);
    QCOMPARE(t.moe_capacity_factor, 1.1);
    QCOMPARE(t.moe_dispatcher, MoeDispatcher::gshard);
    QCOMPARE(imbalance->text(), QStringLiteral("1.4"));
    QCOMPARE(dispatcher->currentText(), QStringLiteral("gshard"));
    QVERIFY(window.save_edits());
    const QString saved = QString::fromUtf8(file_bytes(workload_file));
    QVERIFY2(saved.contains(
                 QStringLiteral("moe: {dispatcher: gshard, capacity_factor: 1.1, imbalance: 1.4, "
                                "grouped_gemm: true}")),
             qPrintable(saved));
  }

  // The loss kernel's choice reaches the scenario the estimate reads and the saved workload
  // (training.cross_entropy_fusion).
  void choosesTheLossKernel() {
    QTemporaryDir site;
    copy_bundled_data(site);
    MainWindow window;
    QVERIFY(window.open_scenario(site.filePath(QStringLiteral("scenarios/default.yaml"))));
    auto* loss = qobject_cast<QComboBox*>(
        window.workload_field(QStringLiteral("training.cross_entropy_fusion")));
    QVERIFY(loss);
    QCOMPARE(loss->currentText(), QStringLiteral("none"));  // Megatron-LM's default
    const int te = loss->findText(QStringLiteral("te"));
    QVERIFY(te >= 0);
    loss->setCurrentIndex(te);
    emit loss->activated(te);
    QVERIFY2(window.scenario()->workload.training.cross_entropy_fusion == CrossEntropyFusion::te,
             qPrintable(window.message()));
    QCOMPARE(loss->currentText(), QStringLiteral("te"));
    QVERIFY(window.save_edits());
    const QString saved = QString::fromUtf8(
        file_bytes(site.filePath(QStringLiteral("workloads/llama-70b-pretrain.yaml"))));
    QVERIFY2(saved.contains(QStringLiteral("cross_entropy_fusion: te")), qPrintable(saved));
  }

  // The unfused switches write the workload's list (training.unfused) as one flow list, a name
  // per switch that is on, and the estimate reads it back.
  void switchesOperatorsUnfused() {
    QTemporaryDir site;
    copy_bundled_data(site);
    MainWindow window;
    QVERIFY(window.open_scenario(site.filePath(QStringLiteral("scenarios/default.yaml"))));
    auto* norm =
        qobject_cast<QCheckBox*>(window.workload_field(QStringLiteral("training.unfused.rmsnorm")));
    auto* swiglu =
        qobject_cast<QCheckBox*>(window.workload_field(QStringLiteral("training.unfused.swiglu")));
    auto* rope =
        qobject_cast<QCheckBox*>(window.workload_field(QStringLiteral("training.unfused.rope")));
    QVERIFY(norm && swiglu && rope);
    QVERIFY(norm->isEnabled() && swiglu->isEnabled() && rope->isEnabled());  // Llama 2
    QVERIFY(!norm->isChecked() && !swiglu->isChecked());
    norm->click();
    QVERIFY2(norm->isChecked(), qPrintable(window.message()));
    QCOMPARE(window.scenario()->workload.training.unfused, kUnfusedRmsnorm);
    swiglu->click();
    QCOMPARE(window.scenario()->workload.training.unfused, kUnfusedRmsnorm | kUnfusedSwiglu);
    rope->click();
    QCOMPARE(window.scenario()->workload.training.unfused,
             kUnfusedRmsnorm | kUnfusedSwiglu | kUnfusedRope);
    rope->click();
    norm->click();
    QCOMPARE(window.scenario()->workload.training.unfused, kUnfusedSwiglu);
    QVERIFY(!norm->isChecked() && swiglu->isChecked());
    QVERIFY(window.save_edits());
    const QString saved = QString::fromUtf8(
        file_bytes(site.filePath(QStringLiteral("workloads/llama-70b-pretrain.yaml"))));
    QVERIFY2(saved.contains(QStringLiteral("unfused: [swiglu]")), qPrintable(saved));
  }

  // The window speaks Simplified Chinese under a zh_CN locale, English elsewhere.
  void theChineseTranslationShipsAndOthersKeepEnglish() {
    QVERIFY(!install_translation(*QCoreApplication::instance(), QLocale(QLocale::French)));
    {
      MainWindow english;
      QCOMPARE(english.search_action()->text(), QStringLiteral("Search plans"));
    }
    QVERIFY(install_translation(*QCoreApplication::instance(),
                                QLocale(QLocale::Chinese, QLocale::China)));
    MainWindow chinese;
    QCOMPARE(chinese.search_action()->text(), QStringLiteral("搜索方案"));
    // Qt's own words too (scripts/install-deps installs Qt's catalogues): a standard button and
    // the file dialog the window opens scenarios with.
    QVERIFY(qt_catalogue_installed(QLocale(QLocale::Chinese, QLocale::China)));
    QDialogButtonBox standard(QDialogButtonBox::Cancel);
    QCOMPARE(standard.button(QDialogButtonBox::Cancel)->text(), QStringLiteral("取消"));
    QCOMPARE(QCoreApplication::translate("QFileDialog", "Look in:"), QStringLiteral("查找范围："));
    QVERIFY(chinese.open_scenario(kDefault));
    QCOMPARE(chinese.islands_model()->headerData(IslandsModel::kName, Qt::Horizontal,
                                                 Qt::DisplayRole).toString(),
             QStringLiteral("计算岛"));
    // Errors keep the loaders' own (English) words, as the CLI prints them.
    QVERIFY(!chinese.islands_model()->setData(chinese.islands_model()->index(0, IslandsModel::kNodes),
                                              QStringLiteral("0")));
    QVERIFY(chinese.message().startsWith(QStringLiteral("error: islands[0].nodes：")));
  }

  // A broken scenario: the CLI's one line, and the window keeps the scenario it had.
  void aBrokenScenarioShowsTheOneLineError() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.yaml"));
    {
      std::ofstream out(path.toStdString());
      out << "schema: hetplan/scenario/v1\nname: broken\ncluster: missing.yaml\n";
    }
    MainWindow window;
    QVERIFY(window.open_scenario(kDefault));
    QVERIFY(!window.open_scenario(path));
    const QString expected = QStringLiteral("error: ") + path +
                             QStringLiteral(":3:10: cluster: ") + dir.path() +
                             QStringLiteral("/missing.yaml: cannot open the file for reading");
    QCOMPARE(window.message(), expected);
    QCOMPARE(window.scenario()->name, std::string("default"));
  }

 private:
  // Triggers Cancel and waits for `done`, which must come within a second.
  static void cancel_within_a_second(MainWindow& window, QSignalSpy& done, const char* what) {
    QVERIFY(window.cancel_action()->isEnabled());
    QElapsedTimer clock;
    clock.start();
    window.cancel_action()->trigger();
    QVERIFY(done.wait(10000));
    qInfo("cancelling the %s took %lld ms", what, clock.elapsed());
    QVERIFY(clock.elapsed() < 1000);
  }

  static void expect_rows(const MainWindow& window, const planner::SearchResult& expected) {
    const PlansModel* plans = window.plans_model();
    QCOMPARE(plans->rowCount(), static_cast<int>(expected.ranked.size()));
    for (int row = 0; row < plans->rowCount(); ++row) {
      const planner::RankedPlan& want = expected.ranked[static_cast<std::size_t>(row)];
      QCOMPARE(plans->plan_at(row)->plan.name, want.plan.name);
      QCOMPARE(plans->plan_at(row)->tokens_per_s, want.tokens_per_s);
      QCOMPARE(plans->index(row, PlansModel::kTokens).data().toString(),
               QString::number(want.tokens_per_s, 'f', 0));
    }
  }
};

}  // namespace hetplan::gui

QTEST_MAIN(hetplan::gui::MainWindowTest)
#include "gui_test.moc"
