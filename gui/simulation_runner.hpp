// Simulates one plan's step with the digital twin off the GUI thread: the twin runs in its worker
// process (sim/twin/runner.hpp, as `hetplan simulate` runs it) and writes its Chrome trace to a
// scratch folder, which this class reads back as the timeline. Cancel kills the worker. One
// simulation at a time.
#pragma once

#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "gui/timeline.hpp"
#include "sim/goodput.hpp"
#include "sim/twin_input.hpp"

namespace hetplan::gui {

// What `hetplan simulate` reports (sim::SimulatedStep), and the step's timeline.
struct Simulation : sim::SimulatedStep {
  TimelineData timeline;
  // The trace as the twin wrote it, for Perfetto: in the runner's scratch folder, until the next
  // simulation finishes.
  std::string trace_path;
};

// The worker executable: beside this one (installed, and the CLI's folder), else in the build
// tree's cli/ folder beside gui/.
std::string twin_worker();

class SimulationRunner : public QObject {
  Q_OBJECT

 public:
  explicit SimulationRunner(QObject* parent = nullptr);
  ~SimulationRunner() override;  // cancels a running simulation and waits for its thread

  // Starts simulating the plan on a copy of the scenario; false (and nothing started) while
  // one runs.
  bool start(const Scenario& scenario, const Plan& plan);
  void cancel();
  bool running() const { return thread_.joinable() && !finished_; }

 signals:
  void finished(std::shared_ptr<const hetplan::gui::Simulation> simulation);
  void cancelled();
  // Why it could not run: the plan cannot run, the input was refused, the worker failed.
  void failed(const QString& message);

 private:
  void join();
  std::thread thread_;
  std::stop_source stop_;
  std::unique_ptr<QTemporaryDir> scratch_;  // the traces, one file per simulation
  int count_ = 0;
  std::string shown_trace_;  // the last finished simulation's; removed when the next finishes
  bool finished_ = true;
};

}  // namespace hetplan::gui

Q_DECLARE_METATYPE(std::shared_ptr<const hetplan::gui::Simulation>)
