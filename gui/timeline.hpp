// A simulated step's timeline, read from the Chrome trace the twin writes (sim/twin/trace.hpp),
// and the zoomable view that draws it: one track per stage replica (its tensor-parallel ranks
// share their events, so the first rank stands for them) and one per stage for its gradient
// synchronisation, each event a bar coloured by what it is.
#pragma once

#include <QAbstractScrollArea>
#include <QColor>
#include <QString>

#include <memory>
#include <string>
#include <vector>

namespace hetplan::gui {

enum class EventKind { forward, backward, send, wait, data_parallel, expert_parallel, optimizer, other };

// The colour of a kind of event in the view (and in its legend).
QColor timeline_colour(EventKind kind);

struct TimelineEvent {
  double start_s = 0;
  double end_s = 0;
  EventKind kind = EventKind::other;
  QString name;  // as the trace names it: "forward mb3", "reduce-scatter", ...
};

struct TimelineTrack {
  QString name;  // "stage 0 dp 1 (ascend-910b)" or "stage 0 gradient sync"
  int stage = 0;
  int replica = -1;  // the data-parallel replica; -1: the stage's gradient synchronisation
  std::vector<TimelineEvent> events;  // by start
};

struct TimelineData {
  std::vector<TimelineTrack> tracks;  // by stage, replicas before the stage's sync track
  double end_s = 0;                   // the last event's end: the simulated step
};

// Reads a trace the twin wrote. Throws std::runtime_error naming the file when it cannot be
// read or is not such a trace.
TimelineData read_timeline(const std::string& trace_path);

// Draws a TimelineData. The wheel scrolls the tracks, Ctrl+wheel zooms around the pointer, a
// drag pans the time axis; a bar's tooltip names the event, its start and its duration.
class TimelineView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // Shows the whole step of a timeline the view shares (no copy on the GUI thread); null clears.
  void set_timeline(std::shared_ptr<const TimelineData> timeline);
  const TimelineData& timeline() const { return timeline_ ? *timeline_ : empty_; }
  // Every replica of each stage, or (the default) its first replica and its gradient sync.
  void set_every_replica(bool every);
  int visible_tracks() const { return static_cast<int>(rows_.size()); }
  void zoom(double factor);  // > 1 zooms in, around the middle of the view
  void zoom_to_fit();
  // The time window shown, in seconds from the step's start.
  double view_start_s() const { return start_s_; }
  double view_span_s() const { return span_s_; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  bool viewportEvent(QEvent* event) override;

 private:
  static constexpr int kLabelWidth = 230;
  static constexpr int kAxisHeight = 24;
  static constexpr int kRowHeight = 18;
  int plot_width() const;
  double seconds_at(int x) const;  // x in viewport coordinates
  int x_of(double seconds) const;
  void zoom_around(double factor, double anchor_s);
  void clamp_and_sync();
  const TimelineEvent* event_at(const QPoint& point) const;

  void choose_rows();

  std::shared_ptr<const TimelineData> timeline_;
  TimelineData empty_;
  std::vector<std::size_t> rows_;  // the tracks shown, in order
  bool every_replica_ = false;
  double start_s_ = 0;
  double span_s_ = 1;
  int first_row_ = 0;
  int drag_x_ = -1;
  double drag_start_s_ = 0;
  bool syncing_ = false;
};

}  // namespace hetplan::gui
