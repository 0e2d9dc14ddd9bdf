#include "gui/simulation_runner.hpp"

#include <QMetaObject>
#include <QPointer>

#include <exception>
#include <filesystem>

#include "sim/estimator.hpp"
#include "sim/goodput.hpp"
#include "sim/twin/runner.hpp"

namespace hetplan::gui {

std::string twin_worker() {
  const std::filesystem::path beside = sim::twin::worker_beside_this_executable();
  if (std::filesystem::exists(beside)) return beside.string();
  const std::filesystem::path built = beside.parent_path().parent_path() / "cli" / "hetplan-twin";
  if (std::filesystem::exists(built)) return built.string();
  return beside.string();  // run_workers names it when it cannot start
}

SimulationRunner::SimulationRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const Simulation>>();
}

SimulationRunner::~SimulationRunner() {
  cancel();
  join();
}

void SimulationRunner::join() {
  if (thread_.joinable()) thread_.join();
}

bool SimulationRunner::start(const Scenario& scenario, const Plan& plan) {
  if (running()) return false;
  join();
  if (!scratch_ || !scratch_->isValid()) scratch_ = std::make_unique<QTemporaryDir>();
  if (!scratch_->isValid()) {
    emit failed(tr("error: no scratch folder for the simulation's trace: %1").arg(scratch_->errorString()));
    return false;
  }
  const std::string trace = scratch_->filePath(QStringLiteral("trace-%1.json").arg(++count_)).toStdString();
  stop_ = std::stop_source();
  finished_ = false;
  QPointer<SimulationRunner> self(this);
  thread_ = std::thread([this, self, scenario, plan, trace, stop = stop_.get_token()] {
    std::shared_ptr<Simulation> simulation;
    QString error;
    bool was_cancelled = false;
    try {
      // As `hetplan simulate` does: the analytic estimate (the plan must be able to run), the
      // scenario's variability, one worker process.
      const sim::Estimate estimate = sim::estimate_step(scenario.cluster, scenario.workload, plan);
      if (!estimate.feasible) {
        std::string why;
        for (const auto& reason : estimate.reasons) why += (why.empty() ? "" : "; ") + reason;
        throw std::runtime_error("plan " + plan.name + " cannot run: " + why);
      }
      sim::TwinOptions options = sim::twin_options(scenario);
      options.trace_path = trace;
      const sim::TwinInput input =
          sim::make_twin_input(scenario.cluster, scenario.workload, plan, estimate, options);
      const auto problems = sim::check_twin_input(input);
      if (!problems.empty())
        throw std::runtime_error("plan " + plan.name + " cannot be simulated: " + problems.front());
      const auto outcomes = sim::twin::run_workers({input}, {twin_worker()}, 1, stop);
      const auto& outcome = outcomes.front();
      if (outcome.cancelled) {
        was_cancelled = true;
      } else if (!outcome.result) {
        throw std::runtime_error(outcome.error);
      } else {
        simulation = std::make_shared<Simulation>();
        static_cast<sim::SimulatedStep&>(*simulation) =
            sim::simulated_step(scenario, plan, estimate, input, *outcome.result);
        simulation->timeline = read_timeline(trace);
        simulation->trace_path = trace;
      }
    } catch (const std::exception& e) {
      error = QStringLiteral("error: ") + QString::fromStdString(e.what());
    }
    if (!simulation) std::filesystem::remove(trace);
    QMetaObject::invokeMethod(
        this,
        [self, simulation, error, was_cancelled] {
          if (!self) return;
          self->finished_ = true;
          if (simulation) {
            // The window shows only the latest simulation: the trace before it can go.
            if (!self->shown_trace_.empty()) std::filesystem::remove(self->shown_trace_);
            self->shown_trace_ = simulation->trace_path;
            emit self->finished(simulation);
          }
          else if (was_cancelled)
            emit self->cancelled();
          else
            emit self->failed(error);
        },
        Qt::QueuedConnection);
  });
  return true;
}

void SimulationRunner::cancel() { stop_.request_stop(); }

}  // namespace hetplan::gui
