#include "gui/timeline.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace hetplan::gui {
namespace {

EventKind kind_of(const std::string& category, const std::string& name) {
  if (category == "compute") return name.rfind("backward", 0) == 0 ? EventKind::backward : EventKind::forward;
  if (category == "pipeline") return EventKind::send;
  if (category == "wait") return EventKind::wait;
  if (category == "data-parallel") return EventKind::data_parallel;
  if (category == "expert-parallel") return EventKind::expert_parallel;
  if (category == "optimizer") return EventKind::optimizer;
  return EventKind::other;
}

}  // namespace

QColor timeline_colour(EventKind kind) {
  switch (kind) {
    case EventKind::forward: return {0x4c, 0x78, 0xa8};
    case EventKind::backward: return {0x1f, 0x3d, 0x6b};
    case EventKind::send: return {0xf5, 0x85, 0x18};
    case EventKind::wait: return {0xd0, 0xd0, 0xd0};
    case EventKind::data_parallel: return {0x54, 0xa2, 0x4b};
    case EventKind::expert_parallel: return {0x2a, 0x9d, 0x8f};
    case EventKind::optimizer: return {0xb2, 0x79, 0xa2};
    case EventKind::other: break;
  }
  return {0x9d, 0x75, 0x5d};
}

namespace {

QString duration_text(double seconds) {
  if (seconds == 0) return QStringLiteral("0 s");
  if (seconds >= 1) return QString::number(seconds, 'f', 3) + QStringLiteral(" s");
  if (seconds >= 1e-3) return QString::number(seconds * 1e3, 'f', 3) + QStringLiteral(" ms");
  return QString::number(seconds * 1e6, 'f', 1) + QStringLiteral(" µs");
}

// A tick step of 1, 2 or 5 times a power of ten giving about `wanted` ticks over `span`.
double tick_step(double span, int wanted) {
  const double raw = span / std::max(1, wanted);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

}  // namespace

TimelineData read_timeline(const std::string& trace_path) {
  std::ifstream file(trace_path, std::ios::binary);
  if (!file) throw std::runtime_error(trace_path + ": cannot read the simulated step's trace");
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(file);
  } catch (const std::exception& e) {
    throw std::runtime_error(trace_path + ": not a trace: " + e.what());
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw std::runtime_error(trace_path + ": not a trace: no traceEvents");

  // Tracks to keep: (pid, tid) of the first tensor-parallel rank of each stage replica, and each
  // stage's gradient synchronisation.
  std::map<long long, std::string> islands;  // pid -> "ascend-910b"
  std::map<std::pair<long long, long long>, std::size_t> kept;
  TimelineData data;
  std::vector<std::pair<long long, long long>> keys;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "M") continue;
    const long long pid = e.value("pid", 0LL);
    const std::string name = e.value("/args/name"_json_pointer, std::string());
    if (e.value("name", "") == "process_name") {
      const auto open = name.find('(');
      islands[pid] = open == std::string::npos ? name : name.substr(open + 1, name.size() - open - 2);
    } else if (e.value("name", "") == "thread_name") {
      const long long tid = e.value("tid", 0LL);
      TimelineTrack track;
      track.stage = static_cast<int>(pid - 1);
      if (name.find(" tp 0 ") != std::string::npos) {
        // "rank 8 dp 1 tp 0 ascend-910b/n1/c0"
        const auto dp = name.find(" dp ");
        const auto tp = name.find(" tp ");
        const std::string replica = name.substr(dp + 4, tp - dp - 4);
        track.replica = std::atoi(replica.c_str());
        track.name = TimelineView::tr("stage %1 dp %2").arg(track.stage).arg(track.replica);
      } else if (name.find("gradient sync") != std::string::npos) {
        track.name = TimelineView::tr("stage %1 gradient sync").arg(track.stage);
      } else {
        continue;
      }
      kept[{pid, tid}] = data.tracks.size();
      keys.push_back({pid, tid});
      data.tracks.push_back(std::move(track));
    }
  }
  for (std::size_t i = 0; i < data.tracks.size(); ++i) {
    auto island = islands.find(keys[i].first);
    if (island != islands.end() && data.tracks[i].replica >= 0)
      data.tracks[i].name += QStringLiteral(" (%1)").arg(QString::fromStdString(island->second));
  }
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const auto track = kept.find({e.value("pid", 0LL), e.value("tid", 0LL)});
    if (track == kept.end()) continue;
    TimelineEvent event;
    event.start_s = e.value("ts", 0.0) * 1e-6;
    event.end_s = event.start_s + e.value("dur", 0.0) * 1e-6;
    const std::string name = e.value("name", "");
    event.kind = kind_of(e.value("cat", ""), name);
    event.name = QString::fromStdString(name);
    data.end_s = std::max(data.end_s, event.end_s);
    data.tracks[track->second].events.push_back(std::move(event));
  }
  // Stage by stage, its replicas first and then its gradient sync (the trace's order).
  std::stable_sort(data.tracks.begin(), data.tracks.end(),
                   [](const TimelineTrack& a, const TimelineTrack& b) { return a.stage < b.stage; });
  for (auto& track : data.tracks) {
    std::stable_sort(track.events.begin(), track.events.end(),
                     [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_s < b.start_s; });
  }
  return data;
}

TimelineView::TimelineView(QWidget* parent) : QAbstractScrollArea(parent) {
  setMouseTracking(true);
  viewport()->setMouseTracking(true);
  setMinimumHeight(kAxisHeight + 6 * kRowHeight);
  horizontalScrollBar()->setSingleStep(20);
  verticalScrollBar()->setSingleStep(1);
}

void TimelineView::set_timeline(std::shared_ptr<const TimelineData> timeline) {
  timeline_ = std::move(timeline);
  first_row_ = 0;
  choose_rows();
  zoom_to_fit();
}

void TimelineView::set_every_replica(bool every) {
  every_replica_ = every;
  choose_rows();
  clamp_and_sync();
}

void TimelineView::choose_rows() {
  rows_.clear();
  for (std::size_t i = 0; i < timeline().tracks.size(); ++i)
    if (every_replica_ || timeline().tracks[i].replica <= 0) rows_.push_back(i);
}

int TimelineView::plot_width() const { return std::max(1, viewport()->width() - kLabelWidth); }

double TimelineView::seconds_at(int x) const {
  return start_s_ + (x - kLabelWidth) * span_s_ / plot_width();
}

int TimelineView::x_of(double seconds) const {
  return kLabelWidth + static_cast<int>(std::lround((seconds - start_s_) / span_s_ * plot_width()));
}

void TimelineView::zoom_to_fit() {
  start_s_ = 0;
  span_s_ = timeline().end_s > 0 ? timeline().end_s : 1;
  clamp_and_sync();
}

void TimelineView::zoom(double factor) { zoom_around(factor, start_s_ + span_s_ / 2); }

void TimelineView::zoom_around(double factor, double anchor_s) {
  if (!(factor > 0)) return;
  const double full = timeline().end_s > 0 ? timeline().end_s : 1;
  const double span = std::clamp(span_s_ / factor, full * 1e-7, full);
  start_s_ = anchor_s - (anchor_s - start_s_) * span / span_s_;
  span_s_ = span;
  clamp_and_sync();
}

// Keeps the window inside the step and the scroll bars in step with it (the horizontal bar
// counts thousandths of the window's width).
void TimelineView::clamp_and_sync() {
  const double full = timeline().end_s > 0 ? timeline().end_s : 1;
  span_s_ = std::min(span_s_, full);
  start_s_ = std::clamp(start_s_, 0.0, full - span_s_);
  syncing_ = true;
  const double per_unit = span_s_ / 1000;
  horizontalScrollBar()->setRange(0, static_cast<int>(std::lround((full - span_s_) / per_unit)));
  horizontalScrollBar()->setPageStep(1000);
  horizontalScrollBar()->setValue(static_cast<int>(std::lround(start_s_ / per_unit)));
  const int rows = std::max(1, (viewport()->height() - kAxisHeight) / kRowHeight);
  const int tracks = static_cast<int>(rows_.size());
  verticalScrollBar()->setRange(0, std::max(0, tracks - rows));
  verticalScrollBar()->setPageStep(rows);
  first_row_ = std::clamp(first_row_, 0, std::max(0, tracks - rows));
  verticalScrollBar()->setValue(first_row_);
  syncing_ = false;
  viewport()->update();
}

void TimelineView::scrollContentsBy(int, int) {
  if (syncing_) return;
  start_s_ = horizontalScrollBar()->value() * span_s_ / 1000;
  first_row_ = verticalScrollBar()->value();
  viewport()->update();
}

void TimelineView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  clamp_and_sync();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & Qt::ControlModifier) {
    const double x = event->position().x();
    const double anchor = x >= kLabelWidth ? seconds_at(static_cast<int>(x)) : start_s_ + span_s_ / 2;
    zoom_around(std::pow(1.25, steps), anchor);
  } else {
    first_row_ -= static_cast<int>(std::lround(steps * 3));
    clamp_and_sync();
  }
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  drag_x_ = static_cast<int>(event->position().x());
  drag_start_s_ = start_s_;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton) || drag_x_ < 0) return;
  const int dx = static_cast<int>(event->position().x()) - drag_x_;
  start_s_ = drag_start_s_ - dx * span_s_ / plot_width();
  clamp_and_sync();
}

const TimelineEvent* TimelineView::event_at(const QPoint& point) const {
  if (point.x() < kLabelWidth || point.y() < kAxisHeight) return nullptr;
  const std::size_t row = static_cast<std::size_t>(first_row_ + (point.y() - kAxisHeight) / kRowHeight);
  if (row >= rows_.size()) return nullptr;
  const double t = seconds_at(point.x());
  const double slack = 2 * span_s_ / plot_width();  // bars drawn at least two pixels wide
  const auto& events = timeline().tracks[rows_[row]].events;
  auto it = std::upper_bound(events.begin(), events.end(), t + slack,
                             [](double s, const TimelineEvent& e) { return s < e.start_s; });
  while (it != events.begin()) {
    --it;
    if (it->end_s + slack >= t) return &*it;
  }
  return nullptr;
}

bool TimelineView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const TimelineEvent* e = event_at(help->pos())) {
      QToolTip::showText(help->globalPos(), tr("%1\nstarts at %2, lasts %3")
                                                .arg(e->name, duration_text(e->start_s),
                                                     duration_text(e->end_s - e->start_s)));
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QAbstractScrollArea::viewportEvent(event);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  p.fillRect(viewport()->rect(), palette().base());
  const int width = viewport()->width();
  const int height = viewport()->height();
  // The time axis.
  p.setPen(palette().text().color());
  const double step = tick_step(span_s_, std::max(2, plot_width() / 110));
  for (double t = std::ceil(start_s_ / step) * step; t <= start_s_ + span_s_ + step / 2; t += step) {
    const int x = x_of(t);
    if (x < kLabelWidth || x > width) continue;
    p.setPen(palette().mid().color());
    p.drawLine(x, kAxisHeight - 4, x, height);
    p.setPen(palette().text().color());
    p.drawText(x + 3, kAxisHeight - 8, duration_text(t));
  }
  // The tracks.
  const auto rows = static_cast<std::size_t>(std::max(0, (height - kAxisHeight) / kRowHeight + 1));
  const double end = start_s_ + span_s_;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t index = static_cast<std::size_t>(first_row_) + r;
    if (index >= rows_.size()) break;
    const TimelineTrack& track = timeline().tracks[rows_[index]];
    const int y = kAxisHeight + static_cast<int>(r) * kRowHeight;
    if (index % 2 == 1) p.fillRect(0, y, width, kRowHeight, palette().alternateBase());
    p.setPen(palette().text().color());
    p.drawText(QRect(4, y, kLabelWidth - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(track.name, Qt::ElideRight, kLabelWidth - 8));
    p.setClipRect(kLabelWidth, y, width - kLabelWidth, kRowHeight);
    int last_x = -1;  // bars inside one pixel column are drawn once
    for (const TimelineEvent& e : track.events) {
      if (e.start_s > end) break;
      if (e.end_s < start_s_) continue;
      const int x0 = x_of(e.start_s);
      const int x1 = std::max(x0 + 1, x_of(e.end_s));
      if (x1 <= last_x) continue;
      p.fillRect(QRect(std::max(x0, last_x), y + 2, x1 - std::max(x0, last_x), kRowHeight - 4),
                 timeline_colour(e.kind));
      last_x = x1;
    }
    p.setClipping(false);
  }
}

}  // namespace hetplan::gui
