#include "gui/search_runner.hpp"

#include <QMetaObject>
#include <QPointer>

#include <algorithm>
#include <exception>

namespace hetplan::gui {
namespace {

// Called on the search's thread; hands each progress report to the GUI thread.
class QueuedObserver : public planner::SearchObserver {
 public:
  explicit QueuedObserver(SearchRunner* runner) : runner_(runner) {}
  void on_progress(const planner::SearchProgress& p) override {
    const QString phase = QString::fromUtf8(p.phase.data(), static_cast<qsizetype>(p.phase.size()));
    QMetaObject::invokeMethod(
        runner_,
        [runner = runner_, p, phase] {
          if (runner)
            emit runner->progress(p.settings_done, p.settings_total, p.evaluations, p.pruned,
                                  phase);
        },
        Qt::QueuedConnection);
  }

 private:
  QPointer<SearchRunner> runner_;
};

}  // namespace

SearchRunner::SearchRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const planner::SearchResult>>();
}

SearchRunner::~SearchRunner() {
  cancel();
  join();
}

void SearchRunner::join() {
  if (thread_.joinable()) thread_.join();
}

bool SearchRunner::start(const Scenario& scenario, planner::SearchOptions options) {
  if (running()) return false;
  join();
  stop_ = std::make_unique<planner::StopToken>();
  finished_ = false;
  options.stop = stop_.get();
  // Unless told otherwise, the search leaves one core to the GUI thread (the result is the same
  // for any thread count).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (options.threads == 0) options.threads = cores > 1 ? cores - 1 : 1;
  QPointer<SearchRunner> self(this);
  thread_ = std::thread([this, self, scenario, options]() mutable {
    QueuedObserver observer(this);
    options.observer = &observer;
    std::shared_ptr<const planner::SearchResult> result;
    QString error;
    try {
      result = std::make_shared<const planner::SearchResult>(
          planner::search_plans(scenario, options));
    } catch (const std::exception& e) {
      error = QString::fromStdString(std::string("error: ") + e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [self, result, error] {
          if (!self) return;
          self->finished_ = true;
          if (result)
            emit self->finished(result);
          else
            emit self->failed(error);
        },
        Qt::QueuedConnection);
  });
  return true;
}

void SearchRunner::cancel() {
  if (stop_) stop_->request_stop();
}

}  // namespace hetplan::gui
