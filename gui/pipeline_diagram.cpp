#include "gui/pipeline_diagram.hpp"

#include <QPainter>
#include <QPainterPath>
#include <QResizeEvent>

#include <algorithm>
#include <array>
#include <utility>

namespace hetplan::gui {

QColor vendor_colour(const QString& vendor) {
  const QString v = vendor.toLower();
  if (v.contains(QStringLiteral("huawei"))) return {0xc7, 0x1f, 0x2d};
  if (v.contains(QStringLiteral("hygon"))) return {0x1f, 0x6f, 0xb5};
  if (v.contains(QStringLiteral("cambricon"))) return {0x6a, 0x3d, 0x9a};
  if (v.contains(QStringLiteral("nvidia"))) return {0x5e, 0x9a, 0x00};
  if (v.contains(QStringLiteral("metax"))) return {0xd9, 0x76, 0x1c};
  if (v.contains(QStringLiteral("iluvatar"))) return {0x00, 0x8b, 0x8b};
  if (v.contains(QStringLiteral("biren"))) return {0x8c, 0x56, 0x4b};
  if (v.contains(QStringLiteral("moore"))) return {0xb8, 0x86, 0x0b};
  static constexpr std::array<QRgb, 6> kPalette = {0x4c78a8, 0xf58518, 0x54a24b,
                                                   0xb279a2, 0x9d755d, 0x72b7b2};
  std::size_t hash = 0;
  for (QChar c : v) hash = hash * 31 + c.unicode();  // stable across runs, unlike qHash
  return QColor::fromRgb(kPalette[hash % kPalette.size()]);
}

PipelineDiagram::PipelineDiagram(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void PipelineDiagram::set_stages(std::vector<DiagramStage> stages) {
  stages_ = std::move(stages);
  // Splitters do not ask for a height for the width: every row is kept in sight this way.
  setMinimumHeight(heightForWidth(width()));
  updateGeometry();
  update();
}

void PipelineDiagram::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  setMinimumHeight(heightForWidth(width()));
}

int PipelineDiagram::boundaries_drawn() const {
  int n = 0;
  for (std::size_t i = 0; i + 1 < stages_.size(); ++i) n += stages_[i].cross_island_boundary ? 1 : 0;
  return n;
}

int PipelineDiagram::per_row(int width) const {
  return std::max(1, (width - 2 * kMargin + kGap) / (kBoxWidth + kGap));
}

int PipelineDiagram::heightForWidth(int width) const {
  if (stages_.empty()) return 0;
  const int rows = (static_cast<int>(stages_.size()) + per_row(width) - 1) / per_row(width);
  return 2 * kMargin + rows * kBoxHeight + (rows - 1) * kGap;
}

QSize PipelineDiagram::sizeHint() const {
  const int width = 2 * kMargin + 4 * kBoxWidth + 3 * kGap;
  return {width, heightForWidth(width)};
}

void PipelineDiagram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const int n = per_row(width());
  auto box = [&](std::size_t i) {
    const int row = static_cast<int>(i) / n;
    const int col = static_cast<int>(i) % n;
    return QRect(kMargin + col * (kBoxWidth + kGap), kMargin + row * (kBoxHeight + kGap),
                 kBoxWidth, kBoxHeight);
  };
  const QColor cross = palette().text().color();
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const DiagramStage& s = stages_[i];
    const QRect r = box(i);
    const QColor fill = vendor_colour(s.vendor);
    p.setPen(s.fits ? QPen(fill.darker(140), 1) : QPen(palette().text().color(), 3, Qt::DashLine));
    p.setBrush(fill.lighter(165));
    p.drawRoundedRect(r, 6, 6);
    p.fillRect(QRect(r.left() + 1, r.top() + 1, 6, r.height() - 2), fill);
    p.setPen(palette().text().color());
    const QRect inside = r.adjusted(12, 3, -4, -3);
    const QStringList lines{s.island,
                            tr("stage %1, layers %2-%3")
                                .arg(i)
                                .arg(s.first_layer)
                                .arg(s.first_layer + s.num_layers - 1),
                            (s.ep > 1 ? tr("tp %1 x dp %2, ep %3").arg(s.tp).arg(s.dp).arg(s.ep)
                                      : tr("tp %1 x dp %2").arg(s.tp).arg(s.dp)) +
                                (s.fits ? QString() : tr(", does not fit"))};
    const int line_height = inside.height() / 3;
    for (int k = 0; k < 3; ++k) {
      QFont font = p.font();
      font.setBold(k == 0);
      p.setFont(font);
      p.drawText(QRect(inside.left(), inside.top() + k * line_height, inside.width(), line_height),
                 Qt::AlignLeft | Qt::AlignVCenter,
                 p.fontMetrics().elidedText(lines[k], Qt::ElideRight, inside.width()));
    }
    QFont plain = p.font();
    plain.setBold(false);
    p.setFont(plain);
    if (i + 1 == stages_.size()) continue;
    // The arrow to the next stage: along the row, or down to the next row's first box.
    const QRect next = box(i + 1);
    const bool crosses = s.cross_island_boundary;
    p.setPen(QPen(crosses ? cross : palette().mid().color(), crosses ? 3 : 1.5));
    QPainterPath path;
    QPointF tip;
    QPointF from;
    if (next.top() == r.top()) {
      from = QPointF(r.right() + 2, r.center().y());
      tip = QPointF(next.left() - 2, next.center().y());
      path.moveTo(from);
      path.lineTo(tip);
    } else {
      from = QPointF(r.center().x(), r.bottom() + 2);
      const double mid = r.bottom() + kGap / 2.0;
      tip = QPointF(next.center().x(), next.top() - 2);
      path.moveTo(from);
      path.lineTo(from.x(), mid);
      path.lineTo(tip.x(), mid);
      path.lineTo(tip);
    }
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    const QPointF back = path.pointAtPercent(0.97);
    QLineF head(tip, back);
    head.setLength(7);
    QLineF left = head, right = head;
    left.setAngle(head.angle() + 28);
    right.setAngle(head.angle() - 28);
    p.drawLine(left);
    p.drawLine(right);
  }
}

}  // namespace hetplan::gui
