// Runs the plan search off the GUI thread. The planner's observer and stop token are plain C++
// (planner/progress.hpp); this class turns the observer's calls into queued Qt signals on the
// GUI thread and the Cancel button into a stop request. One search at a time.
#pragma once

#include <QObject>
#include <QString>

#include <memory>
#include <thread>

#include "core/scenario.hpp"
#include "planner/search.hpp"

namespace hetplan::gui {

class SearchRunner : public QObject {
  Q_OBJECT

 public:
  explicit SearchRunner(QObject* parent = nullptr);
  ~SearchRunner() override;  // stops a running search and waits for its thread

  // Starts searching a copy of the scenario; false (and nothing started) while one runs.
  bool start(const Scenario& scenario, planner::SearchOptions options = {});
  void cancel();
  bool running() const { return thread_.joinable() && !finished_; }

 signals:
  void progress(qulonglong settings_done, qulonglong settings_total, qulonglong evaluations,
                qulonglong pruned, const QString& phase);
  // The result (stopped early when cancelled: SearchResult::stopped says so).
  void finished(std::shared_ptr<const hetplan::planner::SearchResult> result);
  // An error the search threw (an InputError's one line, as the CLI prints it).
  void failed(const QString& message);

 private:
  void join();
  std::thread thread_;
  std::unique_ptr<planner::StopToken> stop_;
  bool finished_ = true;
};

}  // namespace hetplan::gui
